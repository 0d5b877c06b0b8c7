// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What the parts of a migration share on the wire: the MPI tags of its own communicator
// (a duplicate of the job's), in one table, and the pieces its units' views travel in by
// either route (node_view_route.hpp between ranks of one node, ucx_view_route.hpp else).

#include <kodo/backends/detail/memory.hpp>
#include <kodo/core/error.hpp>
#include <kodo/tasking/scheduling/detail/watchdog.hpp>

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kodo::detail {

// The MPI tags of a migration's communicator.
enum MigrationTag : int {
  kHeaderTag = 1,   // a leaving unit's header (migration.cpp)
  kDataTag = 2,     // a chunk of its records
  kFailedTag = 3,   // the UCX route: a sender stops, from a piece on
  kNumberTag = 4,   // the UCX route: an arriving unit's tag number, to its sender
  kOfferTag = 11,   // the same-node route: a receiver's slots
  kAskTag = 12,     // ... a receiver asks for a piece
  kFilledTag = 13,  // ... a sender has copied it
};

// A piece of a moving unit's view: the `number`-th piece between this rank and `peer`.
struct ViewPiece {
  std::int64_t linear;  // the unit's linear index
  std::uint64_t view;   // the view's place in its state()
  int peer;
  std::uint64_t number;
  Segment data;                  // where it comes from (sending) or goes (receiving)
  std::uint32_t tag_number = 0;  // the UCX route: its unit's, drawn by the receiver
};

// What a route tells the watchdog while pieces move (watchdog.hpp: WatchdogWait): the
// oldest piece it waits for and its peer, updated as pieces move (each a turn); `unit`
// names a piece's unit ("unit (1,0,0) of collection 0").
struct PieceWaits {
  Watchdog& watchdog;
  std::function<std::string(std::int64_t linear)> unit;
  std::string piece(const ViewPiece& p) const {
    return cat("piece ", p.number, " (of view ", p.view, " of ", unit(p.linear), ")");
  }
};

// Waits for every request, as MPI_Waitall does, telling the watchdog what it still waits
// for: name(i) of the first request not complete (a peer and its message), so that the
// report of a peer that never sends, or never takes what is sent, names the peer and the
// message. `statuses`: each request's, where wanted (migration_records.cpp).
void wait_naming(Watchdog& watchdog, std::vector<MPI_Request>& requests,
                 const std::function<std::string(std::size_t)>& name,
                 MPI_Status* statuses = nullptr);

}  // namespace kodo::detail
