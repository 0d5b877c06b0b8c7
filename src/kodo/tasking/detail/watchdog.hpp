#pragma once
// The watchdog: a thread that notices when this rank's scheduler loop stops turning
// inside run() (an entry method that blocks: an MPI collective, a wait for another rank,
// an endless loop) and says where the rank is stuck. The stall report of the loop itself
// cannot: it runs in the loop that is blocked, and it needs every rank's answer.
//
// The loop tells it, with relaxed atomic stores only, that it turned and what user code
// it is inside (an entry method of which unit, a device-completion continuation, a
// reduction's callback). After KODO_STALL_SECONDS without a turn, the watchdog prints
// one report on this rank; under KODO_STALL_EXIT=1 it then ends the job (MPI_Abort,
// exit status 3 on every rank): the blocked thread cannot be unwound from outside.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace kodo::detail {

class Watchdog {
 public:
  enum class Inside : std::uint8_t { nothing, entry_method, continuation, reduction_callback };

  // No thread unless `limit_seconds` is set.
  Watchdog(std::optional<double> limit_seconds, bool end_job, int rank);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  bool active() const { return thread_.joinable(); }
  // Only a loop inside run() is watched.
  void running(bool yes) {
    turned();
    running_.store(yes, std::memory_order_relaxed);
  }
  void turned() { turns_.fetch_add(1, std::memory_order_relaxed); }
  // The loop is inside `what` (for an entry method: `method` of unit `unit` of collection
  // `collection`; `method` outlives the call) until leave().
  void enter(Inside what, const std::string* method = nullptr, std::uint32_t collection = 0,
             std::int64_t unit = 0) {
    method_.store(method, std::memory_order_relaxed);
    collection_.store(collection, std::memory_order_relaxed);
    unit_.store(unit, std::memory_order_relaxed);
    inside_.store(what, std::memory_order_relaxed);
  }
  void leave() {
    inside_.store(Inside::nothing, std::memory_order_relaxed);
    turned();
  }

  // What the report says the loop is inside (for tests and the report).
  std::string where() const;

 private:
  void watch();

  double limit_ = 0;
  bool end_job_ = false;
  int rank_ = 0;
  std::atomic<std::uint64_t> turns_{0};
  std::atomic<bool> running_{false};
  std::atomic<Inside> inside_{Inside::nothing};
  std::atomic<const std::string*> method_{nullptr};
  std::atomic<std::uint32_t> collection_{0};
  std::atomic<std::int64_t> unit_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// Marks the loop inside something for the life of the object (a no-op for an idle
// watchdog beyond two stores).
class WatchdogScope {
 public:
  WatchdogScope(Watchdog& w, Watchdog::Inside what, const std::string* method = nullptr,
                std::uint32_t collection = 0, std::int64_t unit = 0)
      : w_(w) {
    w_.enter(what, method, collection, unit);
  }
  ~WatchdogScope() { w_.leave(); }
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;

 private:
  Watchdog& w_;
};

}  // namespace kodo::detail
