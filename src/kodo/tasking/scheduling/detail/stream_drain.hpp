// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Stream draining: owns the knowledge of whether this rank may still have device work
// that nobody awaits, and waits for it before the job may end.
//
// Anything that may launch device work (a dispatched message, a completion other than
// a drain's own) makes the rank dirty. A dirty rank marks every stream of its pool and
// waits, without blocking, for those marks; once they are reached, and nothing else ran
// meanwhile, it is clean. The scheduler starts a drain only when a wave finds the job
// otherwise quiet, so a drain never sits between a message and the next one.

#include <kodo/backends/stream.hpp>
#include <kodo/tasking/scheduling/detail/completion_engine.hpp>

#include <cstddef>
#include <functional>

namespace kodo::detail {

class StreamDrain {
 public:
  // Awaits device work: when_done(stream, continuation).
  using WhenDone = std::function<void(Stream&, std::function<void()>)>;

  void mark_dirty() { dirty_ = true; }
  bool dirty() const { return dirty_; }

  // Polls `engine`; any completion that was not a drain's makes the rank dirty.
  // Returns the number of continuations that ran.
  std::size_t poll(CompletionEngine& engine) {
    const std::size_t drains_before = drains_done_;
    const std::size_t completed = engine.poll();
    if (completed > drains_done_ - drains_before) dirty_ = true;
    return completed;
  }

  // Marks every stream of `pool`; the rank is clean unless work runs before the marks
  // are reached.
  void start(StreamPool& pool, const WhenDone& when_done) {
    pool.for_each([&](Stream& s) { when_done(s, [this] { ++drains_done_; }); });
    dirty_ = false;
  }

 private:
  bool dirty_ = true;  // the program may have launched work before run()
  std::size_t drains_done_ = 0;
};

}  // namespace kodo::detail
