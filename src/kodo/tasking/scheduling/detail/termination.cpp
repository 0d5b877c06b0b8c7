// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/scheduling/detail/termination.hpp>

#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/core/error.hpp>

#include <algorithm>
#include <limits>
#include <vector>

namespace kodo::detail {
namespace {

using Detector = TerminationDetector;
constexpr int kFields = Detector::kFields, kValues = Detector::kWaveValues;

// A count as a rank meant it: a report at or above 2^63 is read as negative.
constexpr std::uint64_t kBelowZero = std::uint64_t{1} << 63;
constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();

// No honest count reaches 2^63 (nor a sum of them): a value there stays saturated.
std::uint64_t saturating_sum(std::uint64_t a, std::uint64_t b) {
  return a >= kBelowZero || b >= kBelowZero || a + b >= kBelowZero ? kSaturated : a + b;
}

// The wave's operation on reports of report_values() values: field f's sum at f, its
// largest report at kFields + f, and the lowest rank with that report at 2 * kFields + f;
// then, from kValues on, the messages sent to each rank as saturating sums (a report at or
// above 2^63, or a sum reaching it, stays at the largest count: no report can lower one).
void combine_reports(void* in, void* inout, int* len, MPI_Datatype* type) {
  int bytes = 0;
  MPI_Type_size(*type, &bytes);
  const int values = bytes / static_cast<int>(sizeof(std::uint64_t));
  for (int k = 0; k < *len; ++k) {
    const auto* a = static_cast<const std::uint64_t*>(in) + k * values;
    auto* b = static_cast<std::uint64_t*>(inout) + k * values;
    for (int f = 0; f < kFields; ++f) {
      b[f] += a[f];  // modulo 2^64, as a lying report may make it wrap
      const std::uint64_t a_max = a[kFields + f], a_rank = a[2 * kFields + f];
      auto &b_max = b[kFields + f], &b_rank = b[2 * kFields + f];
      if (a_max > b_max || (a_max == b_max && a_rank < b_rank)) {
        b_max = a_max;
        b_rank = a_rank;
      }
    }
    for (int v = kValues; v < values; ++v) b[v] = saturating_sum(a[v], b[v]);
  }
}

std::string as_reported(std::uint64_t value) {
  if (value < kBelowZero) return cat(value);
  return cat("-", std::numeric_limits<std::uint64_t>::max() - value + 1, " (", value,
             " as the unsigned count travels)");
}

}  // namespace

const char* TerminationDetector::field_name(int field) {
  static constexpr const char* kNames[kFields] = {
      "sent",       "processed",     "pending_rounds", "dirty_ranks",
      "idle_ranks", "waiting_tasks", "parked_tasks",   "unbalanced_ranks"};
  return field >= 0 && field < kFields ? kNames[field] : "?";
}

TerminationDetector::TerminationDetector(MPI_Comm comm) : comm_(comm) {
  KODO_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  KODO_MPI_CHECK(MPI_Comm_size(comm_, &ranks_));
  const auto values = static_cast<std::size_t>(report_values(ranks_));
  sent_to_.assign(static_cast<std::size_t>(ranks_), 0);
  in_.assign(values, 0);
  out_.assign(values, 0);
  previous_.assign(static_cast<std::size_t>(kFields + ranks_), 0);
  KODO_MPI_CHECK(MPI_Type_contiguous(report_values(ranks_), MPI_UINT64_T, &report_type_));
  KODO_MPI_CHECK(MPI_Type_commit(&report_type_));
  KODO_MPI_CHECK(MPI_Op_create(combine_reports, 1, &combine_));
}

TerminationDetector::~TerminationDetector() {
  // A wave left in flight by a run() that threw on every rank completes on every rank.
  if (wave_ != MPI_REQUEST_NULL) MPI_Wait(&wave_, MPI_STATUS_IGNORE);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (combine_ != MPI_OP_NULL) MPI_Op_free(&combine_);
  if (report_type_ != MPI_DATATYPE_NULL) MPI_Type_free(&report_type_);
}

std::optional<TerminationDetector::Wave> TerminationDetector::test(std::uint64_t pending_rounds,
                                                                   bool dirty, bool idle,
                                                                   std::uint64_t tasks,
                                                                   std::uint64_t parked) {
  if (wave_ == MPI_REQUEST_NULL) {
    // Whether this rank has processed other than what the last wave counted sent to it.
    const bool unbalanced = have_previous_ &&
                            processed_ != previous_[static_cast<std::size_t>(kFields + rank_)];
    const std::array<std::uint64_t, kFields> mine{
        sent_,          processed_, pending_rounds, dirty ? 1u : 0u,
        idle ? 1u : 0u, tasks,      parked,         unbalanced ? 1u : 0u};
    for (int f = 0; f < kFields; ++f) {
      in_[static_cast<std::size_t>(f)] = in_[static_cast<std::size_t>(kFields + f)] =
          mine[static_cast<std::size_t>(f)];
      in_[static_cast<std::size_t>(2 * kFields + f)] = static_cast<std::uint64_t>(rank_);
    }
    std::copy(sent_to_.begin(), sent_to_.end(), in_.begin() + kValues);
    KODO_MPI_CHECK(MPI_Iallreduce(in_.data(), out_.data(), 1, report_type_, combine_, comm_,
                                  &wave_));
  }
  int done = 0;
  KODO_MPI_CHECK(MPI_Test(&wave_, &done, MPI_STATUS_IGNORE));
  if (!done) return std::nullopt;
  // Every rank sees the same wave: all of them find the same field and throw alike.
  if (const int f = field_not_adding_up(); f >= 0) throw Error(who_does_not_add_up(f));
  for (int to = 0; to < ranks_; ++to)
    if (out_[static_cast<std::size_t>(kValues + to)] >= kBelowZero) throw Error(who_saturates(to));
  // The sums that must not change between two waves: every field but unbalanced_ranks (it
  // speaks of the wave before), then the messages sent to each rank.
  std::vector<std::uint64_t> sums(out_.begin(), out_.begin() + kFields);
  sums[unbalanced_field] = 0;
  sums.insert(sums.end(), out_.begin() + kValues, out_.end());
  const bool stable = have_previous_ && sums == previous_;
  previous_ = std::move(sums);
  have_previous_ = true;
  const Wave wave{out_[0], out_[1], out_[2], out_[3], out_[4], out_[5], out_[6], out_[7], stable};
  // Two equal waves that balance while a rank has processed another count than was sent to
  // it: another rank counts more than was sent to it (no honest count does).
  if (stable && wave.balanced() && wave.unbalanced_ranks != 0) {
    const std::string who = who_overcounts();
    throw Error(!who.empty() ? who
                             : cat("the ranks' reports to the termination wave do not add up: "
                                   "they balance, but ",
                                   wave.unbalanced_ranks,
                                   " rank(s) report another count processed than sent to them "
                                   "(field unbalanced_ranks)"));
  }
  return wave;
}

std::string TerminationDetector::who_overcounts() const {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(ranks_) * kFields);
  KODO_MPI_CHECK(MPI_Allgather(in_.data(), kFields, MPI_UINT64_T, all.data(), kFields, MPI_UINT64_T,
                               comm_));
  for (int r = 0; r < ranks_; ++r) {
    const std::uint64_t processed = all[static_cast<std::size_t>(r * kFields + processed_field)];
    const std::uint64_t sent_to_it = out_[static_cast<std::size_t>(kValues + r)];
    if (processed > sent_to_it)
      return cat("rank ", r,
                 "'s report to the termination wave does not add up: its field processed is ",
                 processed, ", but the ranks count ", sent_to_it,
                 " message(s) and event(s) sent to it (field sent, by receiving rank); a count "
                 "like it could end run() while another rank's message is in flight");
  }
  return {};
}

std::string TerminationDetector::who_saturates(int to) const {
  std::vector<std::uint64_t> claims(static_cast<std::size_t>(ranks_));
  KODO_MPI_CHECK(MPI_Allgather(&in_[static_cast<std::size_t>(kValues + to)], 1, MPI_UINT64_T,
                               claims.data(), 1, MPI_UINT64_T, comm_));
  for (int r = 0; r < ranks_; ++r)
    if (claims[static_cast<std::size_t>(r)] >= kBelowZero)
      return cat("rank ", r,
                 "'s report to the termination wave does not add up: its count of the "
                 "messages it sent to rank ",
                 to, " (field sent, by receiving rank) is ",
                 as_reported(claims[static_cast<std::size_t>(r)]),
                 " (a report like it could end run() early, or never)");
  return cat(
      "the ranks' reports to the termination wave do not add up: their counts of the "
      "messages sent to rank ",
      to,
      " (field sent, by receiving rank) reach 2^63, which no honest count does (a rank "
      "sent the wave another count than it reports now)");
}

int TerminationDetector::field_not_adding_up() const {
  for (int f = 0; f < kFields; ++f) {
    const std::uint64_t sum = out_[static_cast<std::size_t>(f)];
    const std::uint64_t largest = out_[static_cast<std::size_t>(kFields + f)];
    if (largest >= kBelowZero || largest > sum ||
        ((f == dirty_field || f == idle_field || f == unbalanced_field) && largest > 1))
      return f;
  }
  return -1;
}

std::string TerminationDetector::who_does_not_add_up(int f) const {
  int ranks = 0;
  KODO_MPI_CHECK(MPI_Comm_size(comm_, &ranks));
  std::vector<std::uint64_t> all(static_cast<std::size_t>(ranks) * kFields);
  // Each rank's own counts, as it sent them in this wave.
  KODO_MPI_CHECK(MPI_Allgather(in_.data(), kFields, MPI_UINT64_T, all.data(), kFields, MPI_UINT64_T,
                               comm_));
  const auto value = [&](int rank) { return all[static_cast<std::size_t>(rank * kFields + f)]; };
  const bool flag = f == dirty_field || f == idle_field || f == unbalanced_field;  // 0 or 1
  const std::uint64_t sum = out_[static_cast<std::size_t>(f)];
  const auto field = cat("its field ", field_name(f));
  const auto tail = cat("; the job-wide sum of ", field_name(f), " is ", as_reported(sum),
                        " (a report like it could end run() early, or never)");
  for (int r = 0; r < ranks; ++r)
    if (value(r) >= kBelowZero || (flag && value(r) > 1))
      return cat("rank ", r, "'s report to the termination wave does not add up: ", field, " is ",
                 as_reported(value(r)), flag ? ", and a rank counts 0 or 1 there" : "", tail);
  unsigned __int128 gathered = 0;
  std::string each;
  for (int r = 0; r < ranks; ++r) {
    gathered += value(r);
    if (r < 16) each += cat(r == 0 ? "" : ", ", "rank ", r, ": ", value(r));
  }
  if (gathered != sum)
    return cat("the ranks' reports to the termination wave do not add up: field ", field_name(f),
               " sums to ", as_reported(sum), " in the wave, but each rank's report now gives ",
               each, ranks > 16 ? ", ..." : "",
               " (a rank sent the wave another count than it reports now; a report like it "
               "could end run() early, or never)");
  // Every rank's count is plausible and they add up: the largest report was forged, and
  // the rank it names with it too (that rank's own report is no larger than the sum).
  const std::uint64_t largest = out_[static_cast<std::size_t>(kFields + f)];
  const std::uint64_t by = out_[static_cast<std::size_t>(2 * kFields + f)];
  return cat("a rank's report to the termination wave does not add up: the wave carried ",
             as_reported(largest), " as the largest report of ", field_name(f), ", naming rank ",
             by,
             by < static_cast<std::uint64_t>(ranks)
                 ? cat(", whose own report is ", value(static_cast<int>(by)))
                 : std::string(", which the job does not have"),
             ", though every rank's reports of it sum to ", as_reported(sum),
             " (a rank forged it; the wave cannot tell which)");
}

void TerminationDetector::reset() { have_previous_ = false; }

}  // namespace kodo::detail
