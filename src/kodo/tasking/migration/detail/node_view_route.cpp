// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Migration's views between ranks of one node (node_view_route.hpp).
#include <kodo/tasking/migration/detail/node_view_route.hpp>

#include <kodo/backends/detail/native.hpp>
#include <kodo/comm/channel.hpp>
#include <kodo/comm/detail/channel_end.hpp>
#include <kodo/comm/detail/node_channels.hpp>
#include <kodo/comm/detail/transport_staging.hpp>
#include <kodo/core/detail/agree.hpp>
#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/core/error.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <string>

namespace kodo::detail {
namespace {

constexpr std::uint64_t kSlots = 4;  // per receiving rank, shared by its senders
constexpr std::uint64_t kHostPieceBytes = std::uint64_t{256} << 10;
constexpr std::uint64_t kSlotAlignment = 256;

// Asked (receiver to sender): copy piece `number` into slot `slot`. Filled (sender to
// receiver): it is there.
struct Notice {
  std::uint64_t number = 0, slot = 0;
};

// A rank this rank sends pieces to: its slots as this rank addresses them, and its
// pieces (indices into `outgoing`) in order.
struct Receiver {
  std::byte* slots_at = nullptr;
  SlotsOffer offer;
  std::vector<std::size_t> pieces;
  std::size_t next = 0;  // the next piece it may ask for
};

// Host builds: this rank's slots in its node segment, given back on every way out (peers
// write into them only after every rank has agreed, and finish before the barrier that
// ends the exchange).
struct SegmentSlots {
  NodeChannels& node;
  std::optional<std::uint64_t> place;
  std::size_t bytes = 0;
  ~SegmentSlots() {
    if (place) node.release(*place, bytes);
  }
};

// One migration's pieces by this route on this rank, step by step (move_views_on_node).
struct NodeExchange {
  NodeExchange(ChannelHost& host, MPI_Comm comm, const std::vector<ViewPiece>& outgoing,
               const std::vector<ViewPiece>& incoming)
      : node(*host.node()),
        staging(host.transport_staging()),
        comm(comm),
        outgoing(outgoing),
        incoming(incoming) {
    KODO_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  }

  NodeChannels& node;
  TransportStaging& staging;
  MPI_Comm comm;
  const std::vector<ViewPiece>& outgoing;
  const std::vector<ViewPiece>& incoming;
  int rank = 0;
  MemoryKind slot_kind = host_build ? MemoryKind::host
                                    : memory_kind<ExecutionSpace::memory_space>();
  // This rank's slots: room for its largest incoming piece each.
  std::uint64_t slot_bytes = 0, slots = 0;
  SlotsOffer offer{};
  std::byte* own = nullptr;
  SegmentSlots segment{node, std::nullopt, 0};
  std::map<int, Receiver> receivers;  // by rank
  std::vector<int> senders;
  std::vector<MPI_Request> requests;

  bool offer_slots();
  void trade_offers(Watchdog& watchdog);
  void map_offered_slots();
  void move_pieces(StreamPool& streams);
};

}  // namespace

void check_offer(const SlotsOffer& o, std::uint64_t largest, std::uint64_t room, int from) {
  const bool fits = o.slots >= 1 && o.slots <= kSlots && o.slot_bytes >= largest &&
                    o.slot_bytes > 0 && o.place <= room &&
                    o.slots <= (room - o.place) / o.slot_bytes;
  if (!fits)
    throw Error(cat("rank ", from, " offered malformed slots for moving units' views (", o.slots,
                    " of ", o.slot_bytes, " bytes at ", o.place, " of ", room,
                    " bytes; its pieces from here are up to ", largest, " bytes)"));
}

bool node_view_route_open(ChannelHost& host, MPI_Comm comm) {
  int rank = 0, size = 0;
  KODO_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  KODO_MPI_CHECK(MPI_Comm_size(comm, &size));
  NodeChannels* node = host.node();
  int open = node != nullptr && node->selection() != ChannelSelection::ucx;
  for (int r = 0; open && r < size; ++r) open = r == rank || node->reaches(r);
  int all = 0;
  KODO_MPI_CHECK(MPI_Allreduce(&open, &all, 1, MPI_INT, MPI_MIN, comm));
  return all == 1;
}

std::uint64_t node_view_piece_bytes(std::uint64_t setting) {
  return host_build ? std::min(setting, kHostPieceBytes) : setting;
}

namespace {

// 1. This rank's slots: room for its largest incoming piece each. False, agreed on by
// every rank, when some rank cannot offer its slots.
bool NodeExchange::offer_slots() {
  for (const ViewPiece& p : incoming)
    slot_bytes = std::max<std::uint64_t>(slot_bytes, p.data.bytes);
  slot_bytes = (slot_bytes + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
  slots = std::min<std::uint64_t>(kSlots, incoming.size());
  const std::size_t slots_bytes = static_cast<std::size_t>(slots * slot_bytes);
  offer = SlotsOffer{0, slot_bytes, slots, {}};
  segment.bytes = slots_bytes;
  std::string why;  // this rank cannot offer slots
  std::string problem;
  if (slots > 0) try {
      if constexpr (host_build) {
        segment.place = node.allocate(slots_bytes);
        if (segment.place) {
          offer.place = *segment.place;
          own = node.host(rank, *segment.place);
        } else {
          why = cat("the node segment (", node.segment_bytes(),
                    " bytes, KODO_NODE_SEGMENT_BYTES) has no room for ", slots, " slots of ",
                    slot_bytes, " bytes");
        }
      } else {
        // Memory refused once is refused again: later migrations do not try.
        if (staging.slots_refused.empty()) {
          own = staging.at_least(slots_bytes);
          backend::MemoryExport exported;
          if (backend::export_memory(own, exported, staging.slots_refused)) {
            offer.place = exported.offset;
            offer.handle = exported.handle;
          }
        }
        why = staging.slots_refused;
      }
    } catch (...) {
      problem = what_of_current();
    }
  int ready = why.empty(), all_ready = 0;
  KODO_MPI_CHECK(MPI_Allreduce(&ready, &all_ready, 1, MPI_INT, MPI_MIN, comm));
  if (!all_ready && node.selection() == ChannelSelection::device && problem.empty() && !ready)
    problem = cat("rank ", rank, " cannot offer slots for moving units' views by the same-node ",
                  "route (KODO_CHANNELS=device): ", why);
  agree_and_report(comm, problem);
  if (!all_ready) {
    if (!ready)
      node.notice(cat("moving units' views go through UCX, not the same-node route: ", why));
    return false;
  }
  return true;
}

// 2. Offers go to every rank this rank receives from.
void NodeExchange::trade_offers(Watchdog& watchdog) {
  for (std::size_t i = 0; i < outgoing.size(); ++i) receivers[outgoing[i].peer].pieces.push_back(i);
  for (const ViewPiece& p : incoming)
    if (std::find(senders.begin(), senders.end(), p.peer) == senders.end())
      senders.push_back(p.peer);
  std::vector<std::string> names;  // what each request waits for
  for (const int s : senders) {
    requests.emplace_back();
    KODO_MPI_CHECK(MPI_Isend(&offer, sizeof(SlotsOffer), MPI_BYTE, s, kOfferTag, comm,
                             &requests.back()));
    names.push_back(cat("rank ", s, " to take the slots this rank offers (the same-node route)"));
  }
  for (auto& [r, receiver] : receivers) {
    requests.emplace_back();
    KODO_MPI_CHECK(MPI_Irecv(&receiver.offer, sizeof(SlotsOffer), MPI_BYTE, r, kOfferTag, comm,
                             &requests.back()));
    names.push_back(cat("the slots rank ", r, " offers (the same-node route)"));
  }
  wait_naming(watchdog, requests, [&](std::size_t i) { return names[i]; });
  requests.clear();
}

// Each sender checks the offers it gets against its pieces and the memory they name,
// mapping the receivers' slots (device builds); every rank agrees on a problem.
void NodeExchange::map_offered_slots() {
  std::string problem;
  try {
    for (auto& [r, receiver] : receivers) {
      const SlotsOffer& o = receiver.offer;
      std::uint64_t largest = 0;
      for (const std::size_t i : receiver.pieces)
        largest = std::max<std::uint64_t>(largest, outgoing[i].data.bytes);
      std::uint64_t room = 0;
      std::byte* start = nullptr;
      if constexpr (host_build) {
        room = node.segment_bytes();
        start = node.host(r, 0);
      } else {
        check_offer(o, largest, std::uint64_t{1} << 40, r);  // before mapping what it names
        auto& kept = staging.peer_slots[{r, o.handle}];
        if (!kept.first) {
          std::size_t bytes = 0;
          std::string cannot;
          void* mapped = node.import(r, o.handle, bytes, cannot);
          if (!mapped)
            throw Error(cat("rank ", rank, " cannot map the slots rank ", r,
                            " offers for moving units' views: ", cannot));
          kept = {static_cast<std::byte*>(mapped), bytes};
        }
        start = kept.first;
        room = kept.second;
      }
      check_offer(o, largest, room, r);
      receiver.slots_at = start + o.place;
    }
  } catch (...) {
    problem = what_of_current();
  }
  agree_and_report(comm, problem);
}

// 3. The pieces. Sends' copies go on one communication stream, copies out of this
// rank's slots on another, each followed by a mark the loop reads without waiting.
class PieceMover {
 public:
  PieceMover(NodeExchange& x, StreamPool& streams, PieceWaits& waits)
      : x_(x),
        waits_(waits),
        waiting_(waits.watchdog, {}),
        out_(streams.communication(0)),
        in_(streams.communication(1)),
        own_slots_(static_cast<std::size_t>(x.slots)) {}

  void run() {
    for (std::uint64_t turn = 1; done_in_ < x_.incoming.size() || done_out_ < x_.outgoing.size();
         ++turn) {
      ask_for_pieces();
      answer_asks();
      tell_filled();
      copy_out_filled();
      free_copied_slots();
      if (turn % 4096 == 0) check_health();
      if (const std::size_t moved = done_in_ + done_out_ + answered_; moved != moved_) {
        moved_ = moved;
        waiting_.update(waited_for());
      }
    }
    waiting_.update({});  // for the other ranks, unnamed
    KODO_MPI_CHECK(MPI_Waitall(static_cast<int>(x_.requests.size()), x_.requests.data(),
                               MPI_STATUSES_IGNORE));
    // Senders write into these slots until every rank is done.
    KODO_MPI_CHECK(MPI_Barrier(x_.comm));
  }

 private:
  struct Slot {
    bool asked = false;
    std::size_t piece = 0;
    std::uint64_t copied = 0;  // the mark after its copy out, once filled
  };
  struct Filling {
    int receiver;
    Notice notice;
    std::uint64_t mark;
  };

  // What this rank waits for from a peer: the oldest of its pieces asked for and not
  // filled, else a receiver that has not asked for its next piece.
  std::string waited_for() const {
    const Slot* oldest = nullptr;
    for (const Slot& slot : own_slots_)
      if (slot.asked && slot.copied == 0 && (!oldest || slot.piece < oldest->piece)) oldest = &slot;
    if (oldest) {
      const ViewPiece& p = x_.incoming[oldest->piece];
      return cat("rank ", p.peer, " to fill ", waits_.piece(p),
                 " into the slot this rank asked for it (the same-node route)");
    }
    for (const auto& [r, receiver] : x_.receivers)
      if (receiver.next < receiver.pieces.size())
        return cat("rank ", r, " to ask for ",
                   waits_.piece(x_.outgoing[receiver.pieces[receiver.next]]),
                   " (the same-node route)");
    return "its own copies of moving units' views";
  }

  void notify(int peer, int tag, const Notice& n) {
    notices_.push_back(n);
    x_.requests.emplace_back();
    KODO_MPI_CHECK(MPI_Isend(&notices_.back(), 2, MPI_UINT64_T, peer, tag, x_.comm,
                             &x_.requests.back()));
  }
  // The rank of the next notice of `tag`, received into `n`, or -1: none yet.
  int next_notice(int tag, Notice& n) {
    int there = 0;
    MPI_Status status;
    KODO_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, tag, x_.comm, &there, &status));
    if (!there) return -1;
    int count = 0;
    KODO_MPI_CHECK(MPI_Get_count(&status, MPI_UINT64_T, &count));
    if (count != 2)
      throw Error(cat("rank ", status.MPI_SOURCE, " sent a notice of ", count,
                      " words about moving units' views"));
    KODO_MPI_CHECK(MPI_Recv(&n, 2, MPI_UINT64_T, status.MPI_SOURCE, tag, x_.comm,
                            MPI_STATUS_IGNORE));
    return status.MPI_SOURCE;
  }

  // Each free slot of this rank asks the sender of the next piece for it.
  void ask_for_pieces() {
    for (std::size_t s = 0; s < own_slots_.size(); ++s) {
      Slot& slot = own_slots_[s];
      if (slot.asked || next_in_ == x_.incoming.size()) continue;
      slot = Slot{true, next_in_++, 0};
      const ViewPiece& p = x_.incoming[slot.piece];
      notify(p.peer, kAskTag, Notice{p.number, s});
    }
  }
  // Each piece asked of this rank, in turn, copied into the receiver's slot.
  void answer_asks() {
    Notice n;
    for (int from; (from = next_notice(kAskTag, n)) >= 0;) {
      const auto it = x_.receivers.find(from);
      if (it == x_.receivers.end() || it->second.next == it->second.pieces.size() ||
          x_.outgoing[it->second.pieces[it->second.next]].number != n.number ||
          n.slot >= it->second.offer.slots)
        throw Error(cat("rank ", from, " asked rank ", x_.rank,
                        " for a piece of a moving unit's view out of turn (piece ", n.number,
                        " into slot ", n.slot, ")"));
      Receiver& r = it->second;
      const ViewPiece& p = x_.outgoing[r.pieces[r.next++]];
      copy_bytes(out_.space(),
                 Segment{r.slots_at + n.slot * r.offer.slot_bytes, p.data.bytes, x_.slot_kind},
                 p.data, p.data.bytes);
      filling_.push_back(Filling{from, n, out_.mark()});
      ++answered_;
    }
  }
  // The receivers of the copies done are told.
  void tell_filled() {
    for (; !filling_.empty() && out_.reached() >= filling_.front().mark; filling_.pop_front()) {
      notify(filling_.front().receiver, kFilledTag, filling_.front().notice);
      ++done_out_;
    }
  }
  // Each slot of this rank a sender filled, copied out to where its piece goes.
  void copy_out_filled() {
    Notice n;
    for (int from; (from = next_notice(kFilledTag, n)) >= 0;) {
      Slot* slot = n.slot < own_slots_.size() ? &own_slots_[n.slot] : nullptr;
      if (!slot || !slot->asked || slot->copied != 0 || x_.incoming[slot->piece].peer != from ||
          x_.incoming[slot->piece].number != n.number)
        throw Error(cat("rank ", from, " told rank ", x_.rank,
                        " of a piece of a moving unit's view it did not ask for (piece ", n.number,
                        " in slot ", n.slot, ")"));
      const ViewPiece& p = x_.incoming[slot->piece];
      copy_bytes(in_.space(), p.data,
                 Segment{x_.own + n.slot * x_.slot_bytes, p.data.bytes, x_.slot_kind},
                 p.data.bytes);
      slot->copied = in_.mark();
    }
  }
  void free_copied_slots() {
    for (Slot& slot : own_slots_)
      if (slot.asked && slot.copied != 0 && in_.reached() >= slot.copied) {
        slot = Slot{};
        ++done_in_;
      }
  }
  void check_health() {
    out_.check_health();  // a device fault would leave the marks unreached
    in_.check_health();
    for (const int r : x_.senders)  // a peer that exited answers nothing more
      if (!x_.node.alive(r)) throw Error(cat("rank ", r, " exited while sending its pieces"));
    for (const auto& [r, receiver] : x_.receivers)
      if (receiver.next < receiver.pieces.size() && !x_.node.alive(r))
        throw Error(cat("rank ", r, " exited while receiving its pieces"));
  }

  NodeExchange& x_;
  PieceWaits& waits_;
  WatchdogWait waiting_;
  Stream& out_;
  Stream& in_;
  std::vector<Slot> own_slots_;
  std::deque<Filling> filling_;  // in `out_`'s order
  std::deque<Notice> notices_;   // sent, until their sends complete
  std::size_t next_in_ = 0, done_in_ = 0, done_out_ = 0;
  std::size_t answered_ = 0, moved_ = ~std::size_t{0};  // asks answered; progress seen
};

}  // namespace

bool move_views_on_node(ChannelHost& host, StreamPool& streams, MPI_Comm comm,
                        const std::vector<ViewPiece>& outgoing,
                        const std::vector<ViewPiece>& incoming, PieceWaits& waits) {
  NodeExchange x(host, comm, outgoing, incoming);
  if (!x.offer_slots()) return false;
  x.trade_offers(waits.watchdog);
  x.map_offered_slots();
  try {
    PieceMover(x, streams, waits).run();
  } catch (...) {
    fatal(cat("moving units' views between ranks of one node failed on rank ", x.rank, ": ",
              what_of_current()));
  }
  return true;
}

}  // namespace kodo::detail
