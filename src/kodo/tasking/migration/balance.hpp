// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Load balancing: units' measured loads, balancers that choose new owners from them, and
/// rebalance(), which moves the units (migration.hpp) when the gain is worth it, called
/// by every rank's main program between run() calls (examples/12_migration_balance.cpp):
/// @snippet 12_migration_balance.cpp rebalance
/// or inside run(), at a balance point every unit's task awaits (balance_points,
/// WorkUnit::balance_point; docs/porting.md, section 9). A unit's load is the host time of
/// its entry methods and task resumes, the device time of a stream it names
/// (WorkUnit::measure_device_load), or what it states (WorkUnit::set_load). What is
/// measured, and when: docs/concepts.md, "Load balancing".

#include <kodo/core/error.hpp>
#include <kodo/tasking/migration/migration.hpp>
#include <kodo/tasking/scheduling/runtime.hpp>
#include <kodo/tasking/units/collection.hpp>

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

/// The heaviest unit first, each onto the rank with the least load so far (placement is
/// ignored: most units may move).
std::vector<int> greedy_balance(const BalanceInput& input);
/// refine_balance(input), or RefineBalance{tolerance}(input) for another tolerance.
struct RefineBalance {
  double tolerance = 0.05;  ///< max/avg - 1 a rank may be above the average by
  /// Moves units only off ranks above the average by more than `tolerance`, each to the
  /// least loaded rank that stays below that bound, heaviest first; where that leaves the
  /// most loaded rank above the bound, swaps a unit with the least loaded rank (few moves).
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

/// Collective, between run() calls: gathers every unit's load, runs `balancer` and
/// migrates to its map when that is worth it: the loads are out of balance by more than
/// `options.tolerance`, the map lowers the most loaded rank's load and, for measured
/// times, that gain over one phase exceeds the collection's last migration's time
/// (`options.always` skips these checks). Measured loads start again from zero.
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
