// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The watchdog (tasking/scheduling/detail/watchdog.hpp): a loop that stops turning inside run() is
// reported once, naming what it is inside; a loop that turns, or is not inside run(), is
// not; a collective phase that waits too long is reported, named, in run() or out.
// (Ending the job under KODO_STALL_EXIT: the blocked_entry_method and
// checkpoint_without_a_peer ctests.)

#include <kodo/tasking/scheduling/detail/watchdog.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

namespace {

using kodo::detail::Watchdog;
using namespace std::chrono_literals;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Watchdog, SaysWhatTheLoopIsInside) {
  Watchdog w(std::nullopt, false, 0);
  EXPECT_FALSE(w.active());  // no thread without a limit
  EXPECT_NE(w.where().find("in no entry method"), std::string::npos);
  const std::string method = "Heat::step";
  {
    const kodo::detail::WatchdogScope outer(w, {Watchdog::Inside::channel_callback});
    EXPECT_NE(w.where().find("channel's completion callback"), std::string::npos);
    {
      const kodo::detail::WatchdogScope inner(w, {Watchdog::Inside::entry_method,
                                                  &method,
                                                  2,
                                                  {1, 7, 0}});
      EXPECT_EQ(w.where(), "inside entry method Heat::step of unit (1,7,0) of collection 2");
    }
    // Scopes nest: leaving the inner one restores the outer.
    EXPECT_NE(w.where().find("channel's completion callback"), std::string::npos);
  }
  EXPECT_NE(w.where().find("in no entry method"), std::string::npos);
  {
    const kodo::detail::WatchdogScope s(w, {Watchdog::Inside::reduction_callback});
    EXPECT_EQ(w.where(), "inside a reduction's on_reduced callback");
  }
}

TEST(Watchdog, ReportsALoopThatStopsTurningOnceAndNothingElse) {
  const std::string method = "Heat::step";
  testing::internal::CaptureStderr();
  {
    Watchdog w(0.2, false, 5);
    ASSERT_TRUE(w.active());
    // Not inside run(): never reported, however long.
    std::this_thread::sleep_for(400ms);
    // Inside run() and turning: not reported.
    w.running(true);
    for (auto end = std::chrono::steady_clock::now() + 400ms;
         std::chrono::steady_clock::now() < end; std::this_thread::sleep_for(10ms))
      w.turned();
    // Stuck inside an entry method: reported once.
    {
      const kodo::detail::WatchdogScope s(w,
                                          {Watchdog::Inside::entry_method, &method, 0, {3, 0, 0}});
      std::this_thread::sleep_for(800ms);
    }
    w.running(false);
  }
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(out, "kodo: rank 5 is blocked"), 1u) << out;
  EXPECT_EQ(count(out, "it is inside entry method Heat::step of unit (3,0,0) of collection 0"), 1u)
      << out;
}

}  // namespace

namespace {

// A collective phase of kodo's is watched outside run() too, and named; leaving it
// restores what the loop was doing (issue 54: hangs outside run() were never reported).
TEST(Watchdog, ReportsAPhaseThatWaitsTooLongAndNamesIt) {
  testing::internal::CaptureStderr();
  {
    Watchdog w(0.2, false, 4);
    EXPECT_FALSE(w.running());
    {
      const kodo::detail::WatchdogPhase phase(w, "writing a checkpoint (kodo::write_checkpoint)");
      EXPECT_TRUE(w.running());
      EXPECT_EQ(w.where(), "in writing a checkpoint (kodo::write_checkpoint)");
      std::this_thread::sleep_for(800ms);
    }
    EXPECT_FALSE(w.running());  // outside run() again: not watched
    EXPECT_NE(w.where().find("in no entry method"), std::string::npos);
    // Inside run(), a phase nests like a scope: run() goes on being watched after it.
    w.running(true);
    {
      const kodo::detail::WatchdogPhase phase(w, "a migration (kodo::migrate)");
      EXPECT_EQ(w.where(), "in a migration (kodo::migrate)");
    }
    EXPECT_TRUE(w.running());
    w.running(false);
  }
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(out, "kodo: rank 4 is blocked: it has waited "), 1u) << out;
  EXPECT_EQ(count(out, " s in writing a checkpoint (kodo::write_checkpoint) for other ranks"), 1u)
      << out;
  EXPECT_EQ(count(out, "scheduler loop"), 0u) << out;
}

}  // namespace

namespace {

// A wait inside a phase names what it waits for (a peer's message) in the report, and
// the next wait starts unnamed again; a wait that moves on is progress, not a stall.
TEST(Watchdog, NamesWhatAPhaseWaitsFor) {
  testing::internal::CaptureStderr();
  {
    Watchdog w(0.2, false, 2);
    const kodo::detail::WatchdogPhase phase(w, "a migration (kodo::migrate)");
    {
      kodo::detail::WatchdogWait waiting(w, "the header of unit (1,0,0) from rank 1");
      for (int i = 0; i < 40; ++i) {  // 400 ms, moving on every 10 ms: not reported
        std::this_thread::sleep_for(10ms);
        waiting.update("the records of unit (1,0,0) from rank 1");
      }
      std::this_thread::sleep_for(800ms);  // stuck: reported, once
    }
  }
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(out, "kodo: rank 2 is blocked"), 1u) << out;
  EXPECT_EQ(count(out,
                  " s in a migration (kodo::migrate) for the records of unit (1,0,0) "
                  "from rank 1. "),
            1u)
      << out;
}

}  // namespace
