// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/scheduling/detail/watchdog.hpp>

#include <kodo/core/error.hpp>

#include <mpi.h>

#include <algorithm>

namespace kodo::detail {

Watchdog::Watchdog(std::optional<double> limit_seconds, bool end_job, int rank)
    : limit_(limit_seconds.value_or(0)), end_job_(end_job), rank_(rank) {
  if (!limit_seconds) return;
  int initialized = 0, level = MPI_THREAD_SINGLE;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Query_thread(&level);  // here, on the thread that runs MPI
  mpi_abort_ = level == MPI_THREAD_MULTIPLE;
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::string Watchdog::where() const {
  switch (inside_.load(std::memory_order_relaxed)) {
    case Inside::entry_method: {
      const std::string* method = method_.load(std::memory_order_relaxed);
      return cat("inside entry method ", method ? *method : std::string("(unnamed)"), " of unit ",
                 Index3{unit_[0].load(std::memory_order_relaxed),
                        unit_[1].load(std::memory_order_relaxed),
                        unit_[2].load(std::memory_order_relaxed)},
                 " of collection ", collection_.load(std::memory_order_relaxed));
    }
    case Inside::continuation:
      return "inside a device-completion continuation (a when_done callback or a task it "
             "resumed)";
    case Inside::channel_callback:
      return "inside a channel's completion callback (a receive's or send's done, or a task "
             "it resumed)";
    case Inside::message:
      return "handling a message from another rank (a reduction partial, a link or ring "
             "message)";
    case Inside::reduction_callback: return "inside a reduction's on_reduced callback";
    case Inside::phase: {
      const char* phase = phase_.load(std::memory_order_relaxed);
      return cat("in ", phase ? phase : "a collective phase of kodo's");
    }
    case Inside::nothing: break;
  }
  return "inside kodo's own loop, in no entry method (a device or library call that does not "
         "return)";
}

void Watchdog::watch() {
  using Clock = std::chrono::steady_clock;
  const auto limit = std::chrono::duration<double>(limit_);
  // Often enough to report within a quarter of the limit, at most once a second, at
  // least every 10 ms.
  const auto poll =
      std::chrono::duration_cast<Clock::duration>(std::clamp(limit / 4,
                                                             std::chrono::duration<double>(0.01),
                                                             std::chrono::duration<double>(1.0)));
  std::uint64_t seen = turns_.load(std::memory_order_relaxed);
  auto since = Clock::now();
  bool reported = false;
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, poll, [this] { return stop_; })) {
    const std::uint64_t now_turns = turns_.load(std::memory_order_relaxed);
    const auto now = Clock::now();
    if (now_turns != seen || !running_.load(std::memory_order_relaxed)) {
      seen = now_turns;
      since = now;
      reported = false;
      continue;
    }
    if (reported || now - since < limit) continue;
    reported = true;
    const double waited = std::chrono::duration<double>(now - since).count();
    if (inside_.load(std::memory_order_relaxed) == Inside::phase) {
      std::string waiting;
      {
        const std::lock_guard wait_lock(waiting_mutex_);
        waiting = waiting_;
      }
      print_error(cat("kodo: rank ", rank_, " is blocked: it has waited ", waited, " s ", where(),
                      " for ", waiting.empty() ? "other ranks" : waiting,
                      ". Every rank makes this call; a rank that has stopped, that is blocked "
                      "elsewhere, that never makes it or that never sent what this rank waits "
                      "for holds the others (the other ranks' reports say where they are)."));
    } else {
      print_error(cat("kodo: rank ", rank_, " is blocked: its scheduler loop has not turned for ",
                      waited, " s; it is ", where(),
                      ". A call that waits for other ranks inside run() (an MPI collective, a "
                      "fence on work another rank must release) blocks this rank and every "
                      "rank that waits for it: use the unit's all_reduce or contribute, and "
                      "channels, instead."));
    }
    if (end_job_) {
      // The other ranks blocked on the same peer began to wait at about the same time:
      // a moment for their reports before this rank ends the job under them.
      wake_.wait_for(lock, 2 * poll, [this] { return stop_; });
      print_error(cat("kodo: ending the job from rank ", rank_,
                      " (KODO_STALL_EXIT=1): exit status 3",
                      mpi_abort_ ? "" : "; the launcher ends the other ranks"));
      if (mpi_abort_) MPI_Abort(MPI_COMM_WORLD, 3);
      std::_Exit(3);
    }
  }
}

}  // namespace kodo::detail
