// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The same-node route of a channel end: rings in the receiver's node segment, offered,
// accepted or refused, filled by the sender's copies and polled by both ranks
// (channel_end.hpp).
#include <kodo/backends/detail/recording.hpp>
#include <kodo/comm/detail/channel_end.hpp>

#include <algorithm>
#include <thread>

namespace kodo::detail {

// --- the same-node route ------------------------------------------------------------

// Stops the waits on streams for this link's words, on both ranks: the other end will
// never raise them now.
void ChannelEnd::abandon_node_route() {
  if (node_in) store_word(node_in->words + kAbandonedWord, 1);
  if (node_out) store_word(node_out->words + kAbandonedWord, 1);
}

// The receiving end offers its ring: its buffers and words, in its own segment.
void ChannelEnd::offer_ring(const std::vector<Segment>& buffers, std::shared_ptr<const void> keep) {
  NodeChannels& n = node();
  RingMessage m{receives_on, static_cast<std::uint32_t>(recv_base >> kNumberBits),
                epoch,       RingMessage::offer,
                0,           {}};
  NodeIn in;
  in.keep = std::move(keep);
  std::string why;
  if (buffers.size() > kMaxRingBuffers) {
    why = cat("a ring of ", buffers.size(), " buffers (the route takes at most ", kMaxRingBuffers,
              ")");
  } else if (const auto words = n.allocate(words_bytes(buffers.size()))) {
    in.ranges.emplace_back(*words, words_bytes(buffers.size()));
    m.words = *words;
    in.words = n.host(host->rank(), *words);
    in.device_words = n.device(host->rank(), *words);
    for (const Segment& b : buffers) {
      RingBufferOffer o{b.bytes, false, 0, {}};
      in.slots.push_back(nullptr);
      if (b.kind == MemoryKind::host) {
        const auto slot = n.allocate(b.bytes);
        if (!slot) {
          why = cat("the node segment (", n.segment_bytes(),
                    " bytes, KODO_NODE_SEGMENT_BYTES) has no room for the ring's buffers");
          break;
        }
        in.ranges.emplace_back(*slot, b.bytes);
        o.place = *slot;
        in.slots.back() = n.host(host->rank(), *slot);
      } else {
        backend::MemoryExport e;
        if (b.kind == MemoryKind::cuda_managed || b.kind == MemoryKind::rocm_managed) {
          why = "managed memory is not mapped into other processes";
          break;
        }
        if (b.bytes != 0 && !backend::export_memory(b.data, e, why)) break;
        o.exported = true;
        o.place = e.offset;
        o.handle = e.handle;
      }
      m.buffers.push_back(o);
    }
  } else {
    why = cat("the node segment (", n.segment_bytes(),
              " bytes, KODO_NODE_SEGMENT_BYTES) has no room for the ring's words");
  }
  if (!why.empty()) {
    for (const auto& [at, bytes] : in.ranges) n.release(at, bytes);  // never offered
    return choose_ucx_receives(why);
  }
  for (std::uint64_t w = 0; w < words_bytes(buffers.size()); w += 8) store_word(in.words + w, 0);
  recv_route = Route::node;
  wait_codes[0] = ++host->channels().last_wait_code;
  node_in = std::move(in);
  host->channels().node_ends.insert(this);
  host->post(link.peer_rank, ring_message(m, host->rank()));
}

// The receiving end takes UCX after announcing that a ring may follow: the peer learns
// it (its sends wait for the route). `why`: why the same-node route could not be taken
// ("" for a plain receive, which always goes by UCX).
void ChannelEnd::choose_ucx_receives(const std::string& why) {
  if (!why.empty()) {
    const std::string line =
        cat(describe(false), ": the same-node route is not possible (", why, "); UCX carries it");
    if (node().selection() == ChannelSelection::device)
      throw Error(line + " (KODO_CHANNELS=device makes this an error)");
    node().notice(cat("a receive ring uses UCX, not the same-node route: ", why));
  }
  recv_route = Route::ucx;
  host->post(link.peer_rank, ring_message({receives_on,
                                           static_cast<std::uint32_t>(recv_base >> kNumberBits),
                                           epoch,
                                           RingMessage::ucx,
                                           0,
                                           {}},
                                          host->rank()));
}

// The sending end maps the buffers the receiver offered.
void ChannelEnd::accept_ring(const RingMessage& ring) {
  NodeChannels& n = node();
  NodeOut out{n.host(link.peer_rank, ring.words),
              n.device(link.peer_rank, ring.words),
              {},
              {},
              {},
              decltype(NodeOut::gate)(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                                         "kodo::same-node copy gate"),
                                      1),
              {}};
  std::string why;
  for (const RingBufferOffer& b : ring.buffers) {
    out.capacity.push_back(b.capacity);
    if (!b.exported) {
      out.to.push_back(n.device(link.peer_rank, b.place));
    } else if (b.capacity == 0) {
      out.to.push_back(nullptr);
    } else if (std::size_t bytes = 0;
               void* start = n.import(link.peer_rank, b.handle, bytes, why)) {
      out.imports.push_back(b.handle);
      if (b.place > bytes || b.capacity > bytes - b.place)
        throw Error(cat("field place of a same-node ring message from rank ", link.peer_rank,
                        ": a buffer of ", b.capacity, " bytes at offset ", b.place,
                        " of an allocation of ", bytes, " bytes"));
      out.to.push_back(static_cast<std::byte*>(start) + b.place);
    } else {
      for (const auto& handle : out.imports) n.unimport(link.peer_rank, handle);
      return refuse_ring(ring, why);
    }
  }
  send_route = Route::node;
  wait_codes[1] = ++host->channels().last_wait_code;
  node_out = std::move(out);
  host->channels().node_ends.insert(this);
}

void ChannelEnd::refuse_ring(const RingMessage& ring, const std::string& why) {
  const std::string line =
      cat(describe(true), ": cannot map rank ", link.peer_rank, "'s ring buffers (", why, ")");
  if (node().selection() == ChannelSelection::device)
    throw Error(line + " (KODO_CHANNELS=device makes this an error)");
  node().notice(cat("a receive ring uses UCX, not the same-node route: ", why));
  send_route = Route::ucx;
  RingMessage refusal{ring.link, ring.number, ring.epoch, RingMessage::refusal, 0, {}};
  host->post(link.peer_rank, ring_message(refusal, host->rank()));
}

// The route of this (sending) end's opening, once its receiver has said it.
void ChannelEnd::settle_send_route() {
  if (local() || send_route != Route::pending) return;
  auto& notes = host->channels().notes;
  // Notes of this link's earlier openings are stale.
  for (auto it = notes.lower_bound({sends_on, 0});
       it != notes.end() && it->first.first == sends_on && it->first.second < epoch;)
    it = notes.erase(it);
  const auto it = notes.find({sends_on, epoch});
  if (it == notes.end()) return;
  const ChannelRegistry::RouteNote note = std::move(it->second);
  if (note.ring) {
    notes.erase(it);
    if (note.ring->route == RingMessage::offer)
      accept_ring(*note.ring);
    else
      send_route = Route::ucx;
  } else if (note.announced && !note.ring_may_follow) {
    notes.erase(it);
    send_route = Route::ucx;
  } else {
    return;
  }
  flush_unnumbered();
}

void ChannelEnd::node_send(Send t) {
  NodeOut& out = *node_out;
  const std::size_t b = t.transfer % out.to.size();
  if (t.segment.bytes > out.capacity[b])
    host->fail_with_peer(link.peer_rank,
                         misfit_at_sender(t.transfer, t.segment.bytes, out.capacity[b]));
  // On GPUs the transfer's kernel waits for its buffer on the device (publish), so work
  // enqueued after it stays after it; the host backend, whose streams cannot wait
  // without holding the rank, holds the transfer here instead, and so do ranks sharing
  // a GPU (a kernel waiting there holds the GPU for its time slice), and so does a
  // transfer from host memory: its copy (from pageable memory) returns only once the
  // stream reaches it, and behind a wait for the peer's release it would stop this
  // rank's loop, which the peer may itself be waiting for.
  const bool hold_on_host = backend::streams_run_in_call() || !node().streams_may_wait() ||
                            t.segment.kind == MemoryKind::host;
  if (hold_on_host && (!out.held.empty() || t.transfer >= out.to.size())) {
    const std::uint64_t consumed = load_word(out.words + kConsumedWord);
    if (!out.held.empty() || consumed + out.to.size() <= t.transfer) {
      out.held.push_back(std::move(t));  // its buffer is not free yet
      auto& most = host->channels().most_held;
      most = std::max(most, out.held.size());
      return;
    }
  }
  publish(std::move(t));
}

// Transfer t into its buffer, then its size and count, in order on this end's stream.
void ChannelEnd::publish(Send t) {
  NodeOut& out = *node_out;
  const std::size_t b = t.transfer % out.to.size();
  // Buffer b is free once the receiver consumed transfer t - buffers.
  backend::DeviceWait free{};
  if (t.transfer >= out.to.size())
    free = device_wait(true, out.device_words, kConsumedWord, t.transfer + 1 - out.to.size());
  if (Recording* r = host->recording()) {
    // A graph after a wait for another rank would hold the rank's next turn behind it,
    // which that rank may wait for (not a wait already over, nor the host backend's,
    // which holds the transfer instead); a copy from host memory cannot be recorded.
    if (free.word && r->on() && !backend::streams_run_in_call() &&
        load_word(out.words + kConsumedWord) + out.to.size() <= t.transfer)
      r->stop("a stream waits on the device for another rank (the same-node route)");
    else if (r->open() && t.segment.kind == MemoryKind::host)
      r->close_early();
  }
  backend::enqueue_copy_and_publish(
      link.stream->native_handle(), free, out.to[b], t.segment.data, t.segment.bytes,
      t.segment.kind != MemoryKind::host,
      reinterpret_cast<std::uint64_t*>(out.device_words + kSizeWords + 8 * b), t.segment.bytes,
      reinterpret_cast<std::uint64_t*>(out.device_words + kArrivedWord), t.transfer + 1,
      out.gate.data());
  host->when_done(*link.stream, [self_ptr = shared_from_this(), t = std::move(t)]() mutable {
    self_ptr->sending.erase(t.transfer);
    if (t.done) self_ptr->host->queue_callback(std::move(t.done));
  });
}

// The size of transfer `r` that arrived in this end's ring: a word the sender wrote,
// read once (the value checked must be the value used).
std::uint64_t ChannelEnd::landing_bytes(const Receive& r) const {
  const NodeIn& in = *node_in;
  return load_word(in.words + kSizeWords + 8 * (r.transfer % in.slots.size()));
}

// A transfer of `bytes` (checked) that arrived in this end's ring: copied out of its
// slot (host backend), handed to the unit from the loop.
void ChannelEnd::land(Receive r, std::uint64_t bytes) {
  NodeIn& in = *node_in;
  const std::size_t b = r.transfer % in.slots.size();
  if (in.slots[b] && bytes != 0)
    copy_bytes(link.stream->space(), r.segment, Segment{in.slots[b], bytes, MemoryKind::host},
               bytes);
  host->queue_callback(std::move(r.done), static_cast<std::size_t>(bytes));
}

// The receiving end's buffers of transfers 0 .. transfers - 1 may be written again once
// the work enqueued on `stream` so far is done (now, without a stream). The count is
// stored in stream order (never on the host while an earlier store is still to run on a
// stream: it would then go back), so the sender's streams need no host to learn it.
void ChannelEnd::consumed(Stream* stream, std::uint64_t transfers) {
  if (!node_in) return;
  NodeIn& in = *node_in;
  in.released = transfers;
  if (in.consumed_stream && !stream) stream = in.consumed_stream;
  if (!stream || backend::streams_run_in_call()) {
    store_word(in.words + kConsumedWord, transfers);
    return;
  }
  if (in.consumed_stream && in.consumed_stream != stream) stream->wait_for(*in.consumed_stream);
  in.consumed_stream = stream;
  backend::enqueue_counter_write(stream->native_handle(),
                                 reinterpret_cast<std::uint64_t*>(in.device_words + kConsumedWord),
                                 transfers);
}

// Work enqueued on `stream` from now on runs once `transfer` has arrived (its data in
// its buffer) or either end closed: on GPUs a wait on the device. The host backend's
// streams run work in the call, so there the rank moves same-node transfers (landing
// this one in its view) until it is in, checking that the peer still runs.
void ChannelEnd::wait_on_stream(Stream& stream, std::uint64_t transfer) {
  const backend::DeviceWait w =
      device_wait(false, node_in->device_words, kArrivedWord, transfer + 1);
  if (!backend::streams_run_in_call()) {
    if (Recording* r = host->recording(); r && r->on())
      r->stop("a stream waits on the device for another rank (the same-node route)");
    backend::enqueue_wait(stream.native_handle(), w);
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::nanoseconds(node().wait_timeout_ns());
  for (;;) {
    const bool over = backend::enqueue_wait(stream.native_handle(), w);  // here: a test
    poll_node_links(host->channels(), node());
    if (closed || load_word(node_in->words + kAbandonedWord) != 0) return;
    if (over && (node_in->awaiting.empty() || node_in->awaiting.front().transfer > transfer))
      return;
    if (std::chrono::steady_clock::now() > deadline)
      fatal(cat(describe(false), ": a wait for transfer ", transfer, " from rank ", link.peer_rank,
                " ran out (KODO_DEVICE_WAIT_SECONDS)"));
    // The peer may share this core: let it run (a rank that spins without yielding
    // makes each hop cost a scheduler time slice when cores are oversubscribed).
    std::this_thread::yield();
  }
}

std::size_t ChannelEnd::poll_node() {
  std::size_t moved = 0;
  if (node_in && !node_in->awaiting.empty()) {
    // The count of transfers published is the sender's word: it only grows, and by no
    // more than the buffers this end released. Each is checked before it is taken.
    // Every rank of the node can write the word (the trust model: same-node memory is
    // trusted), so an error does not say that the sender wrote it.
    const std::uint64_t arrived = load_word(node_in->words + kArrivedWord);
    const auto whose = [&] {
      return cat(" (rank ", link.peer_rank, " broke the same-node protocol, or another process ",
                 "of this node wrote the ring's words)");
    };
    if (arrived < node_in->arrived_seen)
      host->fail_with_peer(link.peer_rank,
                           cat(describe(false), ": the count of transfers published from rank ",
                               link.peer_rank, " went back from ", node_in->arrived_seen, " to ",
                               arrived, whose()));
    if (arrived > node_in->released + node_in->slots.size())
      host->fail_with_peer(link.peer_rank,
                           cat(describe(false), ": the count of transfers published from rank ",
                               link.peer_rank, " says transfer ", arrived - 1, " into a ring of ",
                               node_in->slots.size(), " buffers that had released transfers up to ",
                               static_cast<std::int64_t>(node_in->released) - 1, " only", whose()));
    node_in->arrived_seen = arrived;
    while (!node_in->awaiting.empty() && node_in->awaiting.front().transfer < arrived) {
      const Receive& next = node_in->awaiting.front();
      const std::uint64_t bytes = landing_bytes(next);
      if (bytes > next.segment.bytes || bytes % next.element != 0)
        host->fail_with_peer(link.peer_rank, misfit(next, static_cast<std::size_t>(bytes)));
      Receive r = std::move(node_in->awaiting.front());
      node_in->awaiting.pop_front();
      land(std::move(r), bytes);
      ++moved;
    }
  }
  if (node_out && !node_out->held.empty()) {
    const std::uint64_t consumed = load_word(node_out->words + kConsumedWord);
    while (!node_out->held.empty() &&
           consumed + node_out->to.size() > node_out->held.front().transfer) {
      Send t = std::move(node_out->held.front());
      node_out->held.pop_front();
      publish(std::move(t));
      ++moved;
    }
  }
  return moved;
}

// What a wait on a stream that ran out (its failure code) waited for.
std::string describe_failed_wait(const ChannelRegistry& registry, const NodeChannels& node,
                                 std::uint64_t code) {
  for (const ChannelEnd* e : registry.node_ends)
    for (const bool outgoing : {false, true}) {
      if ((outgoing ? !e->node_out.has_value() : !e->node_in.has_value()) ||
          e->failure_code(outgoing) != code)
        continue;
      const int peer = e->link.peer_rank;
      return cat(e->describe(outgoing), ": a wait on the device ",
                 outgoing ? "for the receiver to free a buffer" : "for a transfer", " from rank ",
                 peer, " ran out after ", node.wait_timeout_ns() / 1e9,
                 " s (KODO_DEVICE_WAIT_SECONDS); rank ", peer,
                 node.alive(peer) ? " still runs" : " has exited");
    }
  return cat("a wait on the device for a same-node channel ran out after ",
             node.wait_timeout_ns() / 1e9, " s (KODO_DEVICE_WAIT_SECONDS; failure code ", code,
             ")");
}

std::size_t poll_node_links(ChannelRegistry& registry, NodeChannels& node) {
  if (const std::uint64_t code = load_word(reinterpret_cast<std::byte*>(node.failure_word())))
    fatal(describe_failed_wait(registry, node, code));
  std::size_t moved = 0;
  bool waiting = false;
  for (ChannelEnd* e : registry.node_ends) {
    moved += e->poll_node();
    waiting = waiting || (e->node_in && !e->node_in->awaiting.empty()) ||
              (e->node_out && !e->node_out->held.empty());
  }
  if (moved != 0 || !waiting) {
    registry.quiet_since = {};
    return moved;
  }
  // Nothing moved: once a second, is every peer we wait on still running?
  const auto now = std::chrono::steady_clock::now();
  if (registry.quiet_since == std::chrono::steady_clock::time_point{}) {
    registry.quiet_since = now;
  } else if (now - registry.quiet_since >= std::chrono::seconds(1)) {
    registry.quiet_since = now;
    for (ChannelEnd* e : registry.node_ends) {
      const bool receiving = e->node_in && !e->node_in->awaiting.empty();
      if ((receiving || (e->node_out && !e->node_out->held.empty())) &&
          !e->node().alive(e->link.peer_rank))
        fatal(cat("rank ", e->link.peer_rank, " (process ", e->node().pid_of(e->link.peer_rank),
                  ") exited while the ", e->describe(!receiving), " waited for it (transfer ",
                  receiving ? e->node_in->awaiting.front().transfer
                            : e->node_out->held.front().transfer,
                  ")"));
    }
  }
  return 0;
}

void forget_retired(ChannelRegistry& registry) { registry.retired.clear(); }

std::size_t reclaim_closed_links(ChannelRegistry& registry, NodeChannels* node,
                                 std::uint32_t collection, int stage) {
  std::size_t handled = 0;
  for (auto it = registry.retired.begin(); it != registry.retired.end();) {
    ChannelRegistry::Retired& r = *it;
    if (r.collection != collection) {
      ++it;
      continue;
    }
    if (stage == 0) {
      if (node)
        for (const auto& handle : r.imports) node->unimport(r.peer, handle);
      r.imports.clear();
      ++it;
      continue;
    }
    if (node)
      for (const auto& [at, bytes] : r.ranges) node->release(at, bytes);
    it = registry.retired.erase(it);
    ++handled;
  }
  return handled;
}

void abandon_node_routes(ChannelRegistry& registry) {
  for (ChannelEnd* e : registry.node_ends) e->abandon_node_route();
}

NodeRouteCounts node_route_counts(const ChannelRegistry& registry) {
  NodeRouteCounts counts;
  for (const ChannelEnd* e : registry.node_ends) {
    counts.receiving += e->recv_route == Route::node;
    counts.sending += e->send_route == Route::node;
  }
  counts.most_held = registry.most_held;
  return counts;
}

}  // namespace kodo::detail
