// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Migration's views between ranks of one node (migration.cpp), without UCX: each
// receiving rank offers a few slots its senders can write (device builds: in the
// transport staging, which is kept for the job's life, so a sender maps it once and
// nothing mapped is ever freed under it; host builds: in its node segment), and asks its
// senders for its pieces in order, one slot at a time. A sender copies an asked-for piece
// straight from the unit's view into the receiver's slot (peer to peer on GPUs, the
// copies same-node channels make) and says so once its stream has done it; the receiver
// copies the piece out to where it goes and asks for the next. Receivers drive, senders
// only answer: no rank waits on another that waits on it. Notices travel over MPI.

#include <kodo/backends/detail/memory.hpp>
#include <kodo/backends/stream.hpp>
#include <kodo/tasking/migration/detail/migration_messages.hpp>

#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kodo::detail {

class ChannelHost;

// Collective over `comm`: whether the views can take this route: every rank of the job
// on one node, with same-node channels on (not KODO_CHANNELS=ucx).
bool node_view_route_open(ChannelHost& host, MPI_Comm comm);

// The most one piece holds on this route, given KODO_MIGRATION_PIECE_BYTES: the setting
// on device builds; at most 256 KiB on host builds, where slots take node segment room.
std::uint64_t node_view_piece_bytes(std::uint64_t setting);

// Collective over `comm` (the migration's own communicator; its tags: migration_messages.hpp):
// moves every piece, each rank's `outgoing` in the order of the numbers per peer and
// `incoming` likewise. Returns false, having moved nothing, when some rank cannot offer
// slots (memory its peers cannot map, a full node segment): the caller then sends the
// pieces through UCX, and the rank says why once (with KODO_CHANNELS=device it is a
// kodo::Error on every rank instead). A malformed offer from a peer is a kodo::Error on
// every rank (nothing has moved yet); a failure, a malformed notice or a peer that exits
// while pieces move ends the job (fatal).
// `waits` names the piece it waits for to the watchdog.
bool move_views_on_node(ChannelHost& host, StreamPool& streams, MPI_Comm comm,
                        const std::vector<ViewPiece>& outgoing,
                        const std::vector<ViewPiece>& incoming, PieceWaits& waits);

// A receiver's slots, as it tells each of its senders: `slots` of `slot_bytes` each,
// `place` bytes into its node segment (host builds) or into the device allocation
// `handle` names. Bytes from another rank: check_offer() before use.
struct SlotsOffer {
  std::uint64_t place = 0, slot_bytes = 0, slots = 0;
  std::array<std::byte, 64> handle{};
};
// Throws kodo::Error, naming rank `from`, unless `offer` names 1 to 4 slots of at least
// `largest` bytes (this rank's largest piece for it) that lie inside `room` bytes.
void check_offer(const SlotsOffer& offer, std::uint64_t largest, std::uint64_t room, int from);

}  // namespace kodo::detail
