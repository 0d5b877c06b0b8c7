// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Termination counts from the peer (issue 54): both ranks run two termination waves per
// input on a detector of their own; rank 1's report is altered as it leaves it (this
// surface's own MPI_Iallreduce, which alters nothing while another surface runs), the
// alteration chosen by rank 1 and told to rank 0 first. Both ranks see the same waves, so
// each must take or refuse every input alike:
// - honest (rank 0 may have messages to itself in flight): taken;
// - a field at or above 2^63, a flag above 1, a count of messages sent to a rank at or
//   above 2^63: refused in the first wave, naming rank 1 and the field;
// - processed counted up by d while d messages to rank 0 are in flight (the sums balance):
//   refused in the second wave, naming rank 1's processed against what was sent to it;
// - any value at any place of the report: taken, or refused with a listed error.

#include "../wave_report.hpp"
#include "fuzz.hpp"

#include <kodo/tasking/scheduling/detail/termination.hpp>

#include <array>
#include <cstring>
#include <limits>
#include <optional>

namespace {

using Detector = kodo::detail::TerminationDetector;

struct Alteration {
  std::uint64_t position, value;
  bool consistent;         // a field: its largest report follows it
  std::uint64_t forged{};  // a field's largest report forged: 1 + the rank it names (else 0)
};
std::optional<Alteration> altering;  // set on rank 1 while its wave starts

}  // namespace

extern "C" int MPI_Iallreduce(const void* send, void* receive, int count, MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  if (altering && is_wave_report(count, type, comm)) {
    auto* values = static_cast<std::uint64_t*>(const_cast<void*>(send));
    if (altering->forged != 0) {  // the largest report and its rank, not the count
      values[Detector::kFields + altering->position] = altering->value;
      values[2 * Detector::kFields + altering->position] = altering->forged - 1;
    } else {
      values[altering->position] = altering->value;
      if (altering->consistent) values[Detector::kFields + altering->position] = altering->value;
    }
    altering.reset();
  }
  return PMPI_Iallreduce(send, receive, count, type, op, comm, request);
}

namespace fuzz {
namespace {

using kodo::detail::cat;
constexpr std::uint64_t kBelowZero = std::uint64_t{1} << 63;

std::string as_reported(std::uint64_t value) {
  if (value < kBelowZero) return cat(value);
  return cat("-", std::numeric_limits<std::uint64_t>::max() - value + 1, " (", value,
             " as the unsigned count travels)");
}

enum Kind : std::uint64_t {
  honest,
  field_lie,
  flag_lie,
  slot_lie,
  overcount,
  random,
  forged_largest,
  kKinds
};

// What rank 1 chose, told to rank 0: the kind, the alteration, the honest count of each
// rank and the messages rank 0 has in flight to itself.
struct Input {
  std::uint64_t kind, position, value, count, in_flight, forged;
};

Input choose(Context& c) {
  Input in{static_cast<std::uint64_t>(c.pick(0, kKinds - 1)),
           0,
           0,
           static_cast<std::uint64_t>(c.pick(1, 5)),
           static_cast<std::uint64_t>(c.pick(0, 1)),
           0};
  const auto fields = static_cast<int>(Detector::kFields);
  const std::uint64_t below_zero = kBelowZero | (c.word() >> 1);
  switch (in.kind) {
    case field_lie:
      in = {in.kind,      static_cast<std::uint64_t>(c.pick(0, fields - 1)),
            below_zero,   in.count,
            in.in_flight, 0};
      break;
    case flag_lie: {
      const int flags[] = {Detector::dirty_field, Detector::idle_field, Detector::unbalanced_field};
      in.position = static_cast<std::uint64_t>(flags[c.pick(0, 2)]);
      in.value = 2 + (c.pick(0, 1) ? static_cast<std::uint64_t>(c.pick(0, 100)) : c.word() >> 2);
      break;
    }
    case slot_lie:
      in.position = static_cast<std::uint64_t>(Detector::kWaveValues + c.pick(0, 1));
      in.value = below_zero;
      break;
    case overcount:
      in.in_flight = static_cast<std::uint64_t>(c.pick(1, 3));
      in.position = Detector::processed_field;
      in.value = in.count + in.in_flight;
      break;
    case forged_largest:  // above every sum (at most 5 + 1 + 5), below 2^63
      in.position = static_cast<std::uint64_t>(c.pick(0, fields - 1));
      in.value = 12 + (c.word() >> c.pick(2, 63));
      in.forged = 1 + (c.pick(0, 1) ? static_cast<std::uint64_t>(c.pick(0, 2)) : c.word() >> 1);
      break;
    case random:
      in.position = static_cast<std::uint64_t>(c.pick(0, Detector::report_values(2) - 1));
      in.value = static_cast<std::uint64_t>(c.edge());
      break;
    default: break;
  }
  return in;
}

// Rank `rank`'s own count of field `in.position` (rank 0's sent includes its messages in
// flight).
std::uint64_t own_report(const Input& in, int rank) {
  if (in.position == Detector::sent_field) return in.count + (rank == 0 ? in.in_flight : 0);
  return in.position == Detector::processed_field ? in.count : 0;
}

// What must become of `in` (rank 0's report: sent count + in_flight, processed count,
// the rest 0; rank 1's: sent and processed count).
Expect expected(const Input& in) {
  const auto name = [](std::uint64_t f) { return Detector::field_name(static_cast<int>(f)); };
  const std::string liar = "kodo: rank 1's report to the termination wave does not add up: ";
  switch (in.kind) {
    case honest: return Expect::accept();
    case field_lie:
    case flag_lie: {
      const bool flag = in.position == Detector::dirty_field ||
                        in.position == Detector::idle_field ||
                        in.position == Detector::unbalanced_field;
      const std::uint64_t own = in.position == Detector::sent_field        ? in.count + in.in_flight
                                : in.position == Detector::processed_field ? in.count
                                                                           : 0;
      return Expect::refuse(cat(liar, "its field ", name(in.position), " is ",
                                as_reported(in.value),
                                flag ? ", and a rank counts 0 or 1 there" : "",
                                "; the job-wide sum of ", name(in.position), " is ",
                                as_reported(own + in.value),
                                " (a report like it could end run() early, or never)"));
    }
    case slot_lie:
      return Expect::refuse(cat(liar, "its count of the messages it sent to rank ",
                                in.position - Detector::kWaveValues,
                                " (field sent, by receiving rank) is ", as_reported(in.value),
                                " (a report like it could end run() early, or never)"));
    case forged_largest: {
      const std::uint64_t by = in.forged - 1;
      return Expect::refuse(
          cat("kodo: a rank's report to the termination wave does not add up: the wave carried ",
              as_reported(in.value), " as the largest report of ", name(in.position),
              ", naming rank ", by,
              by < 2 ? cat(", whose own report is ", own_report(in, static_cast<int>(by)))
                     : std::string(", which the job does not have"),
              ", though every rank's reports of it sum to ", own_report(in, 0) + own_report(in, 1),
              " (a rank forged it; the wave cannot tell which)"));
    }
    case overcount:
      return Expect::refuse(cat(liar, "its field processed is ", in.value, ", but the ranks count ",
                                in.count,
                                " message(s) and event(s) sent to it (field sent, by receiving "
                                "rank); a count like it could end run() while another rank's "
                                "message is in flight"));
    default: return Expect{};
  }
}

}  // namespace

Tally fuzz_counts(Context& c) {
  Tally t("counts", c.self(),
          {"kodo: rank [01]'s report to the termination wave does not add up: .*",
           "kodo: the ranks' reports to the termination wave do not add up: .*",
           "kodo: a rank's report to the termination wave does not add up: .*"});
  Told told;
  MPI_Comm waves = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &waves);
  for (;;) {
    if (!told.more(c, t)) break;
    Input in{};
    if (c.self() == 1) in = choose(c);
    in = told(in);
    Detector detector(waves);
    for (std::uint64_t k = 0; k < in.count; ++k) {
      detector.count_sent();
      detector.count_processed();
    }
    if (c.self() == 0)
      for (std::uint64_t k = 0; k < in.in_flight; ++k) detector.count_sent();
    t.check(expected(in), [&] {
      for (int wave = 0; wave < 2; ++wave) {
        if (c.self() == 1 && in.kind != honest)
          altering = Alteration{in.position, in.value, in.position < Detector::kFields, in.forged};
        while (!detector.test(0, false)) {
        }
      }
    });
    altering.reset();
  }
  MPI_Comm_free(&waves);
  return t;
}

}  // namespace fuzz

// Balance counts from the peer: each input is a run() in which every unit's task awaits a
// balance point; rank 1's report there (its count of each collection's units at the
// point, then its count in the wave: balance_parked's MPI_Allgather) altered as it leaves
// it, the alteration chosen by rank 1 and told to rank 0 first.
namespace {

struct Counted {
  std::int64_t units, wave;  // rank 1's report: units of the pacers at the point, the wave's
};
std::optional<Counted> counting;  // set on rank 1 around its run()

class Pacer : public kodo::WorkUnit<Pacer> {
 public:
  explicit Pacer(const kodo::UnitInit<Pacer>& init) : WorkUnit(init) {}
  kodo::Task pace() { co_await balance_point<&Pacer::went_on>(); }
  void went_on() { ++gone_on; }
  template <class State>
  void state(State&) {}
  static inline int gone_on = 0;
};

}  // namespace

extern "C" int MPI_Allgather(const void* send, int count, MPI_Datatype type, void* receive,
                             int receive_count, MPI_Datatype receive_type, MPI_Comm comm) {
  std::array<std::uint64_t, 4> report{};  // the 3 collections of fuzz_receive, then the wave
  if (counting && count == 4 && type == MPI_UINT64_T) {
    std::memcpy(report.data(), send, sizeof report);
    report[2] = static_cast<std::uint64_t>(counting->units);
    report[3] = static_cast<std::uint64_t>(counting->wave);
    send = report.data();
    counting.reset();
  }
  return PMPI_Allgather(send, count, type, receive, receive_count, receive_type, comm);
}

namespace fuzz {
namespace {

// What must become of rank 1's report `n` (honest: {2, 2}, its 2 units of 4 at the point).
Expect expected(const Counted& n) {
  const std::string lie = "kodo: rank 1's report at a balance point does not add up: its field ";
  const auto units = static_cast<std::uint64_t>(n.units);
  if (units > 2)
    return Expect::refuse(cat(lie, "parked_tasks counts ", units,
                              " of its units of collection 2 at a balance point, but the "
                              "collection's map places 2 unit(s) on that rank"));
  if (n.wave != n.units)
    return Expect::refuse(cat(lie, "parked_tasks was ", static_cast<std::uint64_t>(n.wave),
                              " in the termination wave, but it counts ", units,
                              " task(s) at balance points now"));
  if (units != 2)
    return Expect::refuse(
        cat("kodo: the ranks' reports at a balance point do not add up: the "
            "termination wave counted 4 task(s) at balance points (field "
            "parked_tasks), but the ranks count ",
            2 + units, " now (a rank sent the wave another count than it reports here)"));
  return Expect::accept();
}

}  // namespace

Tally fuzz_balance_counts(Context& c) {
  Tally t("balance_counts", c.self(), {});
  auto pacers = kodo::Collection<Pacer>::create(c.runtime, {4, 1, 1});  // collection 2
  kodo::balance_points(pacers, [](const kodo::BalanceInput& in) { return in.owners; });
  Told told;
  for (;;) {
    if (!told.more(c, t)) break;
    Counted n{2, 2};
    if (c.self() == 1 && c.pick(0, 4) != 0) {
      const int which = c.pick(0, 2);  // the units, the wave's count, or both alike
      if (which != 1) n.units = c.pick(0, 1) ? c.pick(0, 9) : c.edge();
      if (which != 0) n.wave = which == 2 ? n.units : c.pick(0, 1) ? c.pick(0, 9) : c.edge();
    }
    n = told(n);
    const Expect expect = expected(n);
    const int before = Pacer::gone_on;
    t.check(expect, [&] {
      pacers.broadcast_local<&Pacer::pace>();
      if (c.self() == 1) counting = n;
      c.runtime.run();
    });
    counting.reset();
    if (expect.kind == Expect::accepted && Pacer::gone_on != before + 2)
      t.fail(cat(Pacer::gone_on - before, " of this rank's 2 units went on from the point"));
  }
  return t;
}

}  // namespace fuzz
