// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// A MiniMD run as minimd's main program drives it (simulation.cpp): the parameters
// printed, the atoms' units created (or restored from a checkpoint) and started, the
// steps (through the step programs where they run, unit by unit elsewhere) with their
// checkpoints and balance points, the thermo lines as the units' reductions give them,
// and the performance summary.

#include "atom_unit.hpp"
#include "options.hpp"
#include "thermo_log.hpp"

#include <kodo/kodo.hpp>

#include <stdexcept>
#include <string>

namespace minimd {

// A checkpoint that cannot be written or read fails alike on every rank: with a
// kodo::Error from kodo (which reports a unit's failed restore so too), or with a
// minimd::Error where the checkpoint is not of this run. Rank 0 says what is wrong, and
// every rank exits with status 1.
struct CheckpointFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The physical problem, as a checkpoint records it: a restart must continue the same one.
std::string problem_text(const Problem& p);

// Runs the simulation on `units` (the unit grid, cut and checked); compares the thermo
// lines with `reference` where it holds any. Returns 1 on every rank where a check
// failed, else 0; throws CheckpointFailure.
int run(kodo::Runtime& runtime, const Options& opt, const kodo::Extent3& units, const Setup& setup,
        const ThermoLog& reference);

}  // namespace minimd
