// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Jacobi3D the bulk-synchronous MPI way, for side-by-side comparison with kodo: one
// block per rank, and each iteration pack faces, fence, copy them to the host, exchange
// them with MPI_Isend/MPI_Irecv and MPI_Waitall, copy them back, unpack, update, fence.
// The same kernels as the kodo version; no kodo units, channels or completion engine.

#include "block.hpp"

#include <kodo/kodo.hpp>

#include <mpi.h>

#include <cstdint>

namespace jacobi {

struct BaselineResult {
  double seconds = 0;  // the timed iterations
  RankReport report;   // checksum and residual, on rank 0
};

// Collective over `comm`, whose size must equal blocks.size().
BaselineResult run_baseline(MPI_Comm comm, const Grid& grid, const kodo::Extent3& blocks,
                            std::int64_t warmup, std::int64_t iterations);

}  // namespace jacobi
