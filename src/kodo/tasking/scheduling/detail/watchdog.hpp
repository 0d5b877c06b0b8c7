// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The watchdog: a thread that notices when this rank's scheduler loop stops turning
// inside run() (an entry method that blocks: an MPI collective, a wait for another rank,
// an endless loop), or when a collective phase of kodo's own outside the loop (a
// checkpoint, a migration, gathering loads) waits too long for other ranks, and says
// where the rank is stuck. The stall report of the loop itself cannot: it runs in the
// loop that is blocked, and it needs every rank's answer.
//
// The loop tells it, with relaxed atomic stores only, that it turned and what user code
// it is inside (an entry method of which unit, a device-completion continuation, a
// reduction's callback). After KODO_STALL_SECONDS without a turn, the watchdog prints
// one report on this rank; under KODO_STALL_EXIT=1 (the default) it then ends the job,
// since the blocked thread cannot be unwound from outside, a moment after its report (so
// that other ranks blocked on the same peer print theirs): MPI_Abort(3) where MPI was
// started with MPI_THREAD_MULTIPLE (only then may another thread call MPI), else this
// rank exits with status 3 and the launcher ends the others (mpiexec does; Slurm's srun
// with --kill-on-bad-exit=1). S must exceed the longest entry method: on the host backend a
// kernel runs inside the entry method that launches it.

#include <kodo/core/index.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace kodo::detail {

// KODO_STALL_SECONDS when unset: a bound no healthy step or collective call reaches, so
// that a job never hangs without a word.
inline constexpr double kStallSecondsUnset = 600;

class Watchdog {
 public:
  enum class Inside : std::uint8_t {
    nothing,
    entry_method,
    continuation,        // of device work (when_done)
    channel_callback,    // a channel's receive or send completion
    reduction_callback,  // a result handed to units and on_reduced
    message,             // another kind of message from another rank
    phase,               // a collective phase of kodo's (WatchdogPhase)
  };

  // No thread unless `limit_seconds` is set.
  Watchdog(std::optional<double> limit_seconds, bool end_job, int rank);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  bool active() const { return thread_.joinable(); }
  bool running() const { return running_.load(std::memory_order_relaxed); }
  // Only a loop inside run() is watched.
  void running(bool yes) {
    turned();
    running_.store(yes, std::memory_order_relaxed);
  }
  void turned() { turns_.fetch_add(1, std::memory_order_relaxed); }
  // The loop is inside `what` (for an entry method: `method` of unit `unit` of collection
  // `collection`; `method` outlives the call) until leave().
  // `unit` is the unit's index as the report prints it; `phase` names a phase (static).
  struct Place {
    Inside what = Inside::nothing;
    const std::string* method = nullptr;
    std::uint32_t collection = 0;
    Index3 unit{};
    const char* phase = nullptr;
  };
  // Marks the loop inside `p`; returns where it was, for leave().
  Place enter(const Place& p) {
    const Place before{inside_.load(std::memory_order_relaxed),
                       method_.load(std::memory_order_relaxed),
                       collection_.load(std::memory_order_relaxed),
                       {unit_[0].load(std::memory_order_relaxed),
                        unit_[1].load(std::memory_order_relaxed),
                        unit_[2].load(std::memory_order_relaxed)},
                       phase_.load(std::memory_order_relaxed)};
    store(p);
    return before;
  }
  void leave(const Place& before) {
    store(before);
    turned();
  }

  // What the report says the loop is inside (for tests and the report).
  std::string where() const;
  // What a phase waits for, in words ("the header of unit (1,0,0) of collection 0 from
  // rank 1"), until it is set again (empty: other ranks, unnamed); the report says it.
  // Taken under a lock: set once per wait of a phase, never on run()'s paths.
  void waiting_for(std::string what) {
    const std::lock_guard lock(waiting_mutex_);
    waiting_ = std::move(what);
  }

 private:
  void watch();
  void store(const Place& p) {
    method_.store(p.method, std::memory_order_relaxed);
    collection_.store(p.collection, std::memory_order_relaxed);
    unit_[0].store(p.unit.x, std::memory_order_relaxed);
    unit_[1].store(p.unit.y, std::memory_order_relaxed);
    unit_[2].store(p.unit.z, std::memory_order_relaxed);
    phase_.store(p.phase, std::memory_order_relaxed);
    inside_.store(p.what, std::memory_order_relaxed);
  }

  double limit_ = 0;
  bool end_job_ = false;
  bool mpi_abort_ = false;  // MPI allows this thread to call MPI_Abort (THREAD_MULTIPLE)
  int rank_ = 0;
  std::atomic<std::uint64_t> turns_{0};
  std::atomic<bool> running_{false};
  std::atomic<Inside> inside_{Inside::nothing};
  std::atomic<const std::string*> method_{nullptr};
  std::atomic<std::uint32_t> collection_{0};
  std::atomic<std::int64_t> unit_[3] = {0, 0, 0};
  std::atomic<const char*> phase_{nullptr};
  mutable std::mutex waiting_mutex_;
  std::string waiting_;  // waiting_for()
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// Marks the loop inside `place` for the life of the object, then where it was before.
class WatchdogScope {
 public:
  WatchdogScope(Watchdog& w, const Watchdog::Place& place) : w_(w), before_(w.enter(place)) {}
  ~WatchdogScope() { w_.leave(before_); }
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;

 private:
  Watchdog& w_;
  Watchdog::Place before_;
};

// Watches a collective phase of kodo's for the life of the object, inside run() or out
// of it: a rank that waits there longer than the limit for other ranks is reported (and
// ends the job under KODO_STALL_EXIT=1) like a loop that stopped turning. `what` names
// the phase in the report ("writing a checkpoint (kodo::write_checkpoint)"); static.
class WatchdogPhase {
 public:
  WatchdogPhase(Watchdog& w, const char* what)
      : w_(w),
        was_running_(w.running()),
        before_(w.enter({Watchdog::Inside::phase, nullptr, 0, {}, what})) {
    w.running(true);
  }
  ~WatchdogPhase() {
    w_.leave(before_);
    w_.running(was_running_);
  }
  WatchdogPhase(const WatchdogPhase&) = delete;
  WatchdogPhase& operator=(const WatchdogPhase&) = delete;

 private:
  Watchdog& w_;
  bool was_running_;
  Watchdog::Place before_;
};

// Names what a phase waits for (a peer's message) while a wait lasts, so that the report
// names the peer; update() as the wait moves on (it turns the watchdog: progress).
class WatchdogWait {
 public:
  WatchdogWait(Watchdog& w, std::string what) : w_(w) { w.waiting_for(std::move(what)); }
  ~WatchdogWait() {
    w_.waiting_for({});
    w_.turned();
  }
  void update(std::string what) {
    w_.waiting_for(std::move(what));
    w_.turned();
  }
  WatchdogWait(const WatchdogWait&) = delete;
  WatchdogWait& operator=(const WatchdogWait&) = delete;

 private:
  Watchdog& w_;
};

}  // namespace kodo::detail
