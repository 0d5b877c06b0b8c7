// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Where a rank runs: its node-local rank, its GPU, its CPUs and NUMA nodes.
///
/// Policy: one rank per GPU. The ranks of a node that see the same GPUs share them out
/// in rank order: with no binding by the launcher, rank r of a node takes GPU r; when
/// the launcher gives each rank its own GPU (srun --gpus-per-task=1, jsrun -g 1), each
/// takes the one it sees. More ranks than the GPUs they see is an error, because ranks
/// sharing a GPU silently distort every measurement; KODO_SHARE_GPUS=1 allows it (the
/// GPUs are then dealt out round-robin). KODO_DEVICE=gpu (or host) makes a build without
/// (or with) a device backend an error instead of a surprise.

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kodo {

/// Where a rank runs (Runtime::placement()).
struct Placement {
  /// This rank's position among the ranks of its node, and their number.
  ///@{
  int local_rank = 0, local_ranks = 1;
  ///@}
  int device = -1;             ///< -1: the host backend, no GPU
  bool shares_device = false;  ///< another rank of the node has the same GPU (KODO_SHARE_GPUS)
  std::string device_name = "host";  ///< the GPU's name, or "host"
  /// The CPUs and NUMA nodes the rank is bound to, from hwloc where present.
  ///@{
  std::string cpus = "unknown", numa = "unknown";
  ///@}
};

/// One line: "rank R (local L of N): GPU D (name), cpus C, NUMA M".
std::string describe(const Placement& p, int rank);

namespace detail {
// Collective over `comm` (Runtime's start): chooses and selects this rank's GPU (for a
// device backend), or takes `device` when it is >= 0 (Kokkos already running on it),
// and reads the CPU binding. Throws kodo::Error on every rank if any rank cannot be placed.
Placement place_rank(MPI_Comm comm, int device = -1);

// The GPU (index among the `count` it sees) for the rank at position `me` of a node
// whose ranks see the GPU sets `sets` (one key per rank, equal keys: the same GPUs),
// or -1 with `problem` set.
int assign_device(const std::vector<std::uint64_t>& sets, int me, int count, bool sharing,
                  std::string& problem);
}  // namespace detail

}  // namespace kodo
