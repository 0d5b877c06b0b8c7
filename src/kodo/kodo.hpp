// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// kodo: overdecomposed work units over Kokkos, MPI and UCX. Include this header.
///
/// The public surface, every name in kodo:: (names in kodo::detail are internal):
/// - Runtime; Collection, WorkUnit, UnitInit, UnitRef; the reduction operations Sum,
///   Min and Max;
/// - Channel, CommMode (parse_comm_mode, to_string), ReceiveRing and Arrival,
///   data_ready and DataReady;
/// - Stream, StreamPool, ExecutionSpace, CompletionSource (when_done), host_build;
///   Placement and describe();
/// - split_grid, CutCosts, block_range and Range; Index3 and Extent3 (operator<<);
/// - Error, fatal and print_error;
/// - version() and commit(), with KODO_VERSION and KODO_VERSION_AT_LEAST (version.hpp);
/// - settings(), settings_listing(), SettingInfo and SettingKind: the KODO_* variables;
/// - Serializer, ByteWriter, ByteReader, pack, unpack and Bytes, for types of one's own
///   in messages;
/// - write_checkpoint, Checkpoint, SavedCollection, CheckpointInfo and CheckpointReport;
///   restoring<State> for a unit's state() (unit_state.hpp);
/// - StepProgram, StepPlan, StepWork and StepProgramOptions (a rank's unit steps as one
///   device program);
/// - Task, receive, when_all, Reduced and AwaitableRing: entry methods written as C++20
///   coroutines (task.hpp; WorkUnit's when_done(source) and all_reduce are awaited in
///   them, and an AwaitableRing's transfers by number).

/// @namespace kodo
/// kodo's public names (those in kodo::detail are internal).

#include <kodo/backends/placement.hpp>
#include <kodo/backends/stream.hpp>
#include <kodo/comm/channel.hpp>
#include <kodo/comm/serialize.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/index.hpp>
#include <kodo/core/settings.hpp>
#include <kodo/tasking/awaitable_ring.hpp>
#include <kodo/tasking/balance.hpp>
#include <kodo/tasking/checkpoint.hpp>
#include <kodo/tasking/collection.hpp>
#include <kodo/tasking/decomposition.hpp>
#include <kodo/tasking/inbox.hpp>
#include <kodo/tasking/lb_data.hpp>
#include <kodo/tasking/migration.hpp>
#include <kodo/tasking/neighbours.hpp>
#include <kodo/tasking/runtime.hpp>
#include <kodo/tasking/step_program.hpp>
#include <kodo/tasking/task.hpp>
#include <kodo/tasking/work_unit.hpp>
#include <kodo/version.hpp>
