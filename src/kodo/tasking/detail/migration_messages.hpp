// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What the parts of a migration share on the wire: the MPI tags of its own communicator
// (a duplicate of the job's), in one table, and the pieces its units' views travel in by
// either route (node_view_route.hpp between ranks of one node, ucx_view_route.hpp else).

#include <kodo/backends/memory.hpp>

#include <cstdint>

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

}  // namespace kodo::detail
