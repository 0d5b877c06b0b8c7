// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The termination detector: owns the job-wide count of messages sent and processed and
// decides, without a barrier, when the whole job is quiet.
//
// Waves of a non-blocking allreduce sum (sent, processed, pending reduction rounds,
// ranks with device work to drain, coroutine tasks not ended) over every rank; ranks keep working
// while a wave is in flight. The job is quiet when two consecutive waves agree, every message sent
// has been processed and no rank has streams to drain (the four-counter method). Anything that
// completes later through the scheduler (a channel transfer, awaited device work) counts as a
// message. Two consecutive equal waves that count more processed than sent mean a message arrived
// that no rank sent: that is an error, not a wait. Waves also count the ranks idle for longer than
// the stall limit: two equal waves in which every rank is idle, and the job is not quiet, are a
// stall (stall_report.hpp).
//
// A sum alone believes a lying rank: one that reports -1 pending rounds (2^64 - 1 as the
// unsigned count travels) cancels another rank's incomplete round, and the job would end
// early. Waves therefore also carry, per field, the largest single report and the lowest
// rank that made it (one user-defined MPI operation: sums, maxima and their ranks). No
// honest count reaches 2^63, and a sum of honest counts is at least each of them: a
// report at or above 2^63, a sum below its largest report (a wrapped sum that cancels an
// honest count shows so) or a flag above 1 is seen by every rank in the same wave. They
// then gather each rank's report (only then: the error path) and throw the same
// kodo::Error, naming the rank whose report does not add up and the field.
//
// A sum of processed counts believes a rank that counts more than it ran: with a message
// between two other ranks in flight the sums balance, and the job would end early. Waves
// therefore also carry, for each rank, the messages and events the ranks count as sent to
// it (a saturating sum: no report can lower it), and each rank says in the next wave
// whether it has processed exactly what the last wave counted as sent to it. A job is
// quiet only when no rank says otherwise; two equal waves that balance while a rank says
// otherwise (a count that no honest rank can make) end run() on every rank, naming the rank
// that counts more processed than was sent to it. What a lying rank can still do with
// counts that add up: see the trust model (docs/architecture.md).

#include <mpi.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kodo::detail {

class TerminationDetector {
 public:
  // Waves travel on `comm`, which nothing else may use (a duplicate of the job's).
  explicit TerminationDetector(MPI_Comm comm);
  ~TerminationDetector();
  TerminationDetector(const TerminationDetector&) = delete;
  TerminationDetector& operator=(const TerminationDetector&) = delete;

  // A message or event that this rank (or rank `to`) will process later.
  void count_sent() { count_sent(rank_); }
  void count_sent(int to) {
    ++sent_;
    ++sent_to_[static_cast<std::size_t>(to)];
  }
  void count_processed() { ++processed_; }
  std::uint64_t sent() const { return sent_; }
  std::uint64_t processed() const { return processed_; }

  // What each rank reports in a wave, in this order; each travels as its sum, its largest
  // report and the rank of that report (kWaveValues values).
  enum Field : int {
    sent_field,
    processed_field,
    pending_rounds_field,
    dirty_field,
    idle_field,
    waiting_tasks_field,
    parked_tasks_field,
    unbalanced_field,  // 1: this rank has not processed what the last wave counted sent to it
    kFields
  };
  static constexpr int kWaveValues = 3 * kFields;
  // The values of one rank's report in a wave of `ranks` ranks: the fields as above,
  // then the messages it counts as sent to each rank.
  static int report_values(int ranks) { return kWaveValues + ranks; }
  static const char* field_name(int field);

  // What one wave found, summed over the ranks.
  struct Wave {
    std::uint64_t sent, processed, pending_rounds, dirty_ranks, idle_ranks, waiting_tasks;
    std::uint64_t parked_tasks;      // tasks at a balance point (not waiting: the job may go quiet)
    std::uint64_t unbalanced_ranks;  // ranks that processed another count than sent to them
    bool stable;                     // equal to the wave before it
    bool balanced() const { return sent == processed; }
    bool quiet() const { return stable && balanced() && dirty_ranks == 0 && unbalanced_ranks == 0; }
    // A message was processed that no rank counted as sent (corrupted or duplicated).
    bool overprocessed() const { return stable && processed > sent; }
    // No rank of `ranks` has done anything for the stall limit, and nothing will.
    bool stalled(int ranks) const {
      return stable && !quiet() && idle_ranks == static_cast<std::uint64_t>(ranks);
    }
  };

  // Collective in the sense that every rank must keep calling it until the job is
  // quiet. Starts a wave with this rank's state when none is in flight, and returns the
  // wave's result when it completes; throws kodo::Error (on every rank alike) when a rank's
  // report in it does not add up, naming the rank and the field.
  // `idle`: this rank has been idle for longer than the stall limit; `tasks`: its coroutine
  // tasks that have started and not ended (a quiet job with some is stuck); `parked`:
  // its tasks that await a balance point (a quiet job with some balances them).
  std::optional<Wave> test(std::uint64_t pending_rounds, bool dirty, bool idle = false,
                           std::uint64_t tasks = 0, std::uint64_t parked = 0);
  // Collective over the ranks that saw the same wave: which rank counts more processed
  // than the wave counted as sent to it (the error's text), or an empty string.
  std::string who_overcounts() const;
  // The messages and events the last completed wave counted as sent to this rank.
  std::uint64_t sent_to_this_rank() const {
    return previous_[static_cast<std::size_t>(kFields + rank_)];
  }
  // This rank's own report of `field` in the last wave it started.
  std::uint64_t reported(Field field) const { return in_[static_cast<std::size_t>(field)]; }
  // Whether a wave is in flight (else the next test() starts one with this rank's state).
  bool wave_in_flight() const { return wave_ != MPI_REQUEST_NULL; }
  // Forgets the previous wave (a new run() starts afresh).
  void reset();

 private:
  // The first field of the completed wave that is not every rank's honest count (a
  // report at or above 2^63, which no rank's count reaches; a sum below its largest
  // report; a flag above 1), or -1.
  int field_not_adding_up() const;
  // Collective over the ranks that saw the same wave: gathers what each rank reported
  // and says which rank's report of field `f` does not add up (where one can tell).
  std::string who_does_not_add_up(int f) const;

  // A count the ranks sent to some rank that no honest report makes (a report at or above
  // 2^63, or a sum that would pass it): the error's text, naming the rank where it can.
  std::string who_saturates(int to) const;

  MPI_Comm comm_;
  int rank_ = 0, ranks_ = 1;
  MPI_Datatype report_type_ = MPI_DATATYPE_NULL;  // report_values() uint64 values, contiguous
  MPI_Op combine_ = MPI_OP_NULL;  // sums, maxima and their ranks; saturating sums per rank
  std::uint64_t sent_ = 0, processed_ = 0;
  std::vector<std::uint64_t> sent_to_;  // by receiving rank
  std::vector<std::uint64_t> in_, out_;
  std::vector<std::uint64_t> previous_;  // the last wave's sums (fields, then sent to each)
  bool have_previous_ = false;
  MPI_Request wave_ = MPI_REQUEST_NULL;
};

}  // namespace kodo::detail
