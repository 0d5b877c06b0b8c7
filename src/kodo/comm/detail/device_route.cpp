// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The same-node route of a link handed to device work (device_route.hpp).
#include <kodo/comm/detail/device_route.hpp>

#include <kodo/comm/detail/channel_end.hpp>
#include <kodo/comm/detail/receive_ring.hpp>

namespace kodo::detail {

std::optional<RouteIn> route_in(const RingCore& ring) {
  if (!ring_offered_for_streams(ring) || backend::streams_run_in_call()) return std::nullopt;
  const ChannelEnd& end = *ring.end;
  std::byte* words = end.node_in->device_words;
  return RouteIn{end.device_wait(false, words, kArrivedWord, 0),
                 reinterpret_cast<std::uint64_t*>(words + kConsumedWord), ring.released};
}

std::optional<RouteOut> route_out(const ChannelEnd& end) {
  if (end.closed || end.send_route != Route::node || !end.node_out ||
      backend::streams_run_in_call() || !end.node().streams_may_wait() || !end.sending.empty() ||
      !end.unnumbered.empty() || !end.node_out->held.empty())
    return std::nullopt;
  const ChannelEnd::NodeOut& out = *end.node_out;
  RouteOut route{
      end.device_wait(true, out.device_words, kConsumedWord, 0),         {},       out.capacity, {},
      reinterpret_cast<std::uint64_t*>(out.device_words + kArrivedWord), end.sends};
  for (std::size_t b = 0; b < out.to.size(); ++b) {
    route.to.push_back(out.to[b]);
    route.size_words.push_back(reinterpret_cast<std::uint64_t*>(out.device_words + kSizeWords +
                                                                8 * b));
  }
  return route;
}

void hand_ring_to_device(RingCore& ring) {
  ring.stopped = true;
  ring.early.clear();
  if (ring.end->node_in) ring.end->node_in->awaiting.clear();
}

}  // namespace kodo::detail
