// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// A receive ring whose transfers a task awaits by number: "the rows of step k".
/// ```
///   kodo::AwaitableRing<View> halos(channel, {View("a", n), View("b", n)});   // once
///   for (std::uint64_t k = 0; k < steps; ++k) {                             // in a task
///     const kodo::Arrival<View> rows = co_await halos.transfer(k);
///     unpack(stream, rows.view);
///     halos.release(stream, k);   // its buffer is the sender's again once `stream` has read it
///   }
/// ```
/// The ring is Channel::open_ring's (comm/channel.hpp): transfer t lands in buffer
/// t % buffers, transfers are handed over in order and released in order. Those that arrive
/// before a task awaits them wait here, so a neighbour one step ahead (or more, up to the
/// buffers) is harmless.

#include <kodo/comm/channel.hpp>
#include <kodo/core/error.hpp>
#include <kodo/tasking/tasks/task.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <utility>
#include <vector>

namespace kodo {

/// A receive ring whose transfers a task awaits by number (see this file's description).
/// Awaiting a transfer that arrived already goes on at once. One task awaits a given
/// transfer; awaiting one that another task awaits is an error.
template <class V>
class AwaitableRing {
 public:
  /// A ring that is not open.
  AwaitableRing() = default;
  /// Opens a ring over `buffers` (at least one; each takes up to its size) on `channel`,
  /// which then takes no recv() (as Channel::open_ring).
  AwaitableRing(Channel& channel, std::vector<V> buffers) : state_(std::make_shared<State>()) {
    ring_ = channel.open_ring(std::move(buffers),
                              [state = state_](const Arrival<V>& a) { state->arrive(a); });
  }

  /// Awaited in a task: transfer `k` (0, 1, 2, ... on the channel), once it is in.
  auto transfer(std::uint64_t k, std::source_location where = std::source_location::current()) {
    if (!state_) throw Error("transfer() of an AwaitableRing that is not open");
    return detail::Awaitable<Transfer>(Transfer{state_.get(), k, where});
  }
  /// The buffer of transfer `k` may be written again: now, or once the work enqueued on
  /// `stream` so far (reading it) is done (ReceiveRing::release).
  ///@{
  void release(std::uint64_t k) { ring_.release(k); }
  void release(Stream& stream, std::uint64_t k) { ring_.release(stream, k); }
  ///@}
  /// The ring itself, for waits on streams (ReceiveRing::wait).
  ReceiveRing<V>& ring() { return ring_; }
  /// Whether the ring was opened (and not moved from).
  bool is_open() const { return ring_.is_open(); }

 private:
  struct State : detail::KeyedArrivals<std::uint64_t, Arrival<V>> {
    void arrive(Arrival<V> a) {
      const std::uint64_t k = a.transfer;
      if (auto w = this->deliver(k, a))
        w->done();  // from the scheduler loop: the ring hands transfers over from there
      else
        this->hold(k, std::move(a));
    }
  };
  struct Transfer {
    State* state;
    std::uint64_t k;
    std::source_location where;
    std::optional<Arrival<V>> arrival{};
    bool ready() {
      return arrival || state->take_held(k, arrival);  // (taken by an earlier ask)
    }
    void start(detail::TaskRecord& task, std::function<void()> done) {
      if (!state->await(k, {&arrival, &task, std::move(done)}))
        throw Error(detail::cat("transfer ", k,
                                " of a receive ring is awaited by two tasks at once"));
    }
    Arrival<V> result() { return std::move(*arrival); }
    const char* what() const { return "transfer of a receive ring (AwaitableRing::transfer)"; }
    std::int64_t number() const { return static_cast<std::int64_t>(k); }
  };

  std::shared_ptr<State> state_;  // before ring_: the ring's hand-over holds it
  ReceiveRing<V> ring_;
};

}  // namespace kodo
