// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Receive rings (kodo::ReceiveRing, channel.hpp): a ring of posted receives over one
// channel end, handed over in transfer order and released in order (channel_end.hpp).
#include <kodo/comm/detail/receive_ring.hpp>

#include <kodo/backends/detail/recording.hpp>

#include <algorithm>

namespace kodo::detail {

void release_ring(RingCore* core, Stream* stream, std::uint64_t transfer) {
  if (!core || core->stopped) throw Error("release on a receive ring that is not open");
  RingCore& r = *core;
  if (transfer != r.released)
    throw Error(cat(r.end->describe(false), ": a receive ring's transfers are released in order; ",
                    "transfer ", transfer, " was released while transfer ", r.released,
                    " is the oldest not released"));
  if (transfer >= std::max(r.handed, r.waited))
    throw Error(cat(r.end->describe(false), ": transfer ", transfer,
                    " was released before the ring handed it over or a stream waited for it"));
  ++r.released;
  if (r.end->recv_route == Route::node) {
    // The receive of transfer + buffers is bookkeeping only here (its data comes once
    // the sender sees the count this release publishes, in stream order), so it is
    // posted now, and neither end's host needs to see the release finish.
    r.free[transfer % r.size()] = true;
    r.post_free();
    r.end->consumed(stream, transfer + 1);
    return;
  }
  if (!stream) return r.free_buffer(transfer);
  auto free_it = recycled([weak = r.weak_from_this(), transfer] {
    if (const auto self = weak.lock()) self->free_buffer(transfer);
  });
  // From a unit of this rank, the buffer's next data is a copy issued later on a stream
  // of the rank: in a recorded turn, that comes after the turn's graph, which holds the
  // reads `stream` was given (recording.hpp). From another rank it may land at any time.
  const Segment& buffer = r.buffers[transfer % r.size()];
  Recording* recording = r.end->host->recording();
  if (r.end->local() && recording && recording->open() &&
      (recording->groups() || buffer.kind == MemoryKind::cuda || buffer.kind == MemoryKind::rocm))
    return recording->after_launch(std::move(free_it));
  r.end->host->when_done(*stream, std::move(free_it));
}

void stop_ring(RingCore& core) { core.stopped = true; }

bool ring_offered_for_streams(const RingCore& core) {
  if (core.stopped || core.end->closed || core.end->recv_route != Route::node ||
      !core.end->node().streams_may_wait())
    return false;
  // A buffer in host memory is filled from its slot by this rank's loop, after the count
  // is up: a device wait would run ahead of that copy.
  if (!backend::streams_run_in_call())
    for (const std::byte* slot : core.end->node_in->slots)
      if (slot) return false;
  return true;
}

bool ring_waits_on_streams(const RingCore* core) {
  // The sender maps the ring when the offer reaches it, or refuses it: the first
  // transfer that comes by the route shows the route taken.
  return core && ring_offered_for_streams(*core) &&
         load_word(core->end->node_in->words + kArrivedWord) != 0;
}

void wait_on_ring(RingCore* core, Stream& stream, std::uint64_t transfer) {
  if (!core || core->stopped) throw Error("a wait on a receive ring that is not open");
  RingCore& r = *core;
  if (!ring_waits_on_streams(core))
    throw Error(cat(r.end->describe(false),
                    ": a stream can wait for a ring's transfer only on the same-node route, once "
                    "a transfer came that way (ReceiveRing::waits_on_streams)"));
  if (transfer < r.released || transfer >= r.released + r.size())
    throw Error(cat(r.end->describe(false), ": a stream waits for transfer ", transfer,
                    " where the ring's buffers hold transfers ", r.released, " to ",
                    r.released + r.size() - 1, " (those released and not yet released)"));
  r.waited = std::max(r.waited, transfer + 1);
  r.end->wait_on_stream(stream, transfer);
}

}  // namespace kodo::detail

namespace kodo {

// A ring over this channel's end: it takes over all of the end's receives.
std::shared_ptr<detail::RingCore> Channel::start_ring(
    std::vector<detail::Segment> buffers, std::shared_ptr<const void> keep, std::size_t element,
    std::function<void(std::uint64_t, std::size_t, std::size_t)> hand) {
  if (!end_) throw Error("a receive ring on a channel that is not open");
  if (end_->ring || end_->receives != 0)
    throw Error(end_->describe(false) +
                ": a receive ring must own all of a channel's receives (open it first, once)");
  if (buffers.empty()) throw Error(end_->describe(false) + ": a receive ring needs a buffer");
  end_->ring = true;
  if (end_->recv_route == detail::Route::pending) end_->offer_ring(buffers, keep);
  auto core = std::make_shared<detail::RingCore>();
  core->end = end_;
  core->buffers = std::move(buffers);
  core->keep = std::move(keep);
  core->element = element;
  core->hand = std::move(hand);
  core->free.assign(core->buffers.size(), true);
  core->post_free();
  return core;
}

}  // namespace kodo
