// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Load balancing: units' measured loads, balancers that choose new owners from them, and
/// rebalance(), which moves the units (migration.hpp) when the gain is worth it.
///
/// ```
///   // Every rank's main program, between run() calls (collective):
///   kodo::BalanceReport r = kodo::rebalance(blocks, kodo::refine_balance);
///   if (r.applied) ...;   // r.moved units moved; r.before / r.after: max/avg - 1
/// ```
///
/// ```
///   // Or inside run(), at a point every unit's task reaches (WorkUnit::balance_point):
///   kodo::measure_loads(cells);                            // every rank, before run()
///   kodo::balance_points(cells, kodo::refine_balance);     // (measured from the start)
///   kodo::Task Cell::solve(int steps) {                    // (members: step_, ...)
///     for (; step_ < steps; ++step_) {
///       ...                                                // one step
///       if ((step_ + 1) % 100 == 0 && step_ + 1 < steps) {
///         ++step_;                                         // what state() holds goes on
///         co_await balance_point<&Cell::solve>(steps);     // the task ends here; solve(steps)
///       }                                                  // is called anew wherever the
///     }                                                    // unit then is
///   }
/// ```
///
/// A unit's load is the time the scheduler measured in its entry methods and in the
/// resumes of its task (task.hpp) since the collection's last balance point, or what the
/// unit stated (WorkUnit::set_load), which holds until it states another. Time is
/// measured for a collection once the main program asks, measure_loads(collection), and
/// from its first rebalance() on: two clock reads per call (about 50 ns on a 2-core VM,
/// against 40 ns for the dispatch itself), which collections never balanced do not pay.
/// It is host time, unless the unit named a stream (WorkUnit::measure_device_load): then
/// that stream's elapsed time from the start of each call to the end of the work the call
/// enqueued, between two timing events (load_timing.hpp; it includes idle gaps and what the
/// stream waited for, other streams' kernels sharing the device among them). A task's
/// resumes are calls (after co_await when_done or a ring's transfer too); work launched
/// from plain callbacks (when_done(stream, f), ring hand-overs) is in none: such units
/// state their whole load instead (their cells, their atoms). On the host backend kernels
/// run inside the calls, so the host time is the work.
///
/// Balancers are pure functions of a BalanceInput: the same input gives the same owners
/// on every rank, so each rank computes them itself. The ones kodo has:
/// - greedy_balance: the heaviest unit first, each onto the rank with the least load so
///   far (placement is ignored: most units may move);
/// - refine_balance: units move only off ranks above the average by more than the
///   tolerance, each to the least loaded rank that stays below that bound, heaviest
///   first; where that leaves the most loaded rank above the bound, it swaps a unit with
///   the least loaded rank (few moves);
/// - rotate_balance: every unit to the next rank, as Charm++'s RotateLB: every unit moves,
///   which checks that a program's units keep all they need in state().
/// A balancer may be any function of the same type.
///
/// rebalance() applies a new map only when it is worth it: the ranks' loads are out of
/// balance by more than `tolerance` (max/avg - 1), the balancer's map lowers the most
/// loaded rank's load, and, where loads are measured times, that gain over one phase
/// (the time since the last balance point) is more than the time the collection's last
/// migration took (rebuilding the units costs more than the bytes: docs/performance.md).
/// BalanceOptions::always skips these checks (rotate_balance, lowering no rank's load, needs
/// it). Measured loads start again from zero after each call, whether it moved units or not.

#include <kodo/core/error.hpp>
#include <kodo/tasking/collection.hpp>
#include <kodo/tasking/migration.hpp>
#include <kodo/tasking/runtime.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kodo {

/// What a balancer chooses from, by linear index of the units.
struct BalanceInput {
  std::vector<double> loads;         ///< of each unit, >= 0
  std::vector<int> owners;           ///< where each unit is now
  std::vector<std::uint64_t> bytes;  ///< of each unit's state (what moving it costs)
  int ranks = 1;                     ///< the number of ranks
};
/// A balancer: the new owner of each unit, as a pure function of its input (the same on
/// every rank).
using Balancer = std::function<std::vector<int>(const BalanceInput&)>;

/// The heaviest unit first, each onto the rank with the least load so far.
std::vector<int> greedy_balance(const BalanceInput& input);
/// refine_balance(input), or RefineBalance{tolerance}(input) for another tolerance.
struct RefineBalance {
  double tolerance = 0.05;  ///< max/avg - 1 a rank may be above the average by
  /// Moves units only off ranks above the average by more than `tolerance` (see this
  /// file's description).
  std::vector<int> operator()(const BalanceInput& input) const;
};
/// The refine balancer with the default tolerance.
inline constexpr RefineBalance refine_balance{};
/// Every unit to the next rank: every unit moves (with BalanceOptions::always), which
/// checks that a unit's state() holds all it needs.
std::vector<int> rotate_balance(const BalanceInput& input);
/// "greedy", "refine" or "rotate"; throws kodo::Error naming the choices for anything else.
Balancer balancer_named(std::string_view name);

/// Each rank's load under `owners`, and max/avg - 1 of them (0 when every load is 0).
///@{
std::vector<double> rank_loads(const std::vector<double>& loads, const std::vector<int>& owners,
                               int ranks);
double imbalance(const std::vector<double>& rank_loads);
///@}

/// When rebalance() applies a balancer's map.
struct BalanceOptions {
  double tolerance = 0.05;  ///< max/avg - 1 that is left alone
  bool always = false;      ///< apply the balancer's map whatever the loads
};

/// What rebalance() saw and did, the same on every rank.
struct BalanceReport {
  bool applied = false;       ///< whether the balancer's map was applied (units moved)
  std::string why;            ///< why the map was not applied, or ""
  double before = 0;          ///< max/avg - 1 of the ranks' loads before
  double after = 0;           ///< the same under the map applied (or before, if none)
  std::int64_t moved = 0;     ///< units that moved
  MigrationReport migration;  ///< when applied
  BalanceInput input;         ///< the loads and owners it balanced (for LB data)
  std::vector<int> owners;    ///< the owners after
};

namespace detail {
// Throws kodo::Error naming `call` inside run(); else runs the job until it is quiet.
void quiesce(Runtime& runtime, const char* call);
// Collective: every unit's load and state size, gathered on every rank; then measured
// loads start again (balance.cpp).
BalanceInput gather_loads(Runtime& runtime, CollectionBase& collection,
                          const std::vector<std::uint64_t>& local_bytes);
// Collective: whether `mine` holds on every rank (balance.cpp).
bool on_every_rank(Runtime& runtime, bool mine);
// Whether to apply `owners`, and the report's numbers (balance.cpp).
BalanceReport judge(const BalanceInput& input, std::vector<int> owners,
                    const BalanceOptions& options, double moving_seconds, bool measured);
}  // namespace detail

/// The scheduler times the entry methods of `units`' units that state no load from now on
/// (or stops, with false). Every rank's main program calls it, for its own units.
template <class U>
void measure_loads(const Collection<U>& units, bool on = true) {
  detail::MigrationAccess::store(units).measure_loads = on;
}

/// Collective, between run() calls: see above.
template <class U>
BalanceReport rebalance(const Collection<U>& units, const Balancer& balancer,
                        BalanceOptions options = {}) {
  using Access = detail::MigrationAccess;
  auto& store = Access::store(units);
  detail::quiesce(units.runtime(), "rebalance");  // the phase's loads are all in
  std::vector<std::uint64_t> bytes;
  for (auto& unit : store.units()) {
    detail::StateSizes sizes;
    detail::StateWriter writer(sizes);
    unit->state(writer);
    bytes.push_back(sizes.bytes);
  }
  bool measured = true;
  for (std::int64_t s = 0; s < store.local_count(); ++s) measured &= !store.load(s).stated;
  BalanceInput input = detail::gather_loads(units.runtime(), store, bytes);
  store.measure_loads = true;  // the next phases are measured
  const bool measured_everywhere = detail::on_every_rank(units.runtime(), measured);
  std::vector<int> owners = balancer(input);
  BalanceReport report = detail::judge(input, std::move(owners), options,
                                       store.last_migration_seconds, measured_everywhere);
  if (report.applied) {
    report.migration = migrate(units, report.owners);
    if (report.migration.moved > 0) store.last_migration_seconds = report.migration.seconds;
  }
  return report;
}

/// How `units` is balanced at the balance points its units' tasks await inside run()
/// (WorkUnit::balance_point): rebalance(units, balancer, options) once every unit has
/// reached one and the job is quiet, then `after(report)` on every rank (LB data, a line
/// of output), then the entry method each task named goes on. Every rank's main program
/// calls it before run(), with the same balancer and options; a balance point reached
/// without it is an error naming the collection. An exception from `after` ends the job
/// (it would leave the other ranks waiting in run()).
template <class U>
void balance_points(const Collection<U>& units, Balancer balancer, BalanceOptions options = {},
                    std::function<void(const BalanceReport&)> after = {}) {
  detail::MigrationAccess::store(units).balance_at_point = [units, balancer = std::move(balancer),
                                                            options, after = std::move(after)] {
    const BalanceReport report = rebalance(units, balancer, options);
    if (!after) return;
    try {
      after(report);
    } catch (...) {  // on one rank: the others would wait for it in run()
      fatal(detail::cat("balance_points' callback failed: ", detail::what_of_current()));
    }
  };
}

}  // namespace kodo
