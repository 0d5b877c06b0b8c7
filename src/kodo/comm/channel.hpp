// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Channels: persistent links between two work units for repeated transfers of views
/// (halos), with receives posted in advance into the views the data must land in. Both
/// units open their ends; a receive ring hands transfers over in order
/// (examples/03_halo_ring.cpp):
/// @snippet 03_halo_ring.cpp open
/// The k-th send on one end lands in the k-th receive posted on the other, whatever order
/// the messages travel in; completions run from the scheduler loop, never inside UCX, and
/// no call blocks the rank. A transfer that does not fit its receive ends the job, on
/// both ranks. The routes (UCX, same-node rings, same rank, host-staged) and the rules a
/// program keeps: docs/concepts.md, "Channels and receive rings"; links, tags and what
/// is checked: docs/architecture.md, "A call, and a channel transfer".

#include <kodo/backends/memory.hpp>
#include <kodo/backends/stream.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/index.hpp>

#include <array>
#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kodo {

/// How a channel moves data between ranks: straight from the view's memory (GPU-aware
/// UCX, or the same-node route), or staged through pinned host memory.
enum class CommMode { device, host_staged };

/// "device" or "host"; throws kodo::Error for anything else.
CommMode parse_comm_mode(std::string_view text);
/// "device" or "host".
const char* to_string(CommMode mode);

/// Tag for Channel::send: the data is complete now (no device work on it is pending).
struct DataReady {};
/// The DataReady tag to pass.
inline constexpr DataReady data_ready{};

template <class D>
class WorkUnit;

namespace detail {

class UcxTransport;
class NodeChannels;
struct ChannelEnd;
struct RingCore;
struct Message;
class ViewPool;
class TransportStaging;
class RankProgram;  // tasking/step_program.hpp: opens channels for its units
class Recording;    // backends/detail/recording.hpp

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

// The memory of a contiguous Kokkos view; `what` names it in the error a view that is not
// contiguous gets ("<what> must be contiguous").
template <class V>
detail::Segment view_segment(const V& v, const char* what) {
  static_assert(Kokkos::is_view<V>::value, "kodo: channels carry Kokkos views");
  if (v.size() != 0 && !v.span_is_contiguous())
    throw Error(std::string(what) + " must be contiguous");
  return detail::Segment{const_cast<typename V::non_const_value_type*>(v.data()),
                         v.size() * sizeof(typename V::value_type),
                         detail::memory_kind<typename V::memory_space>()};
}

// A ring's state (receive_ring.cpp); what ReceiveRing calls of it. `core` may be null (a
// ring that is not open: release() then throws).
void release_ring(RingCore* core, Stream* stream, std::uint64_t transfer);
void stop_ring(RingCore& core);
bool ring_waits_on_streams(const RingCore* core);
void wait_on_ring(RingCore* core, Stream& stream, std::uint64_t transfer);

}  // namespace detail

/// What a receive ring hands its unit: one transfer, in transfer order.
template <class V>
struct Arrival {
  std::uint64_t transfer;  ///< 0, 1, 2, ... on this channel
  std::size_t count;       ///< elements that arrived, at most view.size()
  V view;                  ///< the ring's buffer they arrived in
};

/// A ring of receive buffers on one channel (Channel::open_ring). It keeps each free
/// buffer posted, hands transfers to the unit in transfer order however they travel
/// (transfer t lands in buffer t % buffers()), and reposts a buffer once the unit
/// releases the transfer in it. Transfers are released in order, each after it was
/// handed over or waited for on a stream; anything else is an error. Destroying the
/// ring stops its hand-overs; close the channel with it (its posted receives belong to
/// the channel).
///
/// Waits on streams (same-node route): the unit may queue the work that reads transfer t
/// before t arrives, behind wait(stream, t), and release t on that stream at once; no
/// host then stands between t's arrival and that work, nor between the work's end and
/// the sender's next transfer into the buffer (on GPUs the release's count is stored by
/// the stream, and the sender's stream waits for it on the device). on_arrival still
/// runs for every transfer, later. Waits are bounded (KODO_DEVICE_WAIT_SECONDS, default
/// 60 s; running out ends the job naming the link), and end early when either end
/// closes. A stream waiting on the device holds the work queued behind it: queue the
/// sends the peer needs before the waits for its answers.
template <class V>
class ReceiveRing {
 public:
  /// A ring that is not open.
  ReceiveRing() = default;
  /// Moves the ring; `other` is then not open.
  ReceiveRing(ReceiveRing&&) noexcept = default;
  /// Stops this ring's hand-overs and takes over `other`'s.
  ReceiveRing& operator=(ReceiveRing&& other) noexcept {
    if (this != &other) {
      stop();
      core_ = std::move(other.core_);
    }
    return *this;
  }
  ~ReceiveRing() { stop(); }

  /// The buffer of `transfer` may be written again now: the unit is done with it.
  void release(std::uint64_t transfer) { detail::release_ring(core_.get(), nullptr, transfer); }
  /// ... once the work enqueued on `stream` so far (device work reading it) is done.
  void release(Stream& stream, std::uint64_t transfer) {
    detail::release_ring(core_.get(), &stream, transfer);
  }
  /// The 0.1 argument order, kept for one release (CHANGELOG, "Deprecated").
  [[deprecated("kodo 0.2 takes the stream first: release(stream, transfer)")]]
  void release(std::uint64_t transfer, Stream& stream) {
    release(stream, transfer);
  }
  /// Whether the ring was opened (and not moved from).
  bool is_open() const { return core_ != nullptr; }

  /// Whether wait() may be called: the ring takes the same-node route and a transfer has
  /// come that way (so the sender mapped it); false until then, on other routes, and
  /// where ranks share a GPU (KODO_SHARE_GPUS: the GPU time-slices them, and a kernel
  /// waiting for the other rank would hold it for a whole slice, ~2 ms on an H100).
  bool waits_on_streams() const { return detail::ring_waits_on_streams(core_.get()); }
  /// Work enqueued on `stream` from now on runs once `transfer` is in its buffer
  /// (transfer % buffers()). `transfer` is not released yet, and its buffer is free: it
  /// is below the oldest transfer not released + buffers(). On the host backend, whose
  /// streams run work in the call, this returns once the transfer is in.
  void wait(Stream& stream, std::uint64_t transfer) {
    detail::wait_on_ring(core_.get(), stream, transfer);
  }
  /// The 0.1 argument order, kept for one release (CHANGELOG, "Deprecated").
  [[deprecated("kodo 0.2 takes the stream first: wait(stream, transfer)")]]
  void wait(std::uint64_t transfer, Stream& stream) {
    wait(stream, transfer);
  }

 private:
  friend class Channel;
  explicit ReceiveRing(std::shared_ptr<detail::RingCore> core) : core_(std::move(core)) {}
  void stop() {
    if (core_) detail::stop_ring(*core_);
  }
  std::shared_ptr<detail::RingCore> core_;
};

/// One end of a link between two work units (WorkUnit::open_channel), for repeated
/// transfers of views. How transfers travel and the rules they follow: docs/concepts.md,
/// "Channels and receive rings".
class Channel {
 public:
  /// A closed channel; assigning it to an open one closes that.
  Channel() = default;
  /// Moves the end; `other` is then closed.
  Channel(Channel&&) noexcept;
  /// Closes this end and takes over `other`'s.
  Channel& operator=(Channel&&) noexcept;
  ~Channel();  ///< receives still posted are cancelled

  /// Sends the contents of `data` to the peer once the work enqueued on this end's
  /// stream so far is done. `sent` (optional) runs when `data` may be written again.
  template <class V>
  void send(const V& data, std::function<void()> sent = {}) {
    send_segment(segment(data), std::make_shared<V>(data), std::move(sent), false);
  }
  /// The same for data that is complete already (written by the host, or by device
  /// work the caller has fenced): a GPU-aware send to another rank starts at once,
  /// without a trip through the completion engine.
  template <class V>
  void send(const V& data, DataReady, std::function<void()> sent = {}) {
    send_segment(segment(data), std::make_shared<V>(data), std::move(sent), true);
  }
  /// Posts the receive of the peer's next send into `into`; `received` runs once the
  /// data is in `into` (for a device view: device work then sees it when ordered after
  /// this end's stream, or launched from `received`). `received` takes no argument (the
  /// transfer must fill `into`) or a std::size_t (the elements that arrived).
  template <class V, class F>
  void recv(const V& into, F&& received) {
    using Value = typename V::value_type;
    if constexpr (std::is_invocable_v<F, std::size_t>) {
      recv_segment(segment(into), std::make_shared<V>(into), sizeof(Value), false,
                   [f = std::forward<F>(received)](std::size_t bytes) mutable {
                     f(bytes / sizeof(Value));
                   });
    } else {
      static_assert(std::is_invocable_v<F>,
                    "kodo: a receive's completion takes nothing or a std::size_t count");
      recv_segment(segment(into), std::make_shared<V>(into), sizeof(Value), true,
                   [f = std::forward<F>(received)](std::size_t) mutable { f(); });
    }
  }

  /// Makes this channel's receives a ring over `buffers` (at least one; each receive
  /// takes up to a buffer's size): `on_arrival(const Arrival<V>&)` runs for each
  /// transfer, in transfer order. The ring takes over the channel's receives: open it
  /// before any recv(), and use no recv() after.
  template <class V, class F>
  ReceiveRing<V> open_ring(std::vector<V> buffers, F&& on_arrival) {
    static_assert(std::is_invocable_v<F&, const Arrival<V>&>,
                  "kodo: a ring's on_arrival takes a const kodo::Arrival<V>&");
    using Value = typename V::value_type;
    auto views = std::make_shared<const std::vector<V>>(std::move(buffers));
    std::vector<detail::Segment> segments;
    for (const V& v : *views) segments.push_back(segment(v));
    auto hand = [views, f = std::forward<F>(on_arrival)](std::uint64_t transfer, std::size_t bytes,
                                                         std::size_t buffer) mutable {
      f(Arrival<V>{transfer, bytes / sizeof(Value), (*views)[buffer]});
    };
    return ReceiveRing<V>(start_ring(std::move(segments), views, sizeof(Value), std::move(hand)));
  }

  /// Whether this end is open (opened, and not closed or moved from).
  bool is_open() const { return end_ != nullptr; }
  bool is_local() const;  ///< the peer is on this rank

 private:
  template <class D>
  friend class WorkUnit;
  friend class detail::RankProgram;
  Channel(detail::ChannelHost& host, const detail::LinkSpec& link);

  template <class V>
  static detail::Segment segment(const V& v) {
    return detail::view_segment(v, "a view sent or received on a channel");
  }
  void send_segment(detail::Segment data, std::shared_ptr<const void> keep,
                    std::function<void()> sent, bool ready);
  void recv_segment(detail::Segment into, std::shared_ptr<const void> keep, std::size_t element,
                    bool exact, std::function<void(std::size_t)> received);
  std::shared_ptr<detail::RingCore> start_ring(
      std::vector<detail::Segment> buffers, std::shared_ptr<const void> keep, std::size_t element,
      std::function<void(std::uint64_t, std::size_t, std::size_t)> hand);

  std::shared_ptr<detail::ChannelEnd> end_;
};

}  // namespace kodo
