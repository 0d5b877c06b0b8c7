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

#include <kodo/tasking/detail/termination.hpp>

#include "../wave_report.hpp"
#include "fuzz.hpp"

#include <limits>
#include <optional>

namespace {

using Detector = kodo::detail::TerminationDetector;

struct Alteration {
  std::uint64_t position, value;
  bool consistent;  // a field: its largest report follows it
};
std::optional<Alteration> altering;  // set on rank 1 while its wave starts

}  // namespace

extern "C" int MPI_Iallreduce(const void* send, void* receive, int count, MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  if (altering && is_wave_report(count, type, comm)) {
    auto* values = static_cast<std::uint64_t*>(const_cast<void*>(send));
    values[altering->position] = altering->value;
    if (altering->consistent) values[Detector::kFields + altering->position] = altering->value;
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

enum Kind : std::uint64_t { honest, field_lie, flag_lie, slot_lie, overcount, random, kKinds };

// What rank 1 chose, told to rank 0: the kind, the alteration, the honest count of each
// rank and the messages rank 0 has in flight to itself.
struct Input {
  std::uint64_t kind, position, value, count, in_flight;
};

Input choose(Context& c) {
  Input in{static_cast<std::uint64_t>(c.pick(0, kKinds - 1)), 0, 0,
           static_cast<std::uint64_t>(c.pick(1, 5)), static_cast<std::uint64_t>(c.pick(0, 1))};
  const auto fields = static_cast<int>(Detector::kFields);
  const std::uint64_t below_zero = kBelowZero | (c.word() >> 1);
  switch (in.kind) {
    case field_lie: in = {in.kind, static_cast<std::uint64_t>(c.pick(0, fields - 1)), below_zero,
                          in.count, in.in_flight}; break;
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
    case random:
      in.position = static_cast<std::uint64_t>(c.pick(0, Detector::report_values(2) - 1));
      in.value = static_cast<std::uint64_t>(c.edge());
      break;
    default: break;
  }
  return in;
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
      const std::uint64_t own = in.position == Detector::sent_field ? in.count + in.in_flight
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
           "kodo: the ranks' reports to the termination wave do not add up: .*"});
  MPI_Comm told = MPI_COMM_NULL, waves = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &told);
  MPI_Comm_dup(MPI_COMM_WORLD, &waves);
  for (;;) {
    int more = c.self() == 1 && c.more(t) ? 1 : 0;
    MPI_Bcast(&more, 1, MPI_INT, 1, told);
    if (!more) break;
    Input in{};
    if (c.self() == 1) in = choose(c);
    MPI_Bcast(&in, sizeof in, MPI_BYTE, 1, told);
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
          altering = Alteration{in.position, in.value, in.position < Detector::kFields};
        while (!detector.test(0, false)) {
        }
      }
    });
    altering.reset();
  }
  MPI_Comm_free(&told);
  MPI_Comm_free(&waves);
  return t;
}

}  // namespace fuzz
