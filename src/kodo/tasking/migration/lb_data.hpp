// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// LB data: the loads and placements of every balance point, written in DARMA vt's LB
/// data format (JSON, the schema vt's scripts/LBDatafile_schema.py checks), so that
/// vt-tv and LBAF can show and analyse a kodo run.
/// ```
///   kodo::LbData lb(runtime, "lb_data");                  // collective
///   auto report = kodo::rebalance(blocks, kodo::refine_balance);
///   lb.add_phase(blocks, report);                          // every rank, each balance
///   lb.write();                                            // collective: DIR/data.RANK.json
/// ```

#include <kodo/tasking/migration/balance.hpp>
#include <kodo/tasking/scheduling/runtime.hpp>
#include <kodo/tasking/units/collection.hpp>

#include <cstdint>
#include <string>

namespace kodo {

/// Writes the loads and placements of every balance point as LB data. Each rank's file
/// holds, for each phase (a stretch between balance points, numbered from 0), a task per
/// unit the rank held during it: the unit's linear index as seq_id, its collection and
/// index, the rank it was created on as home, the rank as node, and its load as time
/// (seconds where measured; the unit's own measure where it stated one). The phase's
/// user_defined says whether the balance was applied, the ranks' max/avg - 1 before and
/// after it, and how many units moved.
class LbData {
 public:
  /// Collective: rank 0 creates `dir` (throws kodo::Error on every rank when it cannot).
  LbData(Runtime& runtime, std::string dir);

  /// Records the phase that `report` (rebalance's, for collection `c`) ended.
  template <class U>
  void add_phase(const Collection<U>& c, const BalanceReport& report) {
    add_phase(c.id(), c.shape(), report);
  }
  /// The same, for the collection with id `collection` and shape `shape`.
  void add_phase(std::uint32_t collection, const Extent3& shape, const BalanceReport& report);

  /// Collective: writes DIR/data.RANK.json on every rank; a failure on any rank is a
  /// kodo::Error on every rank.
  void write();
  /// The phases recorded so far on this rank.
  std::uint64_t phases() const { return phases_; }

 private:
  Runtime& runtime_;
  std::string dir_;
  std::string phases_json_;  // this rank's phases, comma-separated
  std::uint64_t phases_ = 0;
};

}  // namespace kodo
