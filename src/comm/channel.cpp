#include "channel.hpp"

#include "ucx_transport.hpp"

#include <deque>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_set>
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

constexpr int kSequenceBits = 16, kPortBits = 4, kUnitBits = 16, kCollectionBits = 12;
constexpr std::uint64_t kSequenceMask = (std::uint64_t{1} << kSequenceBits) - 1;

std::uint64_t tag_base(std::uint32_t collection, std::int64_t receiver, std::int64_t sender,
                       int port) {
  return std::uint64_t{collection} << (64 - kCollectionBits) |
         static_cast<std::uint64_t>(receiver) << (kSequenceBits + kPortBits + kUnitBits) |
         static_cast<std::uint64_t>(sender) << (kSequenceBits + kPortBits) |
         static_cast<std::uint64_t>(port) << kSequenceBits;
}

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

using Staging = Kokkos::View<std::byte*, Kokkos::SharedHostPinnedSpace>;

}  // namespace

// One end of a link. Shared with the continuations of its transfers in flight, so a
// completion that arrives after the Channel object is gone finds valid state.
struct ChannelEnd : std::enable_shared_from_this<ChannelEnd> {
  struct Send {
    Segment segment;
    std::shared_ptr<const void> keep;
    std::function<void()> done;  // optional: the data may be written again
    Stream* stream = nullptr;    // a same-rank send: the sender's stream orders the copy
  };
  struct Receive {
    Segment segment;
    std::shared_ptr<const void> keep;
    std::size_t element;                    // bytes per element of the receiving view
    bool exact;                             // the transfer must fill the view
    std::function<void(std::size_t)> done;  // told the bytes that arrived
  };

  ChannelHost* host;
  LinkSpec link;  // where it goes
  std::uint64_t send_base, recv_base;
  std::uint64_t sends = 0, receives = 0;
  bool closed = false;
  // Same rank: receives posted and sends made, matched in order.
  std::deque<Receive> posted;
  std::deque<Send> arrived;
  // Other ranks: UCX receives not completed yet (cancelled when the channel closes).
  std::unordered_set<void*> in_flight;
  std::vector<Staging> spare;  // pinned host buffers (host-staged mode)

  bool local() const { return link.peer_rank == host->rank(); }

  std::string describe(bool outgoing) const {
    std::ostringstream os;
    os << "channel from unit " << (outgoing ? link.self : link.peer) << " to unit "
       << (outgoing ? link.peer : link.self) << " (collection " << link.collection << ", port "
       << link.port << ")";
    return os.str();
  }

  Staging take_staging(std::size_t bytes) {
    for (auto it = spare.begin(); it != spare.end(); ++it)
      if (it->extent(0) >= bytes) {
        Staging s = *it;
        spare.erase(it);
        return s;
      }
    return Staging(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kodo::channel_staging"), bytes);
  }
  static Segment segment_of(const Staging& s) {
    return Segment{s.data(), s.extent(0), MemoryKind::host};
  }

  // Checks a transfer of `bytes` against the receive it landed in; ends the job if it
  // does not fit (a transfer nobody can take is no error its sender could handle).
  void check_arrival(const Receive& r, std::size_t bytes) const {
    const char* problem = bytes > r.segment.bytes  ? "does not fit"
                          : bytes % r.element != 0 ? "is not a whole number of elements of"
                          : r.exact && bytes != r.segment.bytes ? "does not fill"
                                                                : nullptr;
    if (problem)
      fatal(cat(describe(false), ": a message of ", bytes, " bytes ", problem,
                " the receiving view of ", r.segment.bytes, " bytes",
                r.exact && bytes < r.segment.bytes
                    ? " (a receive whose completion takes a count accepts fewer)"
                    : ""));
  }

  void send(Send t, bool ready);
  void recv(Receive r);
  void match_local();
  void close();
};

void ChannelEnd::send(Send t, bool ready) {
  host->expect_event();              // the receiver's completion
  if (t.done) host->expect_event();  // and ours
  if (local()) {
    auto& table = host->channel_table();
    auto it = table.find({link.collection, link.shape.linear(link.peer),
                          link.shape.linear(link.self), link.port});
    if (it == table.end())
      throw Error(describe(true) + ": the receiving unit has no end of this channel");
    t.stream = link.stream;
    it->second->arrived.push_back(std::move(t));
    it->second->match_local();
    return;
  }
  const std::uint64_t tag = send_base | (sends++ & kSequenceMask);
  auto self_ptr = shared_from_this();
  Segment from = t.segment;
  Staging staging;
  if (link.mode == CommMode::host_staged && from.bytes != 0) {
    staging = take_staging(from.bytes);
    copy_bytes(link.stream->space(), segment_of(staging), from, from.bytes);
    from = Segment{staging.data(), t.segment.bytes, MemoryKind::host};
  }
  auto start = [self_ptr, tag, from, staging, t = std::move(t)]() mutable {
    self_ptr->host->transport().tag_send(
        self_ptr->link.peer_rank, tag, from,
        [self_ptr, staging, t = std::move(t)](ucs_status_t status, std::size_t) mutable {
          if (status != UCS_OK)
            fatal(self_ptr->describe(true) + ": a send failed: " + ucs_status_string(status));
          if (staging.data()) self_ptr->spare.push_back(staging);
          if (t.done) self_ptr->host->queue_callback(std::move(t.done));
        });
  };
  if (ready && !staging.data())
    start();
  else
    host->when_done(*link.stream, std::move(start));
}

void ChannelEnd::recv(Receive t) {
  if (local()) {
    posted.push_back(std::move(t));
    match_local();
    return;
  }
  const std::uint64_t tag = recv_base | (receives++ & kSequenceMask);
  auto self_ptr = shared_from_this();
  const std::size_t capacity = t.segment.bytes;
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
      [self_ptr, handle, capacity, staging, t = std::move(t)](ucs_status_t status,
                                                              std::size_t length) mutable {
        ChannelEnd& end = *self_ptr;
        end.in_flight.erase(*handle);
        if (status == UCS_ERR_CANCELED) return;
        if (status == UCS_ERR_MESSAGE_TRUNCATED)
          fatal(cat(end.describe(false), ": a message of ", length,
                    " bytes does not fit the receiving view of ", capacity, " bytes"));
        if (status != UCS_OK)
          fatal(end.describe(false) + ": a receive failed: " + ucs_status_string(status));
        end.check_arrival(t, length);
        if (!staging.data()) return end.host->queue_callback(std::move(t.done), length);
        // Host-staged: into the view on this end's stream, then the unit learns of it.
        end.host->queue_callback([self_ptr, staging, length, t = std::move(t)]() mutable {
          ChannelEnd& e = *self_ptr;
          copy_bytes(e.link.stream->space(), t.segment, segment_of(staging), length);
          e.host->when_done(*e.link.stream,
                            [self_ptr, staging, length, t = std::move(t)]() mutable {
                              self_ptr->spare.push_back(staging);
                              t.done(length);
                            });
        });
      });
  if (*handle) in_flight.insert(*handle);
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
    check_arrival(into, bytes);
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
  if (local()) {
    host->channel_table().erase({link.collection, link.shape.linear(link.self),
                                 link.shape.linear(link.peer), link.port});
  } else {
    for (void* request : std::vector<void*>(in_flight.begin(), in_flight.end()))
      host->transport().cancel(request);
  }
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
  else if (l.collection >= (1u << detail::kCollectionBits))
    problem << "channels are limited to the first " << (1 << detail::kCollectionBits)
            << " collections of a program (collection " << l.collection << ")";
  else if (l.shape.size() > (std::int64_t{1} << detail::kUnitBits))
    problem << "channels are limited to collections of " << (1 << detail::kUnitBits)
            << " units (this one has " << l.shape.size() << ")";
  else if (l.port < 0 || l.port >= (1 << detail::kPortBits))
    problem << "a channel port must be in [0, " << (1 << detail::kPortBits) << "), not " << l.port;
  if (!problem.str().empty()) throw Error(problem.str());

  auto end = std::make_shared<detail::ChannelEnd>();
  end->host = &host;
  end->link = l;
  end->send_base = detail::tag_base(l.collection, peer, self, l.port);
  end->recv_base = detail::tag_base(l.collection, self, peer, l.port);
  if (end->local()) {
    auto [it, inserted] =
        host.channel_table().try_emplace({l.collection, self, peer, l.port}, end.get());
    if (!inserted) throw Error("two channels open on one " + end->describe(false));
  }
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
  end_->send({data, std::move(keep), std::move(sent), nullptr}, ready);
}

void Channel::recv_segment(Segment into, std::shared_ptr<const void> keep, std::size_t element,
                           bool exact, std::function<void(std::size_t)> received) {
  if (!end_) throw Error("receive on a channel that is not open");
  end_->recv({into, std::move(keep), element, exact, std::move(received)});
}

}  // namespace kodo
