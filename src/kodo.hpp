#pragma once
// kodo: overdecomposed work units over Kokkos, MPI and UCX. Include this header.
//
// The public surface: Runtime; Collection, WorkUnit, UnitInit, UnitRef and the
// reduction operations (Sum, Min, Max); Channel, CommMode and data_ready; Stream,
// StreamPool and CompletionSource (when_done); Placement and describe(); split_grid
// and block_range; Index3 and Extent3; Error; Serializer, ByteWriter and ByteReader
// for types of one's own in messages; write_checkpoint, Checkpoint, SavedCollection,
// CheckpointInfo and CheckpointReport (a unit's state() in unit_state.hpp); StepProgram,
// StepPlan, StepWork and StepProgramOptions (a rank's unit steps as one device program).
// Names in kodo::detail are internal.

#include "backends/placement.hpp"
#include "backends/stream.hpp"
#include "comm/channel.hpp"
#include "comm/serialize.hpp"
#include "core/error.hpp"
#include "core/index.hpp"
#include "tasking/checkpoint.hpp"
#include "tasking/collection.hpp"
#include "tasking/decomposition.hpp"
#include "tasking/runtime.hpp"
#include "tasking/step_program.hpp"
