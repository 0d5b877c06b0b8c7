// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Migration's views through UCX (migration.cpp), where the same-node route
// (node_view_route.hpp) is not open or a rank cannot offer it slots: each rank copies its
// pieces through a few slots of its kept transport staging each way and sends them as
// UCX tagged messages, device to device where UCX moves device memory.

#include <kodo/tasking/migration/detail/migration_messages.hpp>

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kodo {
class Runtime;
}  // namespace kodo

namespace kodo::detail {

// A view's pieces share a UCX tag made of its unit's linear index and its place in the
// unit's state(): units with views move only in collections of fewer than
// kMostTaggedUnits units, with at most kMostViews views each.
constexpr std::int64_t kMostTaggedUnits = std::int64_t{1} << 24;
constexpr std::uint64_t kMostViews = 255;

// Collective over `comm` (the migration's own communicator; its tags:
// migration_messages.hpp): moves every piece, each rank's `outgoing` and `incoming` in the
// same order on all ranks (unit, view, piece). A failure is kept in `problem` for the
// caller to agree on; one the job cannot go on from ends it (fatal). `waits` names the
// piece it waits for to the watchdog.
void move_views_through_ucx(Runtime& runtime, MPI_Comm comm, const std::vector<ViewPiece>& outgoing,
                            const std::vector<ViewPiece>& incoming, std::string& problem,
                            PieceWaits& waits);

}  // namespace kodo::detail
