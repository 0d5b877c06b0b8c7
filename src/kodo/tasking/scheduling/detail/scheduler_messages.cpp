// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The scheduler's messages (scheduler.hpp): what arrives from other ranks checked field by
// field before it is used (the target collection and unit, the handler, the room for its
// views and links), landed in the views posted for it, and dispatched to its entry
// method, reduction, channel or ring.
#include <kodo/backends/detail/native.hpp>
#include <kodo/comm/detail/eager_landing.hpp>
#include <kodo/comm/detail/node_channels.hpp>
#include <kodo/comm/detail/ucx_transport.hpp>
#include <kodo/tasking/scheduling/detail/scheduler.hpp>
#include <kodo/tasking/units/detail/entry.hpp>

#include <cstring>
#include <string_view>

namespace kodo::detail {

// What a dispatched message is called in traces (KODO_TRACE) and profilers (Kokkos Tools
// regions): an entry method by its name (unit type and method), kodo's own work as
// kodo::...
const std::string& Scheduler::work_name(const Message& m) {
  static const std::string channel = "kodo::channel completion", reduction = "kodo::reduction",
                           link = "kodo::channel link announcement", ring = "kodo::channel ring";
  switch (m.header.kind) {
    case MessageKind::invoke: return short_handler_name(m.header.handler);
    case MessageKind::callback: return channel;
    case MessageKind::channel_link: return link;
    case MessageKind::channel_ring: return ring;
    default: return reduction;
  }
}

CollectionBase& Scheduler::checked_collection(const MessageHeader& h) {
  if (h.collection >= collections_.size())
    throw Error(cat("field collection is ", h.collection, "; rank ", rank_, " has ",
                    collections_.size(), " collection(s)"));
  return *collections_[h.collection];
}

CollectionBase& Scheduler::checked_target(const MessageHeader& h, std::int64_t& slot) {
  CollectionBase& c = checked_collection(h);
  if (h.target >= c.shape().size())
    throw Error(cat("field target is ", h.target, ", outside collection ", c.id(), " of ",
                    c.shape().size(), " units"));
  slot = c.slot_of(h.target);
  if (slot < 0)
    throw Error(cat("field target names unit ", c.shape().delinear(h.target), " of collection ",
                    c.id(), ", which rank ", rank_, " does not hold"));
  return c;
}

namespace {
const EntryHandler& entry_handler(const CollectionBase& c, HandlerId id) {
  std::string problem;
  const auto* entry = static_cast<const EntryHandler*>(find_handler(id, HandlerKind::entry,
                                                                    c.unit_type(), problem));
  if (!entry) throw Error(problem);
  return *entry;
}
}  // namespace

// Called by the transport, inside UCX, before it makes a buffer for a large message
// without views: what the message names is checked first.
void Scheduler::admit(const MessageHeader& h, std::uint64_t bytes) {
  if (h.kind == MessageKind::invoke) {
    std::int64_t slot = 0;
    entry_handler(checked_target(h, slot), h.handler);
  } else {
    reductions_.check_value(checked_collection(h), h.handler, bytes);
  }
}

// Called by the transport, inside UCX, for a call whose views are about to land: the
// header and all the arguments are checked, then the views taken from the pool. Errors
// propagate to the transport, which ends the job naming the sender.
std::vector<Segment> Scheduler::prepare(Message& message, std::uint64_t view_data) {
  std::int64_t slot = 0;
  const CollectionBase& c = checked_target(message.header, slot);
  const EntryHandler& entry = entry_handler(c, message.header.handler);
  ByteReader check(message.payload);
  WireAccess::check_views(check, view_data);
  entry.check(check);
  if (const auto left = WireAccess::view_data_left(check); left != 0)
    throw Error(cat("a call carries ", view_data, " bytes of view data; its arguments describe ",
                    view_data - left));
  std::vector<Segment> destinations;
  ByteReader reader(message.payload);
  WireAccess::expect_views(reader, destinations, view_data, &pool_);
  message.local = entry.receive(reader);
  message.payload.clear();
  return destinations;
}

// Called by the transport, inside UCX, for a call whose view data came with it (eager)
// into UCX's host memory, which lasts only for this call (eager_landing.hpp). Data for
// device views goes by an asynchronous copy on a communication stream; the call is
// queued once that copy is done (the completion engine: the loop never waits for it).
void Scheduler::land_eager(Message&& message, const std::vector<Segment>& into,
                           const std::byte* data) {
  Stream& stream = streams_.communication(0);
  ViewPool::Staging staging = land_eager_data(pool_, stream.space(), into, data);
  if (!staging.is_allocated()) return queue_.push_back(std::move(message));
  // The continuation keeps the staging memory (and the message's views) until then.
  auto landed = std::make_shared<Message>(std::move(message));
  when_done(stream, [this, landed, staging] { queue_.push_back(std::move(*landed)); });
}

void Scheduler::dispatch_checked(Message& message) {
  switch (message.header.kind) {
    case MessageKind::callback:
      if (message.from_wire) break;
      return message.local->invoke(nullptr);
    case MessageKind::invoke: return invoke(message);
    case MessageKind::reduction_partial:
      return reductions_.on_partial(checked_collection(message.header), message.header,
                                    std::move(message.payload));
    case MessageKind::reduction_result:
      return reductions_.on_result(checked_collection(message.header), message.header,
                                   std::move(message.payload), message.from_wire);
    case MessageKind::channel_link: return on_link_announced(message);
    case MessageKind::channel_ring: return on_ring_message(message);
  }
  throw Error(cat("field kind is ", to_string(message.header.kind), ", which no rank sends"));
}

// A peer's number for a link this rank sends on: the units it names are checked
// against the collection (the sending unit is held here, the receiving one by the peer).
void Scheduler::on_link_announced(const Message& message) {
  std::int64_t slot = 0;
  const CollectionBase& c = checked_target(message.header, slot);
  const LinkAnnouncement a = read_announcement(message);
  if (a.link.receiver < 0 || a.link.receiver >= c.shape().size() ||
      a.link.receiver == a.link.sender ||
      c.map().owner(a.link.receiver) != message.header.source_rank)
    throw Error(cat("field receiver of a channel link announcement from rank ",
                    message.header.source_rank, " names unit ", a.link.receiver,
                    ", which that rank does not hold"));
  if (adds_announced_link(*channels_, a.link, a.epoch)) check_link_room();
  announce_link(*channels_, a, message.header.source_rank);
}

// Links other ranks may tell this one about over a run (closed channels included, until
// a migration clears them): kLinksPerUnit for each unit held here, so that announcements
// cannot grow the registry without end. The error names the rank that announced most.
void Scheduler::check_link_room() const {
  constexpr std::uint64_t kLinksPerUnit = 1024, kLinksSlack = 4096;
  std::uint64_t units = 0;
  for (const auto& c : collections_) units += static_cast<std::uint64_t>(c->local_count());
  const std::uint64_t room = kLinksPerUnit * units + kLinksSlack;
  if (announced_links(*channels_) < room) return;
  const int most = most_announcing_rank(*channels_, [this](const LinkKey& l) {
    return l.collection < collections_.size() ? collections_[l.collection]->map().owner(l.receiver)
                                              : -1;
  });
  throw Error(cat("rank ", most, " announced the most of the ", room,
                  " channel links this rank keeps (", kLinksPerUnit, " for each of its ", units,
                  " unit(s), and ", kLinksSlack,
                  ", over the run); a unit with more channel partners needs more units"));
}

// A same-node ring offered, refused or declined by a peer: its units are checked as an
// announcement's, and the sender shares this node and takes the route.
void Scheduler::on_ring_message(const Message& message) {
  const int from = message.header.source_rank;
  if (!node_ || !node_->reaches(from))
    throw Error(cat("field source_rank: rank ", from, " sent a same-node ring message, but ",
                    node_ ? "it does not share this rank's node"
                          : "this rank takes no same-node route"));
  std::int64_t slot = 0;
  const CollectionBase& c = checked_target(message.header, slot);
  RingMessage ring = read_ring_message(message, node_->segment_bytes());
  const std::int64_t other = ring.route == RingMessage::refusal ? ring.link.sender
                                                                : ring.link.receiver;
  if (other < 0 || other >= c.shape().size() || other == message.header.target ||
      c.map().owner(other) != from)
    throw Error(cat("field ", ring.route == RingMessage::refusal ? "sender" : "receiver",
                    " of a same-node ring message from rank ", from, " names unit ", other,
                    ", which that rank does not hold"));
  if (adds_announced_link(*channels_, ring.link, ring.epoch)) check_link_room();
  apply_ring_message(*channels_, std::move(ring), from);
}

void Scheduler::fail_with_peer(int rank, const std::string& what) {
  print_fatal(what);
  if (rank != rank_) transport_->report_fault(rank, what);
  abort_job();
}

void Scheduler::dispatch(Message& message) {
  try {
    dispatch_checked(message);
  } catch (...) {
    fatal(cat("while running a message from rank ", message.header.source_rank, ": ",
              what_of_current()));
  }
}

void Scheduler::invoke(Message& message) {
  const MessageHeader& h = message.header;
  std::int64_t slot = 0;
  CollectionBase* c = nullptr;
  std::unique_ptr<Call> call;
  if (message.local) {
    // Built on this rank by Collection, or from another rank's call by prepare(), which
    // checked its target: the unit is held here.
    c = collections_[h.collection].get();
    slot = c->slot_of(h.target);
  } else {
    c = &checked_target(h, slot);
    ByteReader reader(message.payload);
    call = entry_handler(*c, h.handler).receive(reader);
  }
  Call& invoked = message.local ? *message.local : *call;
  std::optional<WatchdogScope> inside;
  if (watchdog_.active())
    inside.emplace(watchdog_,
                   Watchdog::Place{Watchdog::Inside::entry_method, &short_handler_name(h.handler),
                                   h.collection, c->shape().delinear(h.target)});
  // The time the unit's entry method takes is its measured load (balance.hpp), where
  // the collection's loads are measured and the unit states none of its own.
  time_for_load(*c, slot, [&] { invoked.invoke(c->unit_at(slot)); });
}

}  // namespace kodo::detail
