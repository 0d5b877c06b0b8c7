#pragma once
// Where a rank runs: its node-local rank, its GPU, its CPUs and NUMA nodes.
//
// Policy: one rank per GPU. Rank r of a node takes GPU r. More ranks on a node than
// GPUs is an error, because ranks sharing a GPU silently distort every measurement;
// KODO_SHARE_GPUS=1 allows it (GPU = local rank modulo the GPU count). KODO_DEVICE=gpu
// (or host) makes a build without (or with) a device backend an error instead of a
// surprise.

#include <mpi.h>

#include <string>

namespace kodo {

struct Placement {
  int local_rank = 0, local_ranks = 1;
  int device = -1;  // -1: the host backend, no GPU
  std::string device_name = "host";
  std::string cpus = "unknown", numa = "unknown";  // from hwloc where present
};

// Collective over `comm`. Chooses and selects this rank's GPU (for a device backend),
// or takes `device` when it is >= 0 (Kokkos already running on it), and reads the CPU
// binding. Throws kodo::Error on every rank if any rank cannot be placed.
Placement place_rank(MPI_Comm comm, int device = -1);

// One line: "rank R (local L of N): GPU D (name), cpus C, NUMA M".
std::string describe(const Placement& p, int rank);

}  // namespace kodo
