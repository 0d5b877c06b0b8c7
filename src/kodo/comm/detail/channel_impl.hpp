// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What channels (comm/channel.hpp) need of the runtime (ChannelHost), where a link goes
// (LinkSpec), and the calls kodo's sources make on the rank's links: announcements,
// same-node ring messages, their checks and upkeep. Installed: WorkUnit and the task
// awaitables, templates of the user's types, open channels and post completions.

#include <kodo/backends/detail/memory.hpp>
#include <kodo/backends/stream.hpp>
#include <kodo/comm/channel.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/index.hpp>

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace kodo::detail {

class UcxTransport;
class NodeChannels;
struct Message;
class ViewPool;
class TransportStaging;
class Recording;  // backends/detail/recording.hpp

// Who is who among a runtime's links (channel_end.hpp, link_messages.cpp): the numbers this rank
// gave the links it receives on, the numbers peers gave the links it sends on, the same-rank ends,
// and every open end (for stall reports).
class ChannelRegistry;

// A link as the rank receiving on it names it.
struct LinkKey {
  std::uint32_t collection;
  std::int64_t receiver, sender;  // units' linear indices
  std::int32_t port;
  auto operator<=>(const LinkKey&) const = default;
};

// What channels need of the scheduler above them (implemented by the runtime).
class ChannelHost {
 public:
  virtual int rank() const = 0;
  // Announces an event that some rank will run later through queue_callback(): it
  // counts as a message in flight for termination until it has run.
  virtual void expect_event() = 0;
  // The same for an event that rank `rank` will run (a transfer's receiver).
  virtual void expect_event(int rank) = 0;
  // Runs `callback` from the scheduler loop, in arrival order with messages; completes
  // an event announced by expect_event() (here or on another rank).
  virtual void queue_callback(std::function<void()> callback) = 0;
  // The same for a completion told a size (a receive told the bytes that arrived),
  // without wrapping it in another function.
  virtual void queue_callback(std::function<void(std::size_t)> callback, std::size_t value) = 0;
  // Runs `continuation` from the scheduler loop once the work enqueued on `stream` so
  // far is done.
  virtual void when_done(Stream& stream, std::function<void()> continuation) = 0;
  // Sends a message to `rank`'s scheduler (a link's number, announced to the peer).
  virtual void post(int rank, Message&& message) = 0;
  virtual UcxTransport& transport() = 0;
  // Same-node channels, or null (one rank, or KODO_CHANNELS=ucx).
  virtual NodeChannels* node() = 0;
  virtual ChannelRegistry& channels() = 0;
  // Reused memory (pinned host buffers for host-staged transfers).
  virtual ViewPool& pool() = 0;
  // Memory for the runtime's own transfers, kept while the transport runs.
  virtual TransportStaging& transport_staging() = 0;
  // Ends the job from the scheduler loop, with `what` printed here and by `rank` too
  // (a transfer that does not fit is both ends' concern).
  [[noreturn]] virtual void fail_with_peer(int rank, const std::string& what) = 0;
  // The recording of the rank's turns (recording.hpp), or null once the runtime ends.
  virtual Recording* recording() = 0;

 protected:
  ~ChannelHost() = default;
};

// Where a link goes: both units (linear indices into the collection's `shape`), the
// peer's rank, the port, the stream its copies and sends are ordered on. An end sends on
// `port` too, unless `send_port` names another: a unit's loopback (neighbours.hpp) joins
// two of its own ends, each receiving on the port the other sends on.
struct LinkSpec {
  std::uint32_t collection;
  Extent3 shape;
  Index3 self, peer;
  int peer_rank;
  int port;
  Stream* stream;
  CommMode mode;
  int send_port = -1;
};

// The registry, and the message in which a rank tells a peer the number it gave a link
// (the scheduler checks the units it names against the collection before announce_link).
std::shared_ptr<ChannelRegistry> make_channel_registry();
struct LinkAnnouncement {
  LinkKey link;          // as the announcing (receiving) rank names it
  std::uint32_t number;  // its number there
  std::uint32_t epoch;   // how many times the announcing end has opened (1, 2, ...)
  bool ring_may_follow;  // the receiver may offer a same-node ring: sends wait to know
};
Message announcement_message(const LinkAnnouncement& announcement, int from_rank);
// Reads an announcement that arrived; throws kodo::Error naming a malformed field.
LinkAnnouncement read_announcement(const Message& message);
// What peers' announcements and ring messages keep in the registry: links numbered for
// sending, or notes of their route (the larger), for the scheduler's bound on them;
// whether `link` (opening `epoch`) would add to it; and the rank that announced the most
// of the links kept (`owner`: the rank holding a link's receiving unit).
std::size_t announced_links(const ChannelRegistry& registry);
bool adds_announced_link(const ChannelRegistry& registry, const LinkKey& link, std::uint32_t epoch);
int most_announcing_rank(const ChannelRegistry& registry,
                         const std::function<int(const LinkKey&)>& owner);
// Records the number `from_rank` gave a link this rank sends on, and starts the sends
// that waited for it; throws kodo::Error if it contradicts an earlier announcement.
// `route_news`: the announcement says whether a ring may follow (a ring offer does not).
void announce_link(ChannelRegistry& registry, const LinkAnnouncement& announcement, int from_rank,
                   bool route_news = true);
// For stall reports: one line per transfer this rank's open ends wait for, or "".
std::string describe_waiting_transfers(const ChannelRegistry& registry);
// Tagged messages on a number no link of this rank has (a sender's bug, or a guess: UCX
// keeps what no receive matches, without bound) are taken out of UCX and dropped, oldest
// first, until the oldest is a live link's or on one of `also_kept` (a migration's
// numbers: it waits for its receive). Throws kodo::Error past kMostStrayMessages in the
// job, or at one of more than kMostStrayBytes, that one dropped too (into scratch, cut:
// UcxTransport::drop_tagged), so that a call after a refusal looks at the next one.
// Counted in ChannelRegistry::stray_messages.
// Every loop that drives UCX while ranks wait on each other calls it every
// kStrayInterval turns: run(), a migration's UCX route.
inline constexpr std::uint64_t kMostStrayMessages = 1024, kMostStrayBytes = 1 << 20;
inline constexpr unsigned kStrayInterval = 64;
void drop_stray_messages(ChannelRegistry& registry, UcxTransport& transport,
                         const std::unordered_set<std::uint32_t>& also_kept = {});

// A same-node ring offered by the receiving end (or its refusal of the route: UCX), or
// refused by the sending end (it could not map the buffers). Travels as channel_ring.
inline constexpr std::size_t kMaxRingBuffers = 64;
struct RingBufferOffer {
  std::uint64_t capacity;            // bytes
  bool exported;                     // device memory to map; else a slot in the segment
  std::uint64_t place;               // exported: offset in the allocation; else slot offset
  std::array<std::byte, 64> handle;  // exported: the allocation's handle
};
struct RingMessage {
  enum Route : std::uint32_t { ucx = 0, offer = 1, refusal = 2 };
  LinkKey link;          // as the receiving rank names it
  std::uint32_t number;  // its number there
  std::uint32_t epoch;   // of the receiving end
  Route route;
  std::uint64_t words = 0;  // offer: {arrived, consumed, sizes[n]} in the receiver's segment
  std::vector<RingBufferOffer> buffers;
};
Message ring_message(const RingMessage& ring, int from_rank);
// Reads a channel_ring message that arrived; `segment_bytes`: the size of the node's
// segments. Throws kodo::Error naming a malformed field.
RingMessage read_ring_message(const Message& message, std::size_t segment_bytes);
// Applies one from `from_rank` (checked by the scheduler: its units, its node).
void apply_ring_message(ChannelRegistry& registry, RingMessage ring, int from_rank);
// Moves same-node transfers: hands over those that arrived, sends those their buffers
// now take. Returns how many moved. Ends the job when a wait on a stream ran out, or a
// peer that a link waits on has exited.
std::size_t poll_node_links(ChannelRegistry& registry, NodeChannels& node);
// For tests and reports: open ends on the same-node route, and the most sends one of
// them has held back at once (waiting for the receiver's releases).
struct NodeRouteCounts {
  std::size_t receiving = 0, sending = 0, most_held = 0;
};
NodeRouteCounts node_route_counts(const ChannelRegistry& registry);
// Drops what closed same-node rings kept alive for their peers (at shutdown, after the
// transport's last barrier).
void forget_retired(ChannelRegistry& registry);
// Gives back what the closed same-node ends of `collection` left (retired), once every
// rank has closed every end of it: first each rank unmaps the peers' buffers it mapped
// (stage 0), then, after every rank did (a barrier between), frees its ring buffers and
// segment space (stage 1). Returns how many ends' leftovers it handled.
std::size_t reclaim_closed_links(ChannelRegistry& registry, NodeChannels* node,
                                 std::uint32_t collection, int stage);
// Lets every wait on a stream for a same-node link end (at shutdown: what was not sent
// by now never will be).
void abandon_node_routes(ChannelRegistry& registry);

template <class V>
detail::Segment view_segment(const V& v, const char* what) {
  static_assert(Kokkos::is_view<V>::value, "kodo: channels carry Kokkos views");
  if (v.size() != 0 && !v.span_is_contiguous())
    throw Error(std::string(what) + " must be contiguous");
  return detail::Segment{const_cast<typename V::non_const_value_type*>(v.data()),
                         v.size() * sizeof(typename V::value_type),
                         detail::memory_kind<typename V::memory_space>()};
}

}  // namespace kodo::detail
