// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The type-independent part of a collection: its id, shape, unit type, mapping onto
// ranks and the load its local units measured. The scheduler keeps these;
// `Collection<U>` adds the units themselves.

#include <kodo/core/index.hpp>

#include <coroutine>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <typeindex>
#include <vector>

namespace kodo::detail {

// Which rank holds each unit of a collection. A new collection's units lie in
// contiguous blocks of linear indices (when they do not divide evenly, the first
// (units % ranks) ranks hold one more); a rebalance (balance.hpp) installs any other
// owner per unit, and numbers each map it installs (its epoch: 0 for the blocks).
class UnitMap {
 public:
  UnitMap(std::int64_t units, int ranks);
  // Owner per linear index; throws kodo::Error when one is outside [0, ranks).
  UnitMap(std::vector<int> owners, int ranks, std::uint64_t epoch);

  int owner(std::int64_t linear) const;
  std::int64_t count(int rank) const { return counts_[static_cast<std::size_t>(rank)]; }
  std::int64_t units() const { return units_; }
  int ranks() const { return ranks_; }
  std::uint64_t epoch() const { return epoch_; }
  // The linear indices `rank` holds, ascending.
  std::vector<std::int64_t> units_of(int rank) const;
  // Whether the map is the blocks a new collection has.
  bool blocks() const { return owners_.empty(); }

  // The order of ranks in the collection's reduction tree: those holding units first,
  // then the others, each ascending. holders() ranks hold units (positions 0 ..
  // holders()-1); rank_at(0) is the root.
  int holders() const { return holders_; }
  int position(int rank) const { return positions_[static_cast<std::size_t>(rank)]; }
  int rank_at(int position) const { return order_[static_cast<std::size_t>(position)]; }

 private:
  void order_ranks();
  std::int64_t units_;
  int ranks_;
  std::uint64_t epoch_ = 0;
  std::int64_t base_, extra_;  // the blocks
  std::vector<int> owners_;    // empty for the blocks
  std::vector<std::int64_t> counts_;
  int holders_ = 0;
  std::vector<int> order_, positions_;
};

// What a unit's work took since the collection's last balance point: host seconds in its
// entry methods (measured by the scheduler), and a load the unit stated
// (WorkUnit::state_load), which the balancers take instead where given.
struct UnitLoad {
  double measured = 0;
  std::optional<double> stated;
  // The native stream whose device time is the measured load (WorkUnit::
  // measure_device_load; load_timing.hpp), or null: host time. Set by the unit's
  // constructor on its rank; it does not travel.
  void* device_stream = nullptr;
  double value() const { return stated ? *stated : measured; }
};

class DeviceLoads;  // load_timing.hpp

class CollectionBase {
 public:
  CollectionBase(std::uint32_t id, Extent3 shape, int rank, int ranks, std::type_index unit_type);
  virtual ~CollectionBase() = default;
  CollectionBase(const CollectionBase&) = delete;
  CollectionBase& operator=(const CollectionBase&) = delete;

  // The local unit at slot 0 .. local_count()-1, type-erased.
  virtual void* unit_at(std::int64_t slot) = 0;

  std::uint32_t id() const { return id_; }
  const Extent3& shape() const { return shape_; }
  const UnitMap& map() const { return map_; }
  std::type_index unit_type() const { return unit_type_; }
  std::int64_t local_count() const { return static_cast<std::int64_t>(locals_.size()); }
  // The linear index of the unit at `slot`; local units are in index order.
  std::int64_t linear_of(std::int64_t slot) const {
    return locals_[static_cast<std::size_t>(slot)];
  }
  // The local slot of the unit with linear index `linear`, or -1 when it is not held
  // here (any value, including ones outside the collection, is safe to ask about).
  std::int64_t slot_of(std::int64_t linear) const {
    if (contiguous_) {  // the common case: a block of indices, no search
      if (locals_.empty() || linear < locals_.front() || linear > locals_.back()) return -1;
      return linear - locals_.front();
    }
    return search(linear);
  }

  // The load of the unit at `slot` (UnitLoad).
  UnitLoad& load(std::int64_t slot) { return loads_[static_cast<std::size_t>(slot)]; }

  // Whether the scheduler times the entry methods of units that state no load (two clock
  // reads a call): from kodo::measure_loads or the first rebalance on (balance.hpp).
  bool measure_loads = false;
  // Where device time is measured (the scheduler's), or null.
  DeviceLoads* device_loads = nullptr;

  // Seconds the collection's last migration took (0: none yet), the balancers' estimate
  // of what moving costs (balance.hpp): rebuilding the units dominates, not the bytes.
  double last_migration_seconds = 0;
  // A migration failed while rebuilding the units: the collection cannot be used.
  bool broken = false;
  // What must let go of the collection's views and links before its units move (its step
  // programs' graphs), by owner: a migration calls each before it closes the links.
  std::map<const void*, std::function<void()>> before_migration;

  // Tasks of this rank's units that await a balance point (WorkUnit::balance_point): the
  // suspended task's frame, destroyed at the point, and the call that goes on from it
  // (sent to the unit wherever it is once the collection is balanced), by linear index.
  struct Parked {
    std::coroutine_handle<> frame;
    std::function<void()> go_on;
  };
  std::map<std::int64_t, Parked> parked;
  // Balances the collection at a point every unit reached, from the scheduler loop with
  // the job quiet (kodo::balance_points sets it; without it such a point is an error).
  std::function<void()> balance_at_point;

  // Installs `map` (migration only): the local units become those it gives this rank,
  // with `loads` (by new slot). The caller rebuilds the units to match.
  void install(UnitMap map, std::vector<UnitLoad> loads);

 private:
  std::int64_t search(std::int64_t linear) const;
  std::uint32_t id_;
  Extent3 shape_;
  std::type_index unit_type_;
  int rank_;
  bool contiguous_ = true;  // locals_ is a run of consecutive indices
  UnitMap map_;
  std::vector<std::int64_t> locals_;
  std::vector<UnitLoad> loads_;
};

}  // namespace kodo::detail
