// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Migration's views between ranks of one node (node_view_route.hpp).
#include <kodo/tasking/detail/node_view_route.hpp>

#include <kodo/backends/detail/native.hpp>
#include <kodo/comm/channel.hpp>
#include <kodo/comm/detail/channel_end.hpp>
#include <kodo/comm/detail/node_channels.hpp>
#include <kodo/comm/detail/transport_staging.hpp>
#include <kodo/core/agree.hpp>
#include <kodo/core/error.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <string>

namespace kodo::detail {
namespace {

constexpr int kOfferTag = 11, kAskTag = 12, kFilledTag = 13;
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
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  NodeChannels* node = host.node();
  int open = node != nullptr && node->selection() != ChannelSelection::ucx;
  for (int r = 0; open && r < size; ++r) open = r == rank || node->reaches(r);
  int all = 0;
  check_mpi(MPI_Allreduce(&open, &all, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  return all == 1;
}

std::uint64_t node_view_piece_bytes(std::uint64_t setting) {
  return host_build ? std::min(setting, kHostPieceBytes) : setting;
}

bool move_views_on_node(ChannelHost& host, StreamPool& streams, MPI_Comm comm,
                        const std::vector<ViewPiece>& outgoing,
                        const std::vector<ViewPiece>& incoming) {
  NodeChannels& node = *host.node();
  TransportStaging& staging = host.transport_staging();
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  const MemoryKind slot_kind = host_build ? MemoryKind::host
                                          : memory_kind<ExecutionSpace::memory_space>();

  // 1. This rank's slots: room for its largest incoming piece each.
  std::uint64_t slot_bytes = 0;
  for (const ViewPiece& p : incoming)
    slot_bytes = std::max<std::uint64_t>(slot_bytes, p.data.bytes);
  slot_bytes = (slot_bytes + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
  const std::uint64_t slots = std::min<std::uint64_t>(kSlots, incoming.size());
  const std::size_t slots_bytes = static_cast<std::size_t>(slots * slot_bytes);
  SlotsOffer offer{0, slot_bytes, slots, {}};
  std::byte* own = nullptr;
  SegmentSlots segment{node, std::nullopt, slots_bytes};
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
  check_mpi(MPI_Allreduce(&ready, &all_ready, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  if (!all_ready && node.selection() == ChannelSelection::device && problem.empty() && !ready)
    problem = cat("rank ", rank, " cannot offer slots for moving units' views by the same-node ",
                  "route (KODO_CHANNELS=device): ", why);
  agree_and_report(comm, problem);
  if (!all_ready) {
    if (!ready)
      node.notice(cat("moving units' views go through UCX, not the same-node route: ", why));
    return false;
  }

  // 2. Offers go to every rank this rank receives from; each sender checks the offers
  // it gets against its pieces and the memory they name.
  std::map<int, Receiver> receivers;
  for (std::size_t i = 0; i < outgoing.size(); ++i) receivers[outgoing[i].peer].pieces.push_back(i);
  std::vector<int> senders;
  for (const ViewPiece& p : incoming)
    if (std::find(senders.begin(), senders.end(), p.peer) == senders.end())
      senders.push_back(p.peer);
  std::vector<MPI_Request> requests;
  for (const int s : senders) {
    requests.emplace_back();
    check_mpi(MPI_Isend(&offer, sizeof(SlotsOffer), MPI_BYTE, s, kOfferTag, comm, &requests.back()),
              "MPI_Isend");
  }
  for (auto& [r, receiver] : receivers) {
    requests.emplace_back();
    check_mpi(MPI_Irecv(&receiver.offer, sizeof(SlotsOffer), MPI_BYTE, r, kOfferTag, comm,
                        &requests.back()),
              "MPI_Irecv");
  }
  check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
            "MPI_Waitall");
  requests.clear();
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

  // 3. The pieces. Sends' copies go on one communication stream, copies out of this
  // rank's slots on another, each followed by a mark the loop reads without waiting.
  try {
    Stream& out = streams.communication(0);
    Stream& in = streams.communication(1);
    struct Slot {
      bool asked = false;
      std::size_t piece = 0;
      std::uint64_t copied = 0;  // the mark after its copy out, once filled
    };
    std::vector<Slot> own_slots(static_cast<std::size_t>(slots));
    struct Filling {
      int receiver;
      Notice notice;
      std::uint64_t mark;
    };
    std::deque<Filling> filling;  // in `out`'s order
    std::deque<Notice> notices;   // sent, until their sends complete
    const auto notify = [&](int peer, int tag, const Notice& n) {
      notices.push_back(n);
      requests.emplace_back();
      check_mpi(MPI_Isend(&notices.back(), 2, MPI_UINT64_T, peer, tag, comm, &requests.back()),
                "MPI_Isend");
    };
    const auto next_notice = [&](int tag, Notice& n) {
      int there = 0;
      MPI_Status status;
      check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &there, &status), "MPI_Iprobe");
      if (!there) return -1;
      int count = 0;
      check_mpi(MPI_Get_count(&status, MPI_UINT64_T, &count), "MPI_Get_count");
      if (count != 2)
        throw Error(cat("rank ", status.MPI_SOURCE, " sent a notice of ", count,
                        " words about moving units' views"));
      check_mpi(MPI_Recv(&n, 2, MPI_UINT64_T, status.MPI_SOURCE, tag, comm, MPI_STATUS_IGNORE),
                "MPI_Recv");
      return status.MPI_SOURCE;
    };
    std::size_t next_in = 0, done_in = 0, done_out = 0;
    for (std::uint64_t turn = 1; done_in < incoming.size() || done_out < outgoing.size(); ++turn) {
      for (std::size_t s = 0; s < own_slots.size(); ++s) {
        Slot& slot = own_slots[s];
        if (slot.asked || next_in == incoming.size()) continue;
        slot = Slot{true, next_in++, 0};
        const ViewPiece& p = incoming[slot.piece];
        notify(p.peer, kAskTag, Notice{p.number, s});
      }
      Notice n;
      for (int from; (from = next_notice(kAskTag, n)) >= 0;) {
        const auto it = receivers.find(from);
        if (it == receivers.end() || it->second.next == it->second.pieces.size() ||
            outgoing[it->second.pieces[it->second.next]].number != n.number ||
            n.slot >= it->second.offer.slots)
          throw Error(cat("rank ", from, " asked rank ", rank,
                          " for a piece of a moving unit's view out of turn (piece ", n.number,
                          " into slot ", n.slot, ")"));
        Receiver& r = it->second;
        const ViewPiece& p = outgoing[r.pieces[r.next++]];
        copy_bytes(out.space(),
                   Segment{r.slots_at + n.slot * r.offer.slot_bytes, p.data.bytes, slot_kind},
                   p.data, p.data.bytes);
        filling.push_back(Filling{from, n, out.mark()});
      }
      for (; !filling.empty() && out.reached() >= filling.front().mark; filling.pop_front()) {
        notify(filling.front().receiver, kFilledTag, filling.front().notice);
        ++done_out;
      }
      for (int from; (from = next_notice(kFilledTag, n)) >= 0;) {
        Slot* slot = n.slot < own_slots.size() ? &own_slots[n.slot] : nullptr;
        if (!slot || !slot->asked || slot->copied != 0 || incoming[slot->piece].peer != from ||
            incoming[slot->piece].number != n.number)
          throw Error(cat("rank ", from, " told rank ", rank,
                          " of a piece of a moving unit's view it did not ask for (piece ",
                          n.number, " in slot ", n.slot, ")"));
        const ViewPiece& p = incoming[slot->piece];
        copy_bytes(in.space(), p.data, Segment{own + n.slot * slot_bytes, p.data.bytes, slot_kind},
                   p.data.bytes);
        slot->copied = in.mark();
      }
      for (Slot& slot : own_slots)
        if (slot.asked && slot.copied != 0 && in.reached() >= slot.copied) {
          slot = Slot{};
          ++done_in;
        }
      if (turn % 4096 == 0) {
        out.check_health();  // a device fault would leave the marks unreached
        in.check_health();
        for (const int r : senders)  // a peer that exited answers nothing more
          if (!node.alive(r)) throw Error(cat("rank ", r, " exited while sending its pieces"));
        for (const auto& [r, receiver] : receivers)
          if (receiver.next < receiver.pieces.size() && !node.alive(r))
            throw Error(cat("rank ", r, " exited while receiving its pieces"));
      }
    }
    check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitall");
    // Senders write into these slots until every rank is done.
    check_mpi(MPI_Barrier(comm), "MPI_Barrier");
  } catch (...) {
    fatal(cat("moving units' views between ranks of one node failed on rank ", rank, ": ",
              what_of_current()));
  }
  return true;
}

}  // namespace kodo::detail
