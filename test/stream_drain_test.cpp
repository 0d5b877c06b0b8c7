// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Stream draining (tasking/scheduling/detail/stream_drain.hpp): clean only while nothing but its
// own marks complete.

#include <kodo/tasking/scheduling/detail/stream_drain.hpp>

#include "test_runtime.hpp"

#include <gtest/gtest.h>

namespace {

TEST(StreamDrain, CleanOnlyWhileNothingButItsOwnMarksComplete) {
  auto& pool = test_runtime().streams();
  kodo::CompletionEngine engine;
  kodo::detail::StreamDrain drain;
  EXPECT_TRUE(drain.dirty());  // work may have been launched before
  drain.start(pool,
              [&](kodo::Stream& s, std::function<void()> f) { engine.when_done(s, std::move(f)); });
  EXPECT_FALSE(drain.dirty());
  EXPECT_EQ(engine.pending(), static_cast<std::size_t>(2 * pool.per_priority()));
  while (engine.pending() != 0) drain.poll(engine);
  EXPECT_FALSE(drain.dirty());  // only the drain's own marks completed
  engine.when_done(pool.compute(0), [] {});
  while (engine.pending() != 0) drain.poll(engine);
  EXPECT_TRUE(drain.dirty());  // other work completed: it may have launched more
}

}  // namespace
