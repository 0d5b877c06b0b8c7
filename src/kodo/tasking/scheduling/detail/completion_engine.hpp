// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Continuations that run when device work is done, without blocking the rank.
//
// when_done(source, c) marks the work enqueued on `source` so far and queues c behind
// that mark. poll() reads one counter per source that has waiting continuations and
// runs, in order, those whose mark has been reached. Sources complete independently of
// each other (out of order); within a source, marks complete in order, as work on a
// stream does. The cost of a poll grows with the number of sources (streams), not with
// the number of waiting continuations.

#include <kodo/backends/stream.hpp>
#include <kodo/core/detail/recycled.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

namespace kodo {

class CompletionEngine {
 public:
  using Continuation = std::function<void()>;

  // Runs `continuation` (from a later poll) once the work enqueued on `source` so far
  // is done.
  void when_done(CompletionSource& source, Continuation continuation);

  // Runs every continuation whose work is done; returns how many ran. Continuations
  // may call when_done.
  std::size_t poll();

  // Continuations still waiting.
  std::size_t pending() const { return pending_; }
  // Whether a poll now would run a continuation (one counter read per busy source).
  bool ready() const;
  // How many continuations a poll now would run, counted up to `limit`.
  std::size_t ready_count(std::size_t limit) const;

  // Asks every source with waiting continuations whether its work can still complete;
  // throws kodo::Error if not. For when nothing has completed for a long while.
  void check_health() const;

 private:
  struct Waiting {
    std::uint64_t mark;
    Continuation continuation;
  };
  struct Watch {
    CompletionSource* source;
    detail::RecycledDeque<Waiting> queue;
  };
  std::vector<Watch> watches_;  // one per source ever used; few (a stream pool)
  std::size_t pending_ = 0;
};

}  // namespace kodo
