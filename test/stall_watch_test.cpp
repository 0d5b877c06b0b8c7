// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Stall checks (tasking/detail/stall_watch.hpp): work that stops moving is checked for device
// faults.

#include <kodo/tasking/detail/stall_watch.hpp>

#include "expect_error.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace {

// A source whose work never completes, on a device that has failed.
class FailedDevice final : public kodo::CompletionSource {
 public:
  std::uint64_t mark() override { return ++marks_; }
  std::uint64_t reached() const override { return 0; }
  void check_health() const override { throw kodo::Error("device fault on the test source"); }

 private:
  std::uint64_t marks_ = 0;
};

TEST(StallWatch, WorkThatStopsMovingIsCheckedForFaults) {
  FailedDevice device;
  kodo::CompletionEngine engine;
  kodo::detail::StallWatch watch(std::chrono::nanoseconds(0));
  watch.observe(0, engine);  // nothing pending: nothing to check
  engine.when_done(device, [] {});
  watch.observe(0, engine);  // starts the clock
  EXPECT_ERROR(watch.observe(0, engine), "device fault on the test source");
  watch.observe(1, engine);  // something completed: the clock stops
  watch.observe(0, engine);
}

}  // namespace
