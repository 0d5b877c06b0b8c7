// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Internal to comm/: one end of a channel link (ChannelEnd), the rank's table of them
// (ChannelRegistry), and the link words and helpers the files of a channel share. The
// parts of a channel, one file each:
//   channel.cpp          the public facade (kodo::Channel) and CommMode
//   channel_end.cpp      an end's transfers through UCX and between units of one rank
//   node_route.cpp       the same-node route (rings in the receiver's node segment)
//   link_messages.cpp    what ends tell each other: link announcements, ring offers
//   channel_report.cpp   the stall report's lines on transfers that wait
//   receive_ring.cpp     receive rings over an end (ReceiveRing; receive_ring.hpp)
//   device_route.cpp     a link's same-node route handed to device work (step programs)

#include <kodo/backends/detail/native.hpp>
#include <kodo/backends/detail/tool_region.hpp>
#include <kodo/comm/channel.hpp>
#include <kodo/comm/detail/node_channels.hpp>
#include <kodo/comm/detail/ucx_transport.hpp>
#include <kodo/comm/detail/view_pool.hpp>
#include <kodo/comm/detail/wire.hpp>
#include <kodo/core/detail/recycled.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <unordered_set>
#include <vector>

namespace kodo::detail {

constexpr int kNumberBits = 32;
constexpr std::uint64_t kTransferMask = (std::uint64_t{1} << kNumberBits) - 1;

// Copies `bytes` from `from` to `to`, ordered on `space`, between any memory kinds.
inline void copy_bytes(const ExecutionSpace& space, const Segment& to, const Segment& from,
                       std::size_t bytes) {
  using Device = ExecutionSpace::memory_space;
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  auto host = [](const Segment& s, std::size_t n) {
    return Kokkos::View<std::byte*, Kokkos::HostSpace, Unmanaged>(static_cast<std::byte*>(s.data),
                                                                  n);
  };
  auto device = [](const Segment& s, std::size_t n) {
    return Kokkos::View<std::byte*, Device, Unmanaged>(static_cast<std::byte*>(s.data), n);
  };
  static const std::string region = "kodo::channel copy";
  const ToolRegion here(region);  // its views are unmanaged: Kokkos gives them no label
  const bool to_host = to.kind == MemoryKind::host, from_host = from.kind == MemoryKind::host;
  if (to_host && from_host)
    Kokkos::deep_copy(space, host(to, bytes), host(from, bytes));
  else if (to_host)
    Kokkos::deep_copy(space, host(to, bytes), device(from, bytes));
  else if (from_host)
    Kokkos::deep_copy(space, device(to, bytes), host(from, bytes));
  else
    Kokkos::deep_copy(space, device(to, bytes), device(from, bytes));
}

// The same copy on a kodo stream: between two places the device addresses it is one
// call to the backend (Kokkos' deep_copy adds its checks and a cudaSetDevice to each);
// with host memory on either side, copy_bytes.
inline void copy_on(Stream& stream, const Segment& to, const Segment& from, std::size_t bytes) {
  if (to.kind == MemoryKind::host || from.kind == MemoryKind::host)
    return copy_bytes(stream.space(), to, from, bytes);
  static const std::string region = "kodo::channel copy";
  const ToolRegion here(region);
  backend::enqueue_copy(stream.native_handle(), to.data, from.data, bytes);
}

using Staging = ViewPool::Staging;

// A 64-bit protocol word of a same-node link, as another process writes it.
inline std::uint64_t load_word(const std::byte* at) {
  return std::atomic_ref<std::uint64_t>(
             *reinterpret_cast<std::uint64_t*>(const_cast<std::byte*>(at)))
      .load(std::memory_order_acquire);
}
inline void store_word(std::byte* at, std::uint64_t value) {
  std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(at))
      .store(value, std::memory_order_release);
}
// A link's words in its receiver's segment: arrived (transfers published), consumed
// (transfers whose buffers the receiver freed), abandoned (either end closed: waits on
// streams for the others stop), then the size of each buffer's transfer.
constexpr std::uint64_t kArrivedWord = 0, kConsumedWord = 8, kAbandonedWord = 16, kSizeWords = 24;
inline std::uint64_t words_bytes(std::size_t buffers) {
  return kSizeWords + 8 * std::uint64_t{buffers};
}

// Which way a link's transfers go: not known yet, UCX, or the same-node route.
enum class Route : std::uint8_t { pending, ucx, node };

class ChannelRegistry {
 public:
  std::map<LinkKey, std::uint32_t> receive_numbers;  // links this rank receives on
  std::map<LinkKey, std::uint32_t> send_numbers;     // links it sends on, as peers numbered them
  std::map<LinkKey, ChannelEnd*> local_receivers;    // same-rank ends, by what they receive
  std::map<LinkKey, ChannelEnd*> senders;            // every end, by what it sends
  std::set<ChannelEnd*> open;                        // every open end, for stall reports
  // How often each end (by what it sends) has opened: both ends of a link open in step,
  // so the receiver's count names an opening to the sender.
  std::map<LinkKey, std::uint32_t> openings;
  // What receivers said of the route of links this rank sends on, by (link, opening),
  // until the sending end of that opening takes it.
  struct RouteNote {
    bool announced = false, ring_may_follow = false;
    std::optional<RingMessage> ring;
  };
  std::map<std::pair<LinkKey, std::uint32_t>, RouteNote> notes;
  std::set<ChannelEnd*> node_ends;  // open ends on the same-node route, polled
  // What closed same-node ends leave: their ring's buffers and words, which a peer's
  // stream may still write, and the buffers they mapped from the peer. Kept until both
  // ends are closed on every rank (reclaim_closed_links: a migration), else until the
  // runtime ends.
  struct Retired {
    std::uint32_t collection;
    std::shared_ptr<const void> keep;                             // receiving: the views
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;  // ... words and slots
    int peer = -1;                                                // sending: the imports
    std::vector<std::array<std::byte, 64>> imports;
  };
  std::vector<Retired> retired;
  std::chrono::steady_clock::time_point quiet_since{};  // same-node waits without progress
  std::size_t most_held = 0;                            // sends held back at once, at most
  std::uint64_t last_wait_code = 0;                     // ChannelEnd::wait_codes given out

  // A link's number here, the upper half of its transfers' tags. Drawn at random among
  // those not in use: UCX's tagged receives take a matching tag from any rank, and a
  // number no other link's sender was told cannot be produced by a bug that sends on
  // the wrong link (sequential numbers were each other's neighbours). Each number comes
  // from the operating system's random source (std::random_device), not from a
  // generator seeded once, whose outputs a peer that is told some could predict.
  // Number 2^32 - 1 is no link's (kept out, as before moving views had their own numbers).
  std::uint32_t receive_number(const LinkKey& link) {
    if (const auto it = receive_numbers.find(link); it != receive_numbers.end()) return it->second;
    if (receive_numbers.size() >= kTransferMask / 2)
      throw Error(cat("a rank receives on at most 2^31 - 1 channel links; this one has ",
                      receive_numbers.size()));
    std::uniform_int_distribution<std::uint32_t> any(0, kTransferMask - 1);
    std::uint32_t number = any(draw_numbers);
    while (!numbers_in_use.insert(number).second) number = any(draw_numbers);
    receive_numbers.emplace(link, number);
    return number;
  }
  // A number no link here has (nor 2^32 - 1), for tags that must not be guessed and are
  // not a link's: a migration's views (ucx_view_route.hpp). Not kept: they are in use
  // only while the job is quiet.
  std::uint32_t unused_number() {
    std::uniform_int_distribution<std::uint32_t> any(0, kTransferMask - 1);
    for (;;)
      if (const std::uint32_t n = any(draw_numbers); !numbers_in_use.contains(n)) return n;
  }
  std::random_device draw_numbers;
  std::unordered_set<std::uint32_t> numbers_in_use;  // by receive_numbers
  std::uint64_t stray_messages = 0;                  // drop_stray_messages()
};

// One end of a link. Shared with the continuations of its transfers in flight, so a
// completion that arrives after the Channel object is gone finds valid state.
struct ChannelEnd : std::enable_shared_from_this<ChannelEnd> {
  struct Send {
    Segment segment;
    std::shared_ptr<const void> keep;
    std::function<void()> done;  // optional: the data may be written again
    bool ready = false;          // the data is complete (no stream to wait for)
    Stream* stream = nullptr;    // a same-rank send: the sender's stream orders the copy
    std::uint64_t transfer = 0;
  };
  struct Receive {
    Segment segment;
    std::shared_ptr<const void> keep;
    std::size_t element;                    // bytes per element of the receiving view
    bool exact;                             // the transfer must fill the view
    std::function<void(std::size_t)> done;  // told the bytes that arrived
    std::uint64_t transfer = 0;
  };

  ChannelHost* host;
  LinkSpec link;  // where it goes
  LinkKey receives_on, sends_on;
  std::uint64_t recv_base = 0;             // this rank's number of the link, as a tag
  std::optional<std::uint64_t> send_base;  // the peer's number, once it announced it
  std::uint64_t sends = 0, receives = 0;   // transfers started on each side
  bool closed = false, ring = false;
  // Same rank: receives posted and sends made, matched in order.
  RecycledDeque<Receive> posted;
  RecycledDeque<Send> arrived;
  // Sends waiting for the receiving end to open (same rank) or for the peer's number
  // of the link (other ranks).
  RecycledDeque<Send> unnumbered;
  // Other ranks: UCX receives not completed (cancelled when the channel closes), and
  // sends not completed.
  std::map<void*, std::pair<std::uint64_t, std::size_t>> in_flight;  // transfer, capacity
  std::map<std::uint64_t, std::size_t> sending;                      // transfer -> bytes

  // The same-node route: the receiving side (this end's ring, offered to the peer) and
  // the sending side (the peer's ring, mapped here).
  std::uint32_t epoch = 0;  // this end's opening
  Route send_route = Route::pending, recv_route = Route::ucx;
  struct NodeIn {
    std::byte* words;                   // in this rank's segment, as this host reads it
    std::byte* device_words;            // the same, as this rank's streams read it
    std::uint64_t released = 0;         // transfers whose buffers were given back
    std::uint64_t arrived_seen = 0;     // the sender's count of transfers, as last read
    Stream* consumed_stream = nullptr;  // the stream of the last release that publishes
    std::vector<std::byte*> slots;      // by buffer: where its data lands (host), or null
    RecycledDeque<Receive> awaiting;    // posted, in transfer order
    std::shared_ptr<const void> keep;   // the ring's views, then retired with `ranges`
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;  // in the segment
  };
  std::optional<NodeIn> node_in;
  struct NodeOut {
    std::byte* words;            // in the peer's segment, as this host reads it
    std::byte* device_words;     // the same, as this rank's streams write it
    std::vector<std::byte*> to;  // by buffer: where this rank's streams write it
    std::vector<std::uint64_t> capacity;
    RecycledDeque<Send> held;  // waiting for their buffers to be released, in order
    // Device memory where a large copy's wait for its buffer leaves its outcome
    // (backend::enqueue_copy_and_publish).
    Kokkos::View<std::uint64_t*, ExecutionSpace::memory_space> gate;
    std::vector<std::array<std::byte, 64>> imports;  // mapped from the peer, by handle
  };
  std::optional<NodeOut> node_out;

  bool local() const { return link.peer_rank == host->rank(); }
  NodeChannels& node() const { return *host->node(); }

  std::string describe(bool outgoing) const {
    std::ostringstream os;
    os << "channel from unit " << (outgoing ? link.self : link.peer) << " to unit "
       << (outgoing ? link.peer : link.self) << " (collection " << link.collection << ", port "
       << (outgoing ? sends_on.port : receives_on.port) << ")";
    return os.str();
  }

  // Pinned host memory (host-staged mode), from the runtime's pool: reused once no
  // transfer holds it any more.
  Staging take_staging(std::size_t bytes) { return host->pool().staging(bytes); }
  static Segment segment_of(const Staging& s) {
    return Segment{s.data(), s.extent(0), MemoryKind::host};
  }

  // Why a transfer of `bytes` does not fit the receive it landed in, or "".
  std::string misfit(const Receive& r, std::size_t bytes) const {
    const char* problem = bytes > r.segment.bytes  ? "does not fit"
                          : bytes % r.element != 0 ? "is not a whole number of elements of"
                          : r.exact && bytes != r.segment.bytes ? "does not fill"
                                                                : nullptr;
    if (!problem) return "";
    return cat(describe(false), ": transfer ", r.transfer, ", a message of ", bytes, " bytes ",
               problem, " the receiving view of ", r.segment.bytes, " bytes",
               r.exact && bytes < r.segment.bytes
                   ? " (a receive whose completion takes a count accepts fewer)"
                   : "");
  }

  void send(Send t);
  void start_send(Send t);
  void recv(Receive r);
  void match_local();
  void close();
  // The same-node route.
  void flush_unnumbered();
  void settle_send_route();
  void accept_ring(const RingMessage& ring);
  void refuse_ring(const RingMessage& ring, const std::string& why);
  void offer_ring(const std::vector<Segment>& buffers, std::shared_ptr<const void> keep);
  void choose_ucx_receives(const std::string& why);
  void node_send(Send t);
  void publish(Send t);
  std::uint64_t landing_bytes(const Receive& r) const;
  void land(Receive r, std::uint64_t bytes);
  void consumed(Stream* stream, std::uint64_t transfers);
  void wait_on_stream(Stream& stream, std::uint64_t transfer);
  void abandon_node_route();
  // What a wait on a stream for this end stores when it runs out (NodeChannels).
  std::uint64_t failure_code(bool outgoing) const { return wait_codes[outgoing ? 1 : 0]; }
  std::uint64_t wait_codes[2] = {0, 0};  // receiving, sending side: unique on this rank
  backend::DeviceWait device_wait(bool outgoing, std::byte* words, std::uint64_t word,
                                  std::uint64_t value) const {
    return {reinterpret_cast<const std::uint64_t*>(words + word),
            value,
            reinterpret_cast<const std::uint64_t*>(words + kAbandonedWord),
            node().failure_word_device(),
            failure_code(outgoing),
            node().wait_timeout_ns()};
  }
  std::size_t poll_node();
  std::string misfit_at_sender(std::uint64_t transfer, std::size_t bytes,
                               std::uint64_t capacity) const {
    return cat(describe(true), ": transfer ", transfer, ", a message of ", bytes,
               " bytes does not fit the receiving view of ", capacity, " bytes");
  }
};

}  // namespace kodo::detail
