// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// kodo: overdecomposed work units over Kokkos, MPI and UCX. Include this header: it
/// brings every public name. The names, each with what it is for, are listed under
/// namespace kodo below (by header: docs/public_names.txt); names in kodo::detail are
/// internal.

#include <kodo/backends/placement.hpp>
#include <kodo/backends/recording.hpp>
#include <kodo/backends/stream.hpp>
#include <kodo/comm/channel.hpp>
#include <kodo/comm/serialize.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/index.hpp>
#include <kodo/core/settings.hpp>
#include <kodo/tasking/checkpoints/checkpoint.hpp>
#include <kodo/tasking/migration/balance.hpp>
#include <kodo/tasking/migration/lb_data.hpp>
#include <kodo/tasking/migration/migration.hpp>
#include <kodo/tasking/programs/step_program.hpp>
#include <kodo/tasking/scheduling/runtime.hpp>
#include <kodo/tasking/tasks/awaitable_ring.hpp>
#include <kodo/tasking/tasks/kernel_batch.hpp>
#include <kodo/tasking/tasks/task.hpp>
#include <kodo/tasking/units/collection.hpp>
#include <kodo/tasking/units/decomposition.hpp>
#include <kodo/tasking/units/inbox.hpp>
#include <kodo/tasking/units/neighbours.hpp>
#include <kodo/tasking/units/work_unit.hpp>
#include <kodo/version.hpp>

/// @namespace kodo
/// kodo's public names (those in kodo::detail are internal), as docs/public_names.txt
/// lists them by header:
/// - @ref kodo::Runtime "Runtime"; @ref kodo::Collection "Collection",
///   @ref kodo::WorkUnit "WorkUnit", @ref kodo::UnitInit "UnitInit",
///   @ref kodo::UnitRef "UnitRef"; the reduction operations @ref kodo::Sum "Sum",
///   @ref kodo::Min "Min" and @ref kodo::Max "Max", and @ref kodo::Reduction "Reduction"
///   to name a reduction of one's own;
/// - @ref kodo::Channel "Channel", @ref kodo::CommMode "CommMode"
///   (@ref kodo::parse_comm_mode "parse_comm_mode", @ref kodo::to_string "to_string"),
///   @ref kodo::ReceiveRing "ReceiveRing" and @ref kodo::Arrival "Arrival",
///   @ref kodo::data_ready "data_ready" and @ref kodo::DataReady "DataReady";
/// - @ref kodo::Stream "Stream", @ref kodo::StreamPool "StreamPool",
///   @ref kodo::ExecutionSpace "ExecutionSpace", @ref kodo::CompletionSource
///   "CompletionSource" (@ref kodo::WorkUnit::when_done "when_done"),
///   @ref kodo::host_build "host_build"; @ref kodo::Placement "Placement" and
///   @ref kodo::describe "describe()"; @ref kodo::RecordingReport "RecordingReport"
///   (@ref kodo::Runtime::recording "Runtime::recording()": each turn's device work
///   recorded and launched as one graph);
/// - @ref kodo::split_grid "split_grid", @ref kodo::CutCosts "CutCosts",
///   @ref kodo::block_range "block_range" and @ref kodo::Range "Range";
///   @ref kodo::units_for_odf "units_for_odf" (at most @ref kodo::kMostOdfUnits
///   "kMostOdfUnits");
///   @ref kodo::Index3 "Index3" and @ref kodo::Extent3 "Extent3"
///   (@ref kodo::operator<< "operator<<"); a unit's neighbours: @ref kodo::Direction
///   "Direction", @ref kodo::Periodic "Periodic", the stencils @ref kodo::faces "faces",
///   @ref kodo::faces_and_edges "faces_and_edges" and @ref kodo::all_directions
///   "all_directions", and @ref kodo::neighbour_index "neighbour_index" (neighbours.hpp);
/// - @ref kodo::Error "Error", @ref kodo::fatal "fatal" and
///   @ref kodo::print_error "print_error";
/// - @ref kodo::version "version()" and @ref kodo::commit "commit()", with
///   @ref KODO_VERSION "KODO_VERSION" and @ref KODO_VERSION_AT_LEAST
///   "KODO_VERSION_AT_LEAST" (version.hpp);
/// - @ref kodo::settings "settings()", @ref kodo::settings_listing "settings_listing()",
///   @ref kodo::SettingInfo "SettingInfo" and @ref kodo::SettingKind "SettingKind": the
///   KODO_* variables (@ref kodo::kSettings "kSettings" is deprecated until 0.4: use
///   settings());
/// - @ref kodo::Serializer "Serializer", @ref kodo::ByteWriter "ByteWriter",
///   @ref kodo::ByteReader "ByteReader", @ref kodo::pack "pack",
///   @ref kodo::unpack "unpack" and @ref kodo::Bytes "Bytes", for types of one's own
///   in messages;
/// - @ref kodo::write_checkpoint "write_checkpoint", @ref kodo::Checkpoint "Checkpoint",
///   @ref kodo::SavedCollection "SavedCollection", @ref kodo::CheckpointInfo
///   "CheckpointInfo" and @ref kodo::CheckpointReport "CheckpointReport";
///   @ref kodo::restoring "restoring<State>" for a unit's state() (unit_state.hpp);
/// - moving units and balancing their loads: @ref kodo::migrate "migrate" (to owners one
///   chooses), @ref kodo::MigrationReport "MigrationReport", @ref kodo::MigrationPhases
///   "MigrationPhases" and @ref kodo::describe_phases "describe_phases" (migration.hpp);
///   @ref kodo::rebalance "rebalance" between run() calls, @ref kodo::balance_points
///   "balance_points" inside them, @ref kodo::measure_loads "measure_loads",
///   @ref kodo::BalanceOptions "BalanceOptions" and @ref kodo::BalanceReport
///   "BalanceReport"; the balancers @ref kodo::greedy_balance "greedy_balance",
///   @ref kodo::refine_balance "refine_balance" (@ref kodo::RefineBalance "RefineBalance"
///   for another tolerance) and @ref kodo::rotate_balance "rotate_balance" (every unit
///   moves: a test of one's own state()), by name @ref kodo::balancer_named
///   "balancer_named"; for a balancer of one's own @ref kodo::Balancer "Balancer",
///   @ref kodo::BalanceInput "BalanceInput", @ref kodo::rank_loads "rank_loads" and
///   @ref kodo::imbalance "imbalance" (balance.hpp); @ref kodo::LbData "LbData", the
///   balances as DARMA vt's LB data (lb_data.hpp);
/// - @ref kodo::StepProgram "StepProgram", @ref kodo::StepPlan "StepPlan",
///   @ref kodo::StepWork "StepWork", @ref kodo::StepKernels "StepKernels" and @ref
///   kodo::StepProgramOptions "StepProgramOptions" (a rank's unit steps as one device
///   program);
/// - @ref kodo::Task "Task", @ref kodo::receive "receive", @ref kodo::send "send", @ref
/// kodo::when_all "when_all",
///   @ref kodo::Reduced "Reduced", @ref kodo::AwaitableRing "AwaitableRing" and
///   @ref kodo::Inbox "Inbox" (values a task awaits by key, inbox.hpp): entry
///   methods written as C++20 coroutines (task.hpp; @ref kodo::WorkUnit "WorkUnit"'s
///   @ref kodo::WorkUnit::when_done "when_done(source)" and
///   @ref kodo::WorkUnit::all_reduce "all_reduce" are awaited in them, and an
///   @ref kodo::AwaitableRing "AwaitableRing"'s transfers by number);
/// - @ref kodo::KernelBatch "KernelBatch": a unit's kernels launched with the same kernels
///   of the rank's other units, in one launch (@ref kodo::WorkUnit::launch "launch").
