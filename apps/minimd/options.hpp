// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Command line and input file of minimd (the flags and the in.lj.miniMD format of
// Mantevo miniMD).

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace minimd {

// The arguments written one after another (for messages).
template <class... A>
std::string text(const A&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// The physical problem: the input file's values, then the command line's overrides.
struct Problem {
  std::int64_t nx = 32, ny = 32, nz = 32;  // FCC unit cells (4 atoms each)
  std::int64_t steps = 100;
  double dt = 0.005;
  double temperature = 1.44;  // initial, T0
  double density = 0.8442;
  std::int64_t reneighbor_every = 20;
  double force_cutoff = 2.5;
  double skin = 0.3;
  std::int64_t thermo_every = 100;  // 0: at the start and the end only
  double slab = 1.0;  // atoms only where x < slab * the box's length (a slab in vacuum)
  double epsilon = 1.0, sigma = 1.0;
  double neighbor_cutoff() const { return force_cutoff + skin; }
  std::int64_t atoms() const;  // 4 nx ny nz; throws if that overflows 64 bits
};

struct Options {
  Problem problem;
  std::string input_file;  // empty: the defaults above (those of in.lj.miniMD)
  // Half lists with Newton's third law (miniMD's default, and minimd's on host backends)
  // or full lists (minimd's default on GPU backends: no atomics, 2x faster on an H100).
  bool half_neighbor = true;
  bool half_neighbor_given = false;  // --half_neigh was on the command line
  bool ghost_newton = true;          // with half lists: forces on ghosts sent back to their owners
  std::int64_t bins = -1;            // neighbour bins per dimension; -1: about half a cutoff wide
  std::int64_t odf = 1;
  std::string comm = "device";  // "device" (GPU-aware) or "host" (staged in pinned memory)
  bool sync = false;            // fence streams instead of the completion engine
  // Steps that do not rebuild the lists run as a kodo::StepProgram (with full lists and
  // without --sync; atom_unit.hpp), else unit by unit; on a thermo step the units sum the
  // thermo after the program's step (AtomUnit::sum_thermo). -1: when a
  // rank has several units (--odf > 1; with one, unit by unit was measured faster).
  int step_program = -1;
  int reneighbor_program = -1;
  std::string reference;                     // a thermo log to compare with (empty: none)
  std::vector<double> drift{0.0, 0.0, 0.0};  // a uniform velocity added at the start
  std::int64_t checkpoint_every = 0;         // a checkpoint after every N-th step (0: never)
  std::string checkpoint_dir;                // ... into this directory
  std::string restart_dir;                   // restart from the latest checkpoint in this directory
  std::int64_t balance_every = 0;            // rebalance the units after every N-th step (0: never)
  std::string balancer = "refine";           // greedy, refine or rotate (kodo's balancers)
  std::string lb_data_dir;                   // write LB data (DARMA vt's JSON) of each balance here
  bool help = false;
};

// Parses the arguments after the program name, reading the input file (-i) first so the
// other flags override it wherever they stand. Without --half_neigh, lists are full for a
// GPU backend (`gpu_backend`) and half otherwise. Throws std::invalid_argument naming the
// problem (unknown flag, missing or malformed value, value out of range, unreadable or
// malformed input file).
Options parse_options(const std::vector<std::string>& args, bool gpu_backend = false);

// Reads an input file in the in.lj.miniMD format into `problem`. Throws
// std::invalid_argument naming the file, the line and the problem.
void read_input_file(const std::string& path, Problem& problem);

std::string usage();

}  // namespace minimd
