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

#include <kodo/backends/placement.hpp>
#include <kodo/backends/stream.hpp>
#include <kodo/comm/channel.hpp>
#include <kodo/comm/serialize.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/index.hpp>
#include <kodo/tasking/checkpoint.hpp>
#include <kodo/tasking/collection.hpp>
#include <kodo/tasking/decomposition.hpp>
#include <kodo/tasking/runtime.hpp>
#include <kodo/tasking/step_program.hpp>
#include <kodo/tasking/work_unit.hpp>
