// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Recorded steps: what a rank's units issue on its streams in one turn of the scheduler
/// (their kernels, kodo's copies between them, its marks) is recorded as it is issued and
/// launched as one device program, instead of call by call. Nothing in a unit's code
/// changes, and nothing is replayed without being issued again: each turn is recorded
/// afresh, and a turn shaped like an earlier one reuses its instantiated program (only
/// parameters change). A fence, a copy to pageable host memory or a free of device memory
/// ends the turn's recording early; a kernel launched through Kokkos' constant memory, a
/// stream's device wait for another rank or units' device timing stops it for the rest of
/// the run; docs/performance.md ("Recorded turns") has the rules and the numbers.
/// KODO_RECORD chooses: auto (CUDA builds record, others do not), on, off.

#include <cstdint>
#include <string>

namespace kodo {

/// What a rank's recording did so far (Runtime::recording()).
struct RecordingReport {
  bool on = false;                 ///< whether this rank records (or, on the host backend, groups)
  std::string off_because;         ///< why it does not, or stopped (empty while on)
  std::uint64_t turns = 0;         ///< turns whose work was recorded and launched as one program
  std::uint64_t reused = 0;        ///< of those, launched as an updated earlier program
  std::uint64_t instantiated = 0;  ///< programs built (a turn of a new shape)
  std::uint64_t ended_early = 0;   ///< recordings ended inside a turn (a fence, a host copy)
};

}  // namespace kodo
