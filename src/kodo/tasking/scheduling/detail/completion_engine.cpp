// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/scheduling/detail/completion_engine.hpp>

namespace kodo {

void CompletionEngine::when_done(CompletionSource& source, Continuation continuation) {
  const std::uint64_t mark = source.mark();
  Watch* watch = nullptr;
  for (auto& w : watches_)
    if (w.source == &source) watch = &w;
  if (!watch) watch = &watches_.emplace_back(Watch{&source, {}});
  watch->queue.push_back({mark, std::move(continuation)});
  ++pending_;
}

std::size_t CompletionEngine::poll() {
  std::size_t ran = 0;
  // By index: a continuation may add a source, which can move the watches.
  for (std::size_t i = 0; i < watches_.size(); ++i) {
    if (watches_[i].queue.empty()) continue;
    const std::uint64_t reached = watches_[i].source->reached();
    while (!watches_[i].queue.empty() && watches_[i].queue.front().mark <= reached) {
      Continuation c = std::move(watches_[i].queue.front().continuation);
      watches_[i].queue.pop_front();
      --pending_;
      ++ran;
      c();
    }
  }
  return ran;
}

bool CompletionEngine::ready() const {
  for (const auto& w : watches_)
    if (!w.queue.empty() && w.queue.front().mark <= w.source->reached()) return true;
  return false;
}

std::size_t CompletionEngine::ready_count(std::size_t limit) const {
  std::size_t n = 0;
  for (const auto& w : watches_) {
    if (w.queue.empty()) continue;
    const std::uint64_t reached = w.source->reached();
    for (const Waiting& c : w.queue) {
      if (n >= limit || c.mark > reached) break;
      ++n;
    }
  }
  return n;
}

void CompletionEngine::check_health() const {
  for (const auto& w : watches_)
    if (!w.queue.empty()) w.source->check_health();
}

}  // namespace kodo
