#include "channel.hpp"

#include "ucx_transport.hpp"
#include "view_pool.hpp"
#include "wire.hpp"

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <sstream>
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

}  // namespace

class ChannelRegistry {
 public:
  std::map<LinkKey, std::uint32_t> receive_numbers;  // links this rank receives on
  std::map<LinkKey, std::uint32_t> send_numbers;     // links it sends on, as peers numbered them
  std::map<LinkKey, ChannelEnd*> local_receivers;    // same-rank ends, by what they receive
  std::map<LinkKey, ChannelEnd*> senders;            // every end, by what it sends
  std::set<ChannelEnd*> open;                        // every open end, for stall reports

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

  bool local() const { return link.peer_rank == host->rank(); }

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
  if (!send_base)
    unnumbered.push_back(std::move(t));  // until the peer tells us its number of the link
  else
    start_send(std::move(t));
}

void ChannelEnd::start_send(Send t) {
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
  }
}

Message announcement_message(const LinkAnnouncement& a, int from_rank) {
  Message m;
  m.header = {MessageKind::channel_link, a.link.collection, a.number, a.link.sender, from_rank};
  ByteWriter w;
  pack<std::int64_t>(w, a.link.receiver);
  pack<std::int32_t>(w, a.link.port);
  m.payload = WireAccess::take_bytes(w);
  return m;
}

LinkAnnouncement read_announcement(const Message& m) {
  const MessageHeader& h = m.header;
  if (m.payload.size() != sizeof(std::int64_t) + sizeof(std::int32_t))
    throw Error(cat("a channel link announcement carries ", m.payload.size(),
                    " bytes of arguments, not 12"));
  if (h.handler > kTransferMask)
    throw Error(cat("field handler of a channel link announcement is ", h.handler,
                    ", beyond the 2^32 link numbers of a rank"));
  ByteReader r(m.payload);
  LinkAnnouncement a{};
  a.link.collection = h.collection;
  a.link.sender = h.target;
  a.link.receiver = unpack<std::int64_t>(r);
  a.link.port = unpack<std::int32_t>(r);
  a.number = static_cast<std::uint32_t>(h.handler);
  if (a.link.port < 0)
    throw Error(cat("a channel link announcement names port ", a.link.port, ", negative"));
  return a;
}

void announce_link(ChannelRegistry& registry, const LinkAnnouncement& a, int from_rank) {
  auto [it, inserted] = registry.send_numbers.try_emplace(a.link, a.number);
  if (!inserted && it->second != a.number)
    throw Error(cat("rank ", from_rank, " numbered the channel link from unit ", a.link.sender,
                    " to unit ", a.link.receiver, " (collection ", a.link.collection, ", port ",
                    a.link.port, ") ", a.number, ", and ", it->second, " before"));
  const auto end = registry.senders.find(a.link);
  if (end == registry.senders.end() || end->second->send_base) return;
  ChannelEnd& e = *end->second;
  e.send_base = std::uint64_t{a.number} << kNumberBits;
  while (!e.unnumbered.empty()) {
    ChannelEnd::Send t = std::move(e.unnumbered.front());
    e.unnumbered.pop_front();
    e.start_send(std::move(t));
  }
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
    for (const auto& [transfer, bytes] : e->sending)
      os << "\n  " << e->describe(true) << ": transfer " << transfer << " (" << bytes << " bytes) "
         << (e->send_base ? "in flight, not yet received"
                          : "waiting for the receiving unit to open its end");
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
  if (transfer >= r.handed)
    throw Error(cat(r.end->describe(false), ": transfer ", transfer,
                    " was released before the ring handed it over"));
  ++r.released;
  const std::size_t b = transfer % r.size();
  if (!stream) {
    r.free[b] = true;
    return r.post_free();
  }
  r.end->host->when_done(*stream, [weak = r.weak_from_this(), b] {
    if (const auto self = weak.lock()) {
      self->free[b] = true;
      self->post_free();
    }
  });
}

void stop_ring(RingCore& core) { core.stopped = true; }

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
    if (const auto known = registry.send_numbers.find(end->sends_on);
        known != registry.send_numbers.end())
      end->send_base = std::uint64_t{known->second} << detail::kNumberBits;
    registry.senders.emplace(end->sends_on, end.get());
    // The peer's sends need our number of the link; it is announced once per opening.
    host.post(l.peer_rank, detail::announcement_message({end->receives_on, number}, host.rank()));
  }
  registry.open.insert(end.get());
  end_ = std::move(end);
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
