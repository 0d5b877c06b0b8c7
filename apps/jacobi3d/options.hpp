// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Command line of jacobi3d.

#include "tuned_kernels.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace jacobi {

struct Options {
  std::int64_t x = 64, y = 64, z = 64;
  std::int64_t iterations = 100;
  std::int64_t warmup = 10;
  std::int64_t odf = 1;
  bool verify = false;
  bool sync = false;             // fence streams instead of the completion engine
  bool baseline = false;         // the bulk-synchronous MPI version instead of kodo
  Fusion fusion = Fusion::none;  // face kernels (tuned_kernels.hpp)
  bool graphs = false;           // each unit iteration as one replayed graph
  bool overlap = false;          // update each unit's inner box while its faces travel
  std::string comm = "device";   // halo transfers: "device" (GPU-aware) or "host" (staged)
  bool device_waits = true;      // faces awaited by the compute stream where the route allows
  bool waits_given = false;      // --waits was on the command line
  // "rank": a rank's blocks as one device program (kodo::StepProgram); "unit": each block
  // through entry methods, channels and continuations. The default is rank, unless a flag
  // of the unit path (--graphs, --sync, --waits) is given.
  std::string path;
  std::int64_t checkpoint_every = 0;  // write a checkpoint after every N-th update (0: never)
  std::string checkpoint_dir;         // ... into this directory
  std::string restart_dir;            // restart from the latest checkpoint in this directory
  std::int64_t imbalance = 1;         // blocks in the grid's lower half in x do F times the work
  std::int64_t balance_every = 0;     // rebalance the blocks after every N-th update (0: never)
  std::string balancer = "refine";    // greedy, refine or rotate (kodo's balancers)
  bool measured_load = false;         // --load measured: each block's device time, not its points
  std::string lb_data_dir;            // write LB data (DARMA vt's JSON) of each balance here
  Batches batches = Batches::all;     // --path task and unit: kernels launched with others'
  bool batches_given = false;
  bool help = false;
};

// Parses the arguments after the program name. Throws std::invalid_argument naming the
// problem (unknown flag, missing or malformed value, value out of range).
Options parse_options(const std::vector<std::string>& args);

std::string usage();

}  // namespace jacobi
