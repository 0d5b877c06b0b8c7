// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What the ends of a link tell each other, as messages between ranks: link
// announcements (numbering) and ring offers, refusals and acceptances, each field
// checked on arrival (channel_end.hpp).
#include <kodo/comm/detail/channel_end.hpp>

#include <algorithm>

namespace kodo::detail {

Message ring_message(const RingMessage& ring, int from_rank) {
  Message m;
  const std::int64_t target = ring.route == RingMessage::refusal ? ring.link.receiver
                                                                 : ring.link.sender;
  m.header = {MessageKind::channel_ring, ring.link.collection, ring.number, target, from_rank};
  ByteWriter w;
  pack<std::int64_t>(w, ring.link.receiver);
  pack<std::int64_t>(w, ring.link.sender);
  pack<std::int32_t>(w, ring.link.port);
  pack<std::uint32_t>(w, ring.epoch);
  pack<std::uint32_t>(w, ring.route);
  pack<std::uint32_t>(w, static_cast<std::uint32_t>(ring.buffers.size()));
  pack<std::uint64_t>(w, ring.words);
  for (const RingBufferOffer& b : ring.buffers) {
    pack<std::uint64_t>(w, b.capacity);
    pack<std::uint32_t>(w, b.exported ? 1 : 0);
    pack<std::uint32_t>(w, 0);
    pack<std::uint64_t>(w, b.place);
    for (const std::byte x : b.handle) pack<std::uint8_t>(w, static_cast<std::uint8_t>(x));
  }
  m.payload = WireAccess::take_bytes(w);
  return m;
}

RingMessage read_ring_message(const Message& m, std::size_t segment_bytes) {
  constexpr std::size_t kFixed = 8 + 8 + 4 + 4 + 4 + 4 + 8, kEntry = 8 + 4 + 4 + 8 + 64;
  const MessageHeader& h = m.header;
  // Every refusal names the field at fault.
  const auto bad = [](const char* field, const std::string& what) {
    return Error(cat("field ", field, " of a same-node ring message ", what));
  };
  if (m.payload.size() < kFixed)
    throw bad("length",
              cat("carries ", m.payload.size(), " bytes, fewer than its ", kFixed, " fixed ones"));
  if (h.handler >= kTransferMask)  // 2^32 - 1 is kept for moving units' tags
    throw bad("handler",
              cat("names link number ", h.handler, ", beyond the 2^32 - 1 a rank gives its links"));
  ByteReader r(m.payload);
  RingMessage ring{};
  ring.link.collection = h.collection;
  ring.link.receiver = unpack<std::int64_t>(r);
  ring.link.sender = unpack<std::int64_t>(r);
  ring.link.port = unpack<std::int32_t>(r);
  ring.epoch = unpack<std::uint32_t>(r);
  const auto route = unpack<std::uint32_t>(r);
  const auto count = unpack<std::uint32_t>(r);
  ring.words = unpack<std::uint64_t>(r);
  ring.number = static_cast<std::uint32_t>(h.handler);
  if (route > RingMessage::refusal) throw bad("route", cat("has route ", route, ", not 0, 1 or 2"));
  ring.route = static_cast<RingMessage::Route>(route);
  if (ring.link.port < 0) throw bad("port", cat("names port ", ring.link.port, ", negative"));
  if (ring.epoch == 0) throw bad("epoch", "names opening 0 (openings count from 1)");
  const std::int64_t target = ring.route == RingMessage::refusal ? ring.link.receiver
                                                                 : ring.link.sender;
  if (h.target != target)
    throw bad("target", cat("is addressed to unit ", h.target, " but names unit ", target));
  const std::size_t most = ring.route == RingMessage::offer ? kMaxRingBuffers : 0;
  const std::size_t least = ring.route == RingMessage::offer ? 1 : 0;
  if (count < least || count > most)
    throw bad("count", cat("offers ", count, " buffers, not ", least, " to ", most));
  if (m.payload.size() != kFixed + count * kEntry)
    throw bad("length", cat("carries ", m.payload.size(), " bytes where ", count, " buffers take ",
                            kFixed + count * kEntry));
  if (ring.route != RingMessage::offer) {
    if (ring.words != 0) throw bad("words", cat("without an offer names words at ", ring.words));
    return ring;
  }
  // Everything named in the receiver's segment lies inside it, apart from the rest.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> taken;  // [begin, end)
  const auto place = [&](const char* what, std::uint64_t at, std::uint64_t bytes) {
    if (at % 8 != 0 || at > segment_bytes || bytes > segment_bytes - at)
      throw bad(what, cat("places it at ", at, " (", bytes, " bytes), outside a segment of ",
                          segment_bytes, " bytes or misaligned"));
    for (const auto& [b, e] : taken)
      if (bytes != 0 && at < e && b < at + bytes)
        throw bad(what, cat("places it at ", at, ", overlapping bytes ", b, " to ", e));
    taken.emplace_back(at, at + bytes);
  };
  place("words", ring.words, words_bytes(count));
  for (std::uint32_t i = 0; i < count; ++i) {
    RingBufferOffer b{};
    b.capacity = unpack<std::uint64_t>(r);
    const auto exported = unpack<std::uint32_t>(r);
    const auto pad = unpack<std::uint32_t>(r);
    b.place = unpack<std::uint64_t>(r);
    for (std::byte& x : b.handle) x = static_cast<std::byte>(unpack<std::uint8_t>(r));
    if (exported > 1 || pad != 0)
      throw bad("kind",
                cat("describes buffer ", i, " as kind ", exported, " (", pad, "), not 0 or 1"));
    b.exported = exported == 1;
    if (b.capacity > kMaxViewDataBytes)
      throw bad("capacity",
                cat("gives buffer ", i, " ", b.capacity, " bytes, more than a view may carry"));
    if (b.exported) {
      if (b.place > kMaxViewDataBytes)
        throw bad("place", cat("places buffer ", i, " at offset ", b.place, " of its allocation"));
    } else {
      place("place", b.place, b.capacity);
    }
    ring.buffers.push_back(b);
  }
  return ring;
}

void apply_ring_message(ChannelRegistry& registry, RingMessage ring, int from_rank) {
  if (ring.route == RingMessage::refusal) {
    // Our ring, refused by its sender: this opening's receives go by UCX.
    const LinkKey ours{ring.link.collection, ring.link.sender, ring.link.receiver, ring.link.port};
    const auto it = registry.senders.find(ours);
    if (it == registry.senders.end() || it->second->epoch != ring.epoch ||
        it->second->recv_route != Route::node)
      return;  // an opening that is gone
    ChannelEnd& e = *it->second;
    e.host->node()->notice(
        "a receive ring uses UCX, not the same-node route: its sender could "
        "not map the buffers (see that rank's notice)");
    RecycledDeque<ChannelEnd::Receive> awaiting = std::move(e.node_in->awaiting);
    registry.retired.push_back(
        {e.link.collection, std::move(e.node_in->keep), std::move(e.node_in->ranges), -1, {}});
    if (!e.node_out) registry.node_ends.erase(&e);  // its sends may still go by the route
    e.node_in.reset();
    e.recv_route = Route::ucx;
    // Nothing was sent on the route: the receives are posted again, with their numbers.
    if (!awaiting.empty()) e.receives = awaiting.front().transfer;
    for (auto& r : awaiting) e.recv(std::move(r));
    return;
  }
  announce_link(registry, {ring.link, ring.number, ring.epoch, false}, from_rank, false);
  auto& note = registry.notes[{ring.link, ring.epoch}];
  note.ring = std::move(ring);
  const auto end = registry.senders.find(note.ring->link);
  if (end != registry.senders.end()) end->second->settle_send_route();
}

std::size_t announced_links(const ChannelRegistry& registry) {
  return std::max(registry.send_numbers.size(), registry.notes.size());
}

bool adds_announced_link(const ChannelRegistry& registry, const LinkKey& link,
                         std::uint32_t epoch) {
  return !registry.send_numbers.contains(link) || !registry.notes.contains({link, epoch});
}

int most_announcing_rank(const ChannelRegistry& registry,
                         const std::function<int(const LinkKey&)>& owner) {
  std::map<int, std::size_t> count;
  for (const auto& [link, number] : registry.send_numbers) ++count[owner(link)];
  int most = -1;
  std::size_t highest = 0;
  for (const auto& [rank, n] : count)
    if (n > highest) most = rank, highest = n;
  return most;
}

Message announcement_message(const LinkAnnouncement& a, int from_rank) {
  Message m;
  m.header = {MessageKind::channel_link, a.link.collection, a.number, a.link.sender, from_rank};
  ByteWriter w;
  pack<std::int64_t>(w, a.link.receiver);
  pack<std::int32_t>(w, a.link.port);
  pack<std::uint32_t>(w, a.epoch);
  pack<std::uint32_t>(w, a.ring_may_follow ? 1 : 0);
  m.payload = WireAccess::take_bytes(w);
  return m;
}

LinkAnnouncement read_announcement(const Message& m) {
  const MessageHeader& h = m.header;
  if (m.payload.size() != 20)
    throw Error(cat("field length of a channel link announcement is ", m.payload.size(),
                    " bytes of arguments, not 20"));
  if (h.handler >= kTransferMask)  // 2^32 - 1 is kept for moving units' tags
    throw Error(cat("field handler of a channel link announcement is ", h.handler,
                    ", beyond the 2^32 - 1 link numbers a rank gives"));
  ByteReader r(m.payload);
  LinkAnnouncement a{};
  a.link.collection = h.collection;
  a.link.sender = h.target;
  a.link.receiver = unpack<std::int64_t>(r);
  a.link.port = unpack<std::int32_t>(r);
  a.epoch = unpack<std::uint32_t>(r);
  const auto may_follow = unpack<std::uint32_t>(r);
  a.number = static_cast<std::uint32_t>(h.handler);
  if (a.link.port < 0)
    throw Error(cat("field port of a channel link announcement is ", a.link.port, ", negative"));
  if (a.epoch == 0)
    throw Error("field epoch of a channel link announcement is 0 (openings count from 1)");
  if (may_follow > 1)
    throw Error(cat("field ring_may_follow of a channel link announcement is ", may_follow,
                    ", not 0 or 1"));
  a.ring_may_follow = may_follow == 1;
  return a;
}

void announce_link(ChannelRegistry& registry, const LinkAnnouncement& a, int from_rank,
                   bool route_news) {
  auto [it, inserted] = registry.send_numbers.try_emplace(a.link, a.number);
  if (!inserted && it->second != a.number)
    throw Error(cat("field handler: rank ", from_rank, " numbered the channel link from unit ",
                    a.link.sender, " to unit ", a.link.receiver, " (collection ", a.link.collection,
                    ", port ", a.link.port, ") ", a.number, ", and ", it->second, " before"));
  if (route_news) {
    auto& note = registry.notes[{a.link, a.epoch}];
    note.announced = true;
    note.ring_may_follow = a.ring_may_follow;
  }
  const auto end = registry.senders.find(a.link);
  if (end == registry.senders.end()) return;
  ChannelEnd& e = *end->second;
  if (!e.send_base) e.send_base = std::uint64_t{a.number} << kNumberBits;
  if (route_news) e.settle_send_route();
  e.flush_unnumbered();
}

}  // namespace kodo::detail
