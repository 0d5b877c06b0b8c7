// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A channel end's transfers: numbered sends and posted receives through UCX, matched
// directly between units of one rank, and closing (channel_end.hpp).
#include <kodo/comm/detail/channel_end.hpp>

#include <kodo/backends/detail/recording.hpp>

namespace kodo::detail {

std::shared_ptr<ChannelRegistry> make_channel_registry() {
  return std::make_shared<ChannelRegistry>();
}

void ChannelEnd::send(Send t) {
  host->expect_event(link.peer_rank);  // the receiver's completion
  if (t.done) host->expect_event();    // and ours
  t.transfer = sends++;
  if (local()) {
    t.stream = link.stream;
    auto& receivers = host->channels().local_receivers;
    auto it = receivers.find(sends_on);
    if (it == receivers.end()) return unnumbered.push_back(std::move(t));  // until it opens
    it->second->arrived.push_back(std::move(t));
    it->second->match_local();
    return;
  }
  sending.emplace(t.transfer, t.segment.bytes);
  if (!send_base || send_route == Route::pending)
    unnumbered.push_back(std::move(t));  // until the peer tells us its number and route
  else
    start_send(std::move(t));
}

void ChannelEnd::flush_unnumbered() {
  if (local() || !send_base || send_route == Route::pending) return;
  while (!unnumbered.empty()) {
    Send t = std::move(unnumbered.front());
    unnumbered.pop_front();
    start_send(std::move(t));
  }
}

void ChannelEnd::start_send(Send t) {
  if (send_route == Route::node) return node_send(std::move(t));
  const std::uint64_t tag = *send_base | (t.transfer & kTransferMask);
  auto self_ptr = shared_from_this();
  Segment from = t.segment;
  Staging staging;
  if (link.mode == CommMode::host_staged && from.bytes != 0) {
    staging = take_staging(from.bytes);
    copy_bytes(link.stream->space(), segment_of(staging), from, from.bytes);
    from = Segment{staging.data(), t.segment.bytes, MemoryKind::host};
  }
  // Data handed over from a recorded turn may still be on its way (recording.hpp): a send
  // of device memory then waits for its stream even when told the data is ready.
  const Recording* recording = host->recording();
  const bool recorded = recording && recording->on() && !recording->groups() &&
                        t.segment.kind != MemoryKind::host;
  const bool ready = t.ready && !staging.data() && !recorded;
  auto start = [self_ptr, tag, from, staging, t = std::move(t)]() mutable {
    self_ptr->host->transport().tag_send(
        self_ptr->link.peer_rank, tag, from,
        [self_ptr, staging, t = std::move(t)](ucs_status_t status, std::size_t) mutable {
          if (status != UCS_OK)
            fatal(self_ptr->describe(true) + ": a send failed: " + ucs_status_string(status));
          self_ptr->sending.erase(t.transfer);
          if (t.done) self_ptr->host->queue_callback(std::move(t.done));
        });
  };
  if (ready)
    start();
  else
    host->when_done(*link.stream, std::move(start));
}

void ChannelEnd::recv(Receive t) {
  t.transfer = receives++;
  if (local()) {
    posted.push_back(std::move(t));
    match_local();
    return;
  }
  if (recv_route == Route::node) {
    node_in->awaiting.push_back(std::move(t));
    return;
  }
  if (recv_route == Route::pending) choose_ucx_receives("");  // a plain receive: UCX
  const std::uint64_t tag = recv_base | (t.transfer & kTransferMask);
  auto self_ptr = shared_from_this();
  const std::size_t capacity = t.segment.bytes;
  const std::uint64_t transfer = t.transfer;
  Segment into = t.segment;
  Staging staging;
  if (link.mode == CommMode::host_staged && into.bytes != 0) {
    staging = take_staging(into.bytes);
    into = segment_of(staging);
    into.bytes = capacity;
  }
  auto handle = std::make_shared<void*>(nullptr);
  *handle = host->transport().tag_recv(
      tag, into,
      [self_ptr, handle, staging, t = std::move(t)](ucs_status_t status,
                                                    std::size_t length) mutable {
        ChannelEnd& end = *self_ptr;
        end.in_flight.erase(*handle);
        if (status == UCS_ERR_CANCELED) return;
        if (status != UCS_OK && status != UCS_ERR_MESSAGE_TRUNCATED)
          fatal(end.describe(false) + ": a receive failed: " + ucs_status_string(status));
        if (std::string problem = end.misfit(t, length); !problem.empty()) {
          // Reported from the loop (not inside UCX), here and on the sending rank.
          return end.host->queue_callback([self_ptr, problem] {
            self_ptr->host->fail_with_peer(self_ptr->link.peer_rank, problem);
          });
        }
        if (!staging.data()) return end.host->queue_callback(std::move(t.done), length);
        // Host-staged: into the view on this end's stream, then the unit learns of it.
        end.host->queue_callback([self_ptr, staging, length, t = std::move(t)]() mutable {
          ChannelEnd& e = *self_ptr;
          copy_bytes(e.link.stream->space(), t.segment, segment_of(staging), length);
          e.host->when_done(*e.link.stream,
                            [staging, length, t = std::move(t)]() mutable { t.done(length); });
        });
      });
  if (*handle) in_flight.emplace(*handle, std::make_pair(transfer, capacity));
}

// Pairs this end's posted receives with the sends that arrived for it, in order: each
// pair is a copy on the sender's stream, and both sides learn of it when it is done.
void ChannelEnd::match_local() {
  while (!posted.empty() && !arrived.empty()) {
    Receive into = std::move(posted.front());
    Send from = std::move(arrived.front());
    posted.pop_front();
    arrived.pop_front();
    const std::size_t bytes = from.segment.bytes;
    if (const std::string problem = misfit(into, bytes); !problem.empty()) fatal(problem);
    Stream& order = *from.stream;
    const Segment to_segment = into.segment, from_segment = from.segment;
    ChannelHost* h = host;
    auto hand_over = recycled([h, bytes, into = std::move(into), from = std::move(from)]() mutable {
      h->queue_callback(std::move(into.done), bytes);
      if (from.done) h->queue_callback(std::move(from.done));
    });
    // In a recorded turn, a copy between device views is made with the turn's other such
    // copies once their senders' streams are done (Recording::defer_copy), and all work
    // issued after the graph's launch runs after it on every stream: both ends learn of the
    // transfer then, without waiting for the device. (The host may read a host or managed
    // view as soon as it learns: that waits for the copy. On the host backend, whose
    // recordings only group a turn's work, the turn's copies are made when it ends.)
    Recording* recording = h->recording();
    auto device_only = [](MemoryKind k) { return k == MemoryKind::cuda || k == MemoryKind::rocm; };
    if (recording && recording->open() &&
        (recording->groups() || (device_only(to_segment.kind) && device_only(from_segment.kind))) &&
        (bytes == 0 || recording->defer_copy(order, to_segment.data, from_segment.data, bytes))) {
      recording->after_launch(std::move(hand_over));
      continue;
    }
    if (bytes != 0) copy_on(order, to_segment, from_segment, bytes);
    h->when_done(order, std::move(hand_over));
  }
}

void ChannelEnd::close() {
  if (closed) return;
  closed = true;
  ChannelRegistry& registry = host->channels();
  registry.open.erase(this);
  registry.senders.erase(sends_on);
  if (local()) {
    registry.local_receivers.erase(receives_on);
    // Never to be matched now; what they hold (views, completions) goes with them.
    posted.clear();
    arrived.clear();
    unnumbered.clear();
  } else {
    unnumbered.clear();
    for (const auto& [request, what] :
         std::map<void*, std::pair<std::uint64_t, std::size_t>>(in_flight))
      host->transport().cancel(request);
    registry.node_ends.erase(this);
    abandon_node_route();
    if (node_in) {
      // The peer may still write them, and keeps them mapped: retired.
      registry.retired.push_back(
          {link.collection, std::move(node_in->keep), std::move(node_in->ranges), -1, {}});
      node_in->awaiting.clear();
    }
    if (node_out) {
      node_out->held.clear();
      registry.retired
          .push_back({link.collection, nullptr, {}, link.peer_rank, std::move(node_out->imports)});
    }
  }
}

}  // namespace kodo::detail
