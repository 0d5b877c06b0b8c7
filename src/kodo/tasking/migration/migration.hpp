// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Moving units between ranks: migrate(collection, owners) gives every unit the rank
/// `owners` names (balance.hpp chooses owners from measured loads).
/// ```
///   // Between run() calls, on every rank (collective), with the same owners everywhere:
///   kodo::MigrationReport r = kodo::migrate(blocks, owners);  // owners[linear index]: rank
/// ```
/// A unit moves with its state() (unit_state.hpp). Every unit of the collection is rebuilt
/// by its constructor, those that stay too, then restored: constructors open their
/// channels afresh toward the new owners. References to units (U&) taken before are
/// invalid after (UnitRef and indices stay valid); the collection's step programs are
/// built again. How units and their views travel: docs/concepts.md, "Load balancing", and
/// docs/architecture.md, "Migration and load balancing".

#include <kodo/core/error.hpp>
#include <kodo/tasking/scheduling/runtime.hpp>
#include <kodo/tasking/units/collection.hpp>
#include <kodo/tasking/units/unit_state.hpp>
#include <kodo/tasking/units/work_unit.hpp>

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kodo {

/// Where a migration's time went: each phase's seconds on the rank where it took longest
/// (so they need not add up to MigrationReport::seconds).
struct MigrationPhases {
  double records = 0;         ///< the map checked, leaving units' headers and records sent
  double arrival_buffer = 0;  ///< the device buffer the arriving views land in, allocated
  double views = 0;           ///< the views' data moved, in pieces through the staging slots (and
                              ///< the slots allocated, the first time a rank needs them)
  double rebuild = 0;         ///< links closed, every unit built again and restored
  // rebuild's parts:
  double links = 0;         ///< the collection's links closed, the new map installed
  double constructors = 0;  ///< units built by their constructors (and their device work)
  double restores = 0;      ///< the units' state restored into them
  double release = 0;       ///< the units they replace freed
};

/// What a migration did, the same on every rank.
struct MigrationReport {
  std::int64_t moved = 0;        ///< units that changed rank
  std::uint64_t bytes = 0;       ///< of their state, over all ranks
  double seconds = 0;            ///< from the call until every unit was rebuilt, slowest rank
  std::uint64_t epoch = 0;       ///< of the map now installed (UnitMap::epoch)
  std::uint64_t view_bytes = 0;  ///< of the views among `bytes`, over all ranks
  MigrationPhases phases;        ///< where `seconds` went
  bool views_on_node = false;    ///< the views went by the same-node route (else UCX)
};

/// One line for a log: "records 0.0012 s, arrival buffer 0.0031 s, views 3660.0 MB in
/// 0.0120 s (same-node route), rebuild 0.0050 s (links 0.0001, constructors 0.0030,
/// restores 0.0015, release 0.0004)" (the phases of `report`; the route is left out when
/// no view moved).
std::string describe_phases(const MigrationReport& report);

namespace detail {

inline constexpr int kMigrationsInFlight = 4;

// The part of a migration that is not a template (migration.cpp).
class Migration {
 public:
  // Collective: runs the job until it is quiet and checks `owners` (migrate's errors).
  Migration(Runtime& runtime, CollectionBase& collection, std::vector<int> owners);
  ~Migration();
  Migration(const Migration&) = delete;
  Migration& operator=(const Migration&) = delete;

  bool moves_nothing() const;
  // Sends the local units that leave and receives those that arrive: visit(slot, writer)
  // walks the unit at an old slot (twice: its size, then its bytes); rounds(slot) its
  // next reduction round. Collective; errors on any rank throw on every rank, before
  // anything changed.
  void exchange(const std::function<void(std::int64_t, StateWriter&)>& visit,
                const std::function<std::uint64_t(std::int64_t)>& rounds);
  // Closes every link of the collection on this rank and installs the new map; the
  // caller then rebuilds the units for its new slots.
  void install();
  // Whether the unit of `linear` was held here before (and at which old slot), or -1.
  std::int64_t old_slot(std::int64_t linear) const;
  // An arrived unit's state, restored by visit(reader); its next reduction round.
  std::uint64_t restore(std::int64_t linear, const std::function<void(StateReader&)>& visit);
  // Copies a staying unit's state from the unit it replaces into the new one.
  void copy(const std::function<void(StateWriter&)>& from,
            const std::function<void(StateReader&)>& into);
  // Seconds this rank spent in rebuild's parts (MigrationPhases), for finish().
  void note_rebuild(double links, double constructors, double restores, double release);
  // Collective: agrees on `problem` (a failure after install() leaves units half built:
  // it is the same kodo::Error on every rank) and reports.
  MigrationReport finish(const std::string& problem);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What migration uses of collections and units (a friend of each).
struct MigrationAccess {
  template <class U>
  static CollectionStore<U>& store(const Collection<U>& c) {
    return c.store();
  }
  template <class U>
  static std::uint64_t& rounds(U& unit) {
    return static_cast<WorkUnit<U>&>(unit).next_round_;
  }
  template <class U>
  static UnitInit<U> init(const Collection<U>& c, std::int64_t linear) {
    return UnitInit<U>(&c.runtime(), c.id(), c.shape(), c.shape().delinear(linear));
  }
};

}  // namespace detail

/// Collective, between run() calls: moves every unit of `units` to the rank owners[l]
/// names (l: its linear index; every rank passes the same owners), once the job is quiet
/// (it runs run() first). A map that moves no unit changes nothing. Owners of the wrong
/// length, naming a rank outside the job or differing between ranks, and a unit type whose
/// create() arguments cannot be copied, throw kodo::Error on every rank and leave the
/// collection as it was; a unit that fails to build or restore throws on every rank too.
template <class U>
MigrationReport migrate(const Collection<U>& units, std::vector<int> owners) {
  using Access = detail::MigrationAccess;
  auto& store = Access::store(units);
  detail::Migration m(units.runtime(), store, std::move(owners));
  if (m.moves_nothing()) return m.finish("");
  if (!store.make)
    throw Error(detail::cat(
        "units of collection ", units.id(),
        " cannot move: the arguments Collection::create passed their constructor cannot be "
        "copied (a collection of units with a state() keeps copies to build units on their "
        "new rank)"));
  auto& held = store.units();
  m.exchange([&](std::int64_t slot, detail::StateWriter& w) { held[slot]->state(w); },
             [&](std::int64_t slot) { return Access::rounds(*held[slot]); });
  std::vector<std::unique_ptr<U>> old = std::move(held);
  held.clear();
  const auto now = [] { return MPI_Wtime(); };  // the clock of the other phases
  double began = now(), links = 0, constructors = 0, restores = 0, released = 0;
  m.install();
  links = now() - began;
  std::string problem;
  try {
    for (std::int64_t slot = 0; slot < store.local_count(); ++slot) {
      const std::int64_t linear = store.linear_of(slot);
      began = now();
      std::unique_ptr<U> unit = store.make(Access::init(units, linear));
      U& fresh = *unit;
      held.push_back(std::move(unit));
      // The constructor's device work (on any stream or instance) before the restore.
      Kokkos::fence("kodo::migrate: a rebuilt unit's constructor");
      const double built = now();
      constructors += built - began;
      if (const std::int64_t was = m.old_slot(linear); was >= 0) {
        U& before = *old[static_cast<std::size_t>(was)];
        m.copy([&](detail::StateWriter& w) { before.state(w); },
               [&](detail::StateReader& r) { fresh.state(r); });
        Access::rounds(fresh) = Access::rounds(before);
        const double restored = now();
        restores += restored - built;
        old[static_cast<std::size_t>(was)].reset();
        released += now() - restored;
      } else {
        Access::rounds(fresh) = m.restore(linear, [&](detail::StateReader& r) { fresh.state(r); });
        restores += now() - built;
      }
    }
  } catch (...) {
    problem = detail::what_of_current();
  }
  began = now();
  old.clear();
  m.note_rebuild(links, constructors, restores, released + now() - began);
  try {
    return m.finish(problem);
  } catch (...) {
    store.broken = true;  // units are missing on some rank: Collection refuses it from now on
    throw;
  }
}

}  // namespace kodo
