// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Stall checks (tasking/scheduling/detail/stall_watch.hpp): work that stops moving is checked for
// device faults.

#include <kodo/tasking/scheduling/detail/stall_watch.hpp>

#include "expect_error.hpp"
#include "failed_source.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace {

TEST(StallWatch, WorkThatStopsMovingIsCheckedForFaults) {
  FailedSource device("device fault on the test source");
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
