// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Internal to comm/: the state of a receive ring (kodo::ReceiveRing, channel.hpp): a ring
// of posted receives over one channel end, handed over in transfer order and released in
// order (receive_ring.cpp; device_route.cpp hands one to device work).
#include <kodo/comm/detail/channel_end.hpp>
#include <kodo/core/detail/recycled.hpp>

#include <map>

namespace kodo::detail {

struct RingCore : std::enable_shared_from_this<RingCore> {
  std::shared_ptr<ChannelEnd> end;
  std::vector<Segment> buffers;
  std::shared_ptr<const void> keep;  // the views behind `buffers`
  std::size_t element = 1;
  std::function<void(std::uint64_t, std::size_t, std::size_t)> hand;  // transfer, bytes, buffer
  std::vector<bool> free;                                             // by buffer: may be posted
  std::uint64_t posted = 0, handed = 0, released = 0;
  std::uint64_t waited = 0;                       // transfers below it were waited for on a stream
  RecycledMap<std::uint64_t, std::size_t> early;  // arrived ahead of `handed`: bytes
  bool stopped = false;

  std::size_t size() const { return buffers.size(); }

  // Posts free buffers for the next transfers, in transfer order (transfer t goes to
  // buffer t % size, and the channel matches receives in the order they are posted).
  void post_free() {
    while (!stopped && !end->closed && free[posted % size()]) {
      const std::size_t b = posted % size();
      free[b] = false;
      const std::uint64_t transfer = posted++;
      // A weak reference: the channel end holds its receives, and the ring the end.
      end->recv({buffers[b], keep, element, false,
                 recycled([weak = weak_from_this(), transfer](std::size_t bytes) {
                   if (const auto self = weak.lock()) self->arrive(transfer, bytes);
                 })});
    }
  }

  void free_buffer(std::uint64_t transfer) {
    free[transfer % size()] = true;
    post_free();
  }

  void arrive(std::uint64_t transfer, std::size_t bytes) {
    if (stopped) return;
    early.emplace(transfer, bytes);
    for (auto it = early.find(handed); it != early.end(); it = early.find(handed)) {
      const std::size_t n = it->second;
      early.erase(it);
      const std::uint64_t t = handed++;
      hand(t, n, t % size());
      if (stopped) return;  // the unit closed its ring from inside
    }
  }
};

// Whether streams may wait for the ring's transfers once its sender takes the route it
// offered: a same-node ring into device memory, on a GPU no other rank shares
// (ReceiveRing::waits_on_streams also asks that the first transfer came that way).
bool ring_offered_for_streams(const RingCore& core);

}  // namespace kodo::detail
