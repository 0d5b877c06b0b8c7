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

#include <mpi.h>

#include <array>
#include <cstdint>
#include <optional>

namespace kodo::detail {

class TerminationDetector {
 public:
  // Waves travel on `comm`, which nothing else may use (a duplicate of the job's).
  explicit TerminationDetector(MPI_Comm comm) : comm_(comm) {}
  ~TerminationDetector();
  TerminationDetector(const TerminationDetector&) = delete;
  TerminationDetector& operator=(const TerminationDetector&) = delete;

  void count_sent() { ++sent_; }
  void count_processed() { ++processed_; }
  std::uint64_t sent() const { return sent_; }
  std::uint64_t processed() const { return processed_; }

  // What one wave found, summed over the ranks.
  struct Wave {
    std::uint64_t sent, processed, pending_rounds, dirty_ranks, idle_ranks, waiting_tasks;
    std::uint64_t parked_tasks;  // tasks at a balance point (not waiting: the job may go quiet)
    bool stable;                 // equal to the wave before it
    bool balanced() const { return sent == processed; }
    bool quiet() const { return stable && balanced() && dirty_ranks == 0; }
    // A message was processed that no rank counted as sent (corrupted or duplicated).
    bool overprocessed() const { return stable && processed > sent; }
    // No rank of `ranks` has done anything for the stall limit, and nothing will.
    bool stalled(int ranks) const {
      return stable && !quiet() && idle_ranks == static_cast<std::uint64_t>(ranks);
    }
  };

  // Collective in the sense that every rank must keep calling it until the job is
  // quiet. Starts a wave with this rank's state when none is in flight, and returns the
  // wave's result when it completes.
  // `idle`: this rank has been idle for longer than the stall limit; `tasks`: its coroutine
  // tasks that have started and not ended (a quiet job with some is stuck); `parked`:
  // its tasks that await a balance point (a quiet job with some balances them).
  std::optional<Wave> test(std::uint64_t pending_rounds, bool dirty, bool idle = false,
                           std::uint64_t tasks = 0, std::uint64_t parked = 0);
  // Whether a wave is in flight (else the next test() starts one with this rank's state).
  bool wave_in_flight() const { return wave_ != MPI_REQUEST_NULL; }
  // Forgets the previous wave (a new run() starts afresh).
  void reset();

 private:
  MPI_Comm comm_;
  std::uint64_t sent_ = 0, processed_ = 0;
  std::array<std::uint64_t, 7> in_{}, out_{}, previous_{};
  bool have_previous_ = false;
  MPI_Request wave_ = MPI_REQUEST_NULL;
};

}  // namespace kodo::detail
