// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Fault checks: owns the question "is device work that has not moved for a while still
// able to complete?". A failed device never reaches its marks, so waiting on it would
// hang; instead, when awaited work has not moved for `limit`, every source with
// waiting work is asked for its health (one driver call each), and a failure becomes a
// kodo::Error. The clock is read only while work is pending without completing.

#include <kodo/tasking/scheduling/detail/completion_engine.hpp>

#include <chrono>
#include <cstddef>

namespace kodo::detail {

class StallWatch {
 public:
  explicit StallWatch(std::chrono::steady_clock::duration limit = std::chrono::milliseconds(100))
      : limit_(limit) {}

  // After each poll of `engine`, which ran `completed` continuations.
  void observe(std::size_t completed, const CompletionEngine& engine) {
    if (completed != 0 || engine.pending() == 0) {
      since_ = {};
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (since_ == std::chrono::steady_clock::time_point{}) {
      since_ = now;
    } else if (now - since_ >= limit_) {
      engine.check_health();
      since_ = now;
    }
  }

 private:
  std::chrono::steady_clock::duration limit_;
  std::chrono::steady_clock::time_point since_{};  // unset while work moves or none waits
};

}  // namespace kodo::detail
