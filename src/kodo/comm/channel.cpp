#include <kodo/comm/channel.hpp>

#include <kodo/backends/native.hpp>
#include <kodo/comm/node_channels.hpp>
#include <kodo/comm/ucx_transport.hpp>
#include <kodo/comm/view_pool.hpp>
#include <kodo/comm/wire.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace kodo {

CommMode parse_comm_mode(std::string_view text) {
  if (text == "device") return CommMode::device;
  if (text == "host") return CommMode::host_staged;
  throw Error("unknown communication mode '" + std::string(text) + "' (expected device or host)");
}

const char* to_string(CommMode mode) { return mode == CommMode::device ? "device" : "host"; }

namespace detail {
namespace {

constexpr int kNumberBits = 32;
constexpr std::uint64_t kTransferMask = (std::uint64_t{1} << kNumberBits) - 1;

// Copies `bytes` from `from` to `to`, ordered on `space`, between any memory kinds.
void copy_bytes(const ExecutionSpace& space, const Segment& to, const Segment& from,
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

using Staging = ViewPool::Staging;

// A 64-bit protocol word of a same-node link, as another process writes it.
std::uint64_t load_word(const std::byte* at) {
  return std::atomic_ref<std::uint64_t>(
             *reinterpret_cast<std::uint64_t*>(const_cast<std::byte*>(at)))
      .load(std::memory_order_acquire);
}
void store_word(std::byte* at, std::uint64_t value) {
  std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(at))
      .store(value, std::memory_order_release);
}
// A link's words in its receiver's segment: arrived (transfers published), consumed
// (transfers whose buffers the receiver freed), abandoned (either end closed: waits on
// streams for the others stop), then the size of each buffer's transfer.
constexpr std::uint64_t kArrivedWord = 0, kConsumedWord = 8, kAbandonedWord = 16, kSizeWords = 24;
std::uint64_t words_bytes(std::size_t buffers) { return kSizeWords + 8 * std::uint64_t{buffers}; }

// Which way a link's transfers go: not known yet, UCX, or the same-node route.
enum class Route : std::uint8_t { pending, ucx, node };

}  // namespace

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
  // Ring buffers of closed same-node ends: a peer's stream may still write them.
  std::vector<std::shared_ptr<const void>> retired;
  std::chrono::steady_clock::time_point quiet_since{};  // same-node waits without progress
  std::size_t most_held = 0;                            // sends held back at once, at most
  std::uint64_t last_wait_code = 0;                     // ChannelEnd::wait_codes given out

  std::uint32_t receive_number(const LinkKey& link) {
    if (const auto it = receive_numbers.find(link); it != receive_numbers.end()) return it->second;
    if (receive_numbers.size() > kTransferMask)
      throw Error(cat("a rank receives on at most 2^32 channel links; this one has ",
                      receive_numbers.size()));
    const auto number = static_cast<std::uint32_t>(receive_numbers.size());
    receive_numbers.emplace(link, number);
    return number;
  }
};

std::shared_ptr<ChannelRegistry> make_channel_registry() {
  return std::make_shared<ChannelRegistry>();
}

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
  std::deque<Receive> posted;
  std::deque<Send> arrived;
  // Sends waiting for the receiving end to open (same rank) or for the peer's number
  // of the link (other ranks).
  std::deque<Send> unnumbered;
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
    Stream* consumed_stream = nullptr;  // the stream of the last release that publishes
    std::vector<std::byte*> slots;      // by buffer: where its data lands (host), or null
    std::deque<Receive> awaiting;       // posted, in transfer order
    std::shared_ptr<const void> keep;   // the ring's views: kept until the runtime ends
  };
  std::optional<NodeIn> node_in;
  struct NodeOut {
    std::byte* words;            // in the peer's segment, as this host reads it
    std::byte* device_words;     // the same, as this rank's streams write it
    std::vector<std::byte*> to;  // by buffer: where this rank's streams write it
    std::vector<std::uint64_t> capacity;
    std::deque<Send> held;  // waiting for their buffers to be released, in order
  };
  std::optional<NodeOut> node_out;

  bool local() const { return link.peer_rank == host->rank(); }
  NodeChannels& node() const { return *host->node(); }

  std::string describe(bool outgoing) const {
    std::ostringstream os;
    os << "channel from unit " << (outgoing ? link.self : link.peer) << " to unit "
       << (outgoing ? link.peer : link.self) << " (collection " << link.collection << ", port "
       << link.port << ")";
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
  void land(Receive r);
  void consumed(std::uint64_t transfers, Stream* stream);
  void wait_on_stream(std::uint64_t transfer, Stream& stream);
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

void ChannelEnd::send(Send t) {
  host->expect_event();              // the receiver's completion
  if (t.done) host->expect_event();  // and ours
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
  const bool ready = t.ready && !staging.data();
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
    if (bytes != 0) copy_bytes(order.space(), into.segment, from.segment, bytes);
    ChannelHost* h = host;
    h->when_done(order, [h, bytes, into = std::move(into), from = std::move(from)]() mutable {
      h->queue_callback(std::move(into.done), bytes);
      if (from.done) h->queue_callback(std::move(from.done));
    });
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
      // The peer may still write them, and keeps them mapped until the runtime ends.
      registry.retired.push_back(std::move(node_in->keep));
      node_in->awaiting.clear();
    }
    if (node_out) node_out->held.clear();
  }
}

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
  if (!why.empty()) return choose_ucx_receives(why);
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
  NodeOut out{n.host(link.peer_rank, ring.words), n.device(link.peer_rank, ring.words), {}, {}, {}};
  std::string why;
  for (const RingBufferOffer& b : ring.buffers) {
    out.capacity.push_back(b.capacity);
    if (!b.exported) {
      out.to.push_back(n.device(link.peer_rank, b.place));
    } else if (b.capacity == 0) {
      out.to.push_back(nullptr);
    } else if (std::size_t bytes = 0;
               void* start = n.import(link.peer_rank, b.handle, bytes, why)) {
      if (b.place > bytes || b.capacity > bytes - b.place)
        throw Error(cat("field place of a same-node ring message from rank ", link.peer_rank,
                        ": a buffer of ", b.capacity, " bytes at offset ", b.place,
                        " of an allocation of ", bytes, " bytes"));
      out.to.push_back(static_cast<std::byte*>(start) + b.place);
    } else {
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
  // a GPU (a kernel waiting there holds the GPU for its time slice).
  const bool hold_on_host = backend::streams_run_in_call() || !node().streams_may_wait();
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
  backend::enqueue_copy_and_publish(
      link.stream->native_handle(), free, out.to[b], t.segment.data, t.segment.bytes,
      t.segment.kind != MemoryKind::host,
      reinterpret_cast<std::uint64_t*>(out.device_words + kSizeWords + 8 * b), t.segment.bytes,
      reinterpret_cast<std::uint64_t*>(out.device_words + kArrivedWord), t.transfer + 1);
  host->when_done(*link.stream, [self_ptr = shared_from_this(), t = std::move(t)]() mutable {
    self_ptr->sending.erase(t.transfer);
    if (t.done) self_ptr->host->queue_callback(std::move(t.done));
  });
}

// A transfer that arrived in this end's ring: checked, copied out of its slot (host
// backend), handed to the unit from the loop.
void ChannelEnd::land(Receive r) {
  NodeIn& in = *node_in;
  const std::size_t b = r.transfer % in.slots.size();
  const std::uint64_t bytes = load_word(in.words + kSizeWords + 8 * b);
  if (bytes > r.segment.bytes || bytes % r.element != 0)
    host->fail_with_peer(link.peer_rank, misfit(r, static_cast<std::size_t>(bytes)));
  if (in.slots[b] && bytes != 0)
    copy_bytes(link.stream->space(), r.segment, Segment{in.slots[b], bytes, MemoryKind::host},
               bytes);
  host->queue_callback(std::move(r.done), static_cast<std::size_t>(bytes));
}

// The receiving end's buffers of transfers 0 .. transfers - 1 may be written again once
// the work enqueued on `stream` so far is done (now, without a stream). The count is
// stored in stream order (never on the host while an earlier store is still to run on a
// stream: it would then go back), so the sender's streams need no host to learn it.
void ChannelEnd::consumed(std::uint64_t transfers, Stream* stream) {
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
void ChannelEnd::wait_on_stream(std::uint64_t transfer, Stream& stream) {
  const backend::DeviceWait w =
      device_wait(false, node_in->device_words, kArrivedWord, transfer + 1);
  if (!backend::streams_run_in_call()) {
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
    const std::uint64_t arrived = load_word(node_in->words + kArrivedWord);
    if (arrived > node_in->released + node_in->slots.size())
      host->fail_with_peer(link.peer_rank,
                           cat(describe(false), ": rank ", link.peer_rank, " published transfer ",
                               arrived - 1, " into a ring of ", node_in->slots.size(),
                               " buffers that had released transfers up to ",
                               static_cast<std::int64_t>(node_in->released) - 1,
                               " only (a broken same-node protocol)"));
    while (!node_in->awaiting.empty() && node_in->awaiting.front().transfer < arrived) {
      Receive r = std::move(node_in->awaiting.front());
      node_in->awaiting.pop_front();
      land(std::move(r));
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
  if (h.handler > kTransferMask)
    throw bad("handler", cat("names link number ", h.handler, ", beyond the 2^32 of a rank"));
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
    std::deque<ChannelEnd::Receive> awaiting = std::move(e.node_in->awaiting);
    registry.retired.push_back(std::move(e.node_in->keep));
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
  if (h.handler > kTransferMask)
    throw Error(cat("field handler of a channel link announcement is ", h.handler,
                    ", beyond the 2^32 link numbers of a rank"));
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

std::string describe_waiting_transfers(const ChannelRegistry& registry) {
  std::ostringstream os;
  for (const ChannelEnd* e : registry.open) {
    for (const auto& [request, what] : e->in_flight)
      os << "\n  " << e->describe(false) << ": receive of transfer " << what.first << " (up to "
         << what.second << " bytes) posted, no message has arrived for it";
    if (!e->local())
      if (const auto waiting = e->host->transport().probe(e->recv_base, ~kTransferMask))
        os << "\n  " << e->describe(false) << ": transfer " << (waiting->first & kTransferMask)
           << " (" << waiting->second
           << " bytes) arrived, the receiving unit has posted no receive for it";
    for (const auto& r : e->posted)
      os << "\n  " << e->describe(false) << ": receive of transfer " << r.transfer << " (up to "
         << r.segment.bytes << " bytes) posted, the sending unit has not sent it";
    for (const auto& t : e->arrived)
      os << "\n  " << e->describe(false) << ": transfer " << t.transfer << " (" << t.segment.bytes
         << " bytes) sent, the receiving unit has posted no receive for it";
    for (const auto& t : e->unnumbered)
      if (e->local())
        os << "\n  " << e->describe(true) << ": transfer " << t.transfer << " (" << t.segment.bytes
           << " bytes) sent, the receiving unit has not opened its end";
    if (e->node_in)
      for (const auto& r : e->node_in->awaiting)
        os << "\n  " << e->describe(false) << ": receive of transfer " << r.transfer << " (up to "
           << r.segment.bytes << " bytes) posted in a same-node ring, rank " << e->link.peer_rank
           << " has not published it";
    if (e->node_out)
      for (const auto& t : e->node_out->held)
        os << "\n  " << e->describe(true) << ": transfer " << t.transfer << " (" << t.segment.bytes
           << " bytes) held: its buffer in the receiving unit's same-node ring "
           << "is not released yet";
    for (const auto& [transfer, bytes] : e->sending) {
      if (e->node_out && std::any_of(e->node_out->held.begin(), e->node_out->held.end(),
                                     [t = transfer](const auto& h) { return h.transfer == t; }))
        continue;
      os << "\n  " << e->describe(true) << ": transfer " << transfer << " (" << bytes << " bytes) "
         << (!e->send_base                     ? "waiting for the receiving unit to open its end"
             : e->send_route == Route::pending ? "waiting for the receiving unit to open a ring "
                                                 "or post a receive"
                                               : "in flight, not yet received");
    }
    if (!e->local() && e->sends != 0 && e->sending.empty())
      os << "\n  " << e->describe(true) << ": transfers 0 to " << e->sends - 1
         << " sent; any the receiving unit has not posted receives for wait on its rank";
  }
  return os.str();
}

// --- receive rings --------------------------------------------------------------------

struct RingCore : std::enable_shared_from_this<RingCore> {
  std::shared_ptr<ChannelEnd> end;
  std::vector<Segment> buffers;
  std::shared_ptr<const void> keep;  // the views behind `buffers`
  std::size_t element = 1;
  std::function<void(std::uint64_t, std::size_t, std::size_t)> hand;  // transfer, bytes, buffer
  std::vector<bool> free;                                             // by buffer: may be posted
  std::uint64_t posted = 0, handed = 0, released = 0;
  std::uint64_t waited = 0;                    // transfers below it were waited for on a stream
  std::map<std::uint64_t, std::size_t> early;  // arrived ahead of `handed`: bytes
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
                 [weak = weak_from_this(), transfer](std::size_t bytes) {
                   if (const auto self = weak.lock()) self->arrive(transfer, bytes);
                 }});
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

void release_ring(RingCore* core, std::uint64_t transfer, Stream* stream) {
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
    r.end->consumed(transfer + 1, stream);
    return;
  }
  if (!stream) return r.free_buffer(transfer);
  r.end->host->when_done(*stream, [weak = r.weak_from_this(), transfer] {
    if (const auto self = weak.lock()) self->free_buffer(transfer);
  });
}

void stop_ring(RingCore& core) { core.stopped = true; }

bool ring_waits_on_streams(const RingCore* core) {
  if (!core || core->stopped || core->end->closed || core->end->recv_route != Route::node ||
      !core->end->node().streams_may_wait())
    return false;
  // A buffer in host memory is filled from its slot by this rank's loop, after the count
  // is up: a device wait would run ahead of that copy.
  const auto& in = *core->end->node_in;
  if (!backend::streams_run_in_call())
    for (const std::byte* slot : in.slots)
      if (slot) return false;
  // The sender maps the ring when the offer reaches it, or refuses it: the first
  // transfer that comes by the route shows the route taken.
  return load_word(in.words + kArrivedWord) != 0;
}

void wait_on_ring(RingCore* core, std::uint64_t transfer, Stream& stream) {
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
  r.end->wait_on_stream(transfer, stream);
}

}  // namespace detail

Channel::Channel(detail::ChannelHost& host, const detail::LinkSpec& l) {
  const std::int64_t self = l.shape.linear(l.self), peer = l.shape.linear(l.peer);
  std::ostringstream problem;
  if (!l.shape.contains(l.peer))
    problem << "a channel from unit " << l.self << " names unit " << l.peer
            << ", outside its collection of shape " << l.shape;
  else if (l.peer == l.self)
    problem << "a channel needs two different units, not unit " << l.self << " twice";
  else if (l.port < 0)
    problem << "a channel port must not be negative, not " << l.port;
  if (!problem.str().empty()) throw Error(problem.str());

  auto end = std::make_shared<detail::ChannelEnd>();
  end->host = &host;
  end->link = l;
  end->receives_on = {l.collection, self, peer, l.port};
  end->sends_on = {l.collection, peer, self, l.port};
  detail::ChannelRegistry& registry = host.channels();
  if (registry.senders.count(end->sends_on))
    throw Error("two channels open on one " + end->describe(true));
  if (end->local()) {
    auto [it, inserted] = registry.local_receivers.try_emplace(end->receives_on, end.get());
    if (!inserted) throw Error("two channels open on one " + end->describe(false));
    registry.senders.emplace(end->sends_on, end.get());
    // Sends the peer made before this end opened.
    if (const auto peer = registry.senders.find(end->receives_on); peer != registry.senders.end()) {
      auto& waiting = peer->second->unnumbered;
      for (; !waiting.empty(); waiting.pop_front())
        end->arrived.push_back(std::move(waiting.front()));
    }
  } else {
    const std::uint32_t number = registry.receive_number(end->receives_on);
    end->recv_base = std::uint64_t{number} << detail::kNumberBits;
    end->epoch = ++registry.openings[end->sends_on];
    if (const auto known = registry.send_numbers.find(end->sends_on);
        known != registry.send_numbers.end())
      end->send_base = std::uint64_t{known->second} << detail::kNumberBits;
    registry.senders.emplace(end->sends_on, end.get());
    // A ring opened on this end may take the same-node route: the peer's sends wait to
    // learn (offer_ring, or choose_ucx_receives).
    const bool may_ring = host.node() && host.node()->reaches(l.peer_rank) &&
                          l.mode == CommMode::device;
    end->recv_route = may_ring ? detail::Route::pending : detail::Route::ucx;
    // The peer's sends need our number of the link; it is announced once per opening.
    host.post(l.peer_rank,
              detail::announcement_message({end->receives_on, number, end->epoch, may_ring},
                                           host.rank()));
    // A ring opened before the loop's next message (in the same constructor or entry
    // method) takes the route; otherwise the peer's sends go by UCX, without waiting.
    if (may_ring) {
      host.expect_event();
      host.queue_callback([weak = std::weak_ptr<detail::ChannelEnd>(end)] {
        if (const auto e = weak.lock(); e && !e->closed && e->recv_route == detail::Route::pending)
          e->choose_ucx_receives("");
      });
    }
  }
  registry.open.insert(end.get());
  end_ = std::move(end);
  try {
    end_->settle_send_route();  // the peer may have spoken already
  } catch (...) {
    end_->close();
    throw;
  }
}

Channel::Channel(Channel&&) noexcept = default;
Channel& Channel::operator=(Channel&& other) noexcept {
  if (this != &other) {
    if (end_) end_->close();
    end_ = std::move(other.end_);
  }
  return *this;
}
Channel::~Channel() {
  if (end_) end_->close();
}

bool Channel::is_local() const { return end_ && end_->local(); }

void Channel::send_segment(Segment data, std::shared_ptr<const void> keep,
                           std::function<void()> sent, bool ready) {
  if (!end_) throw Error("send on a channel that is not open");
  end_->send({data, std::move(keep), std::move(sent), ready});
}

void Channel::recv_segment(Segment into, std::shared_ptr<const void> keep, std::size_t element,
                           bool exact, std::function<void(std::size_t)> received) {
  if (!end_) throw Error("receive on a channel that is not open");
  if (end_->ring)
    throw Error(end_->describe(false) + ": a receive ring owns this channel's receives");
  end_->recv({into, std::move(keep), element, exact, std::move(received)});
}

std::shared_ptr<detail::RingCore> Channel::start_ring(
    std::vector<Segment> buffers, std::shared_ptr<const void> keep, std::size_t element,
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
