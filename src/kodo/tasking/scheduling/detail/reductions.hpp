// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The reduction tree: owns every reduction round this rank takes part in, from its
// units' contributions to the result handed to them and to the main program.
//
// Ranks that hold units of a collection form a binary tree over their positions in the
// collection's map (UnitMap::position: holders first; position p's parent is (p-1)/2;
// with the blocks a new collection has, position = rank). A rank combines its units'
// values and its children's partial results in a fixed order (units by index, then
// children), passes the partial up, and the root (position 0) sends the result down the
// same tree over all ranks (those without units too). Each rank
// delivers results in round order: to its units' target, then to the main program's
// callbacks (on_reduced: of the rounds without a name, or of one named reduction's), and
// keeps the latest of each (reduced). Rounds may complete out of
// order (a unit's round k+1 before its round k). A unit contributes once per round;
// the runtime-length arrays of one round must all have one length ("a reduction of
// mismatched shapes" otherwise). Partials and results from other ranks are checked
// against the tree before they are used: a partial must come from a child, once per
// round, for a round still open here; a result must come from the parent, once, for a
// round this rank has passed up, with the reducer and the length it passed up (on a
// rank without units: for a round not yet delivered); the reducer must be one of the
// collection's unit type and the value of its size (a whole number of elements for
// runtime-length arrays).

#include <kodo/comm/detail/wire.hpp>
#include <kodo/core/detail/recycled.hpp>
#include <kodo/tasking/units/detail/collection_base.hpp>
#include <kodo/tasking/units/detail/entry.hpp>
#include <kodo/tasking/units/detail/registry.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <vector>

namespace kodo::detail {

// How far a round may be ahead of the oldest one a rank has not delivered: it bounds
// the rounds a rank holds for a collection, so partials or results from another rank
// (forged, or from a runaway loop) cannot grow its memory without end.
inline constexpr std::uint64_t kMaxRoundsAhead = std::uint64_t{1} << 16;

class ReductionTree {
 public:
  // `post(rank, message)` sends a partial or result on (to this rank too, for rank 0).
  using Post = std::function<void(int, Message&&)>;
  ReductionTree(int rank, Post post);

  // A local unit's value for `round`; throws kodo::Error naming the unit, the round
  // and the collection when the unit has contributed to that round already.
  void contribute(CollectionBase& c, std::int64_t slot, std::uint64_t round, HandlerId reducer,
                  Bytes value);
  // A child's partial and the parent's result (or this rank's own, at the root); a
  // message from another rank that does not fit the tree throws kodo::Error naming the
  // field.
  void on_partial(CollectionBase& c, const MessageHeader& h, Bytes value);
  void on_result(CollectionBase& c, const MessageHeader& h, Bytes value, bool from_wire);

  // Throws kodo::Error unless `reducer` is a reducer of the collection's unit type whose
  // values take `bytes`.
  void check_value(const CollectionBase& c, HandlerId reducer, std::size_t bytes) const;

  // The main program's view of results. `callback(round, result)` runs for each round
  // of collection `c` without a name delivered on this rank from now on (each of
  // reduction `name`'s instead, where `name` is not null); a round whose result type is
  // not `type` throws kodo::Error naming both.
  using ResultCallback = std::function<void(std::uint64_t, const Bytes&)>;
  void on_reduced(const CollectionBase& c, const std::type_info& type, ResultCallback callback,
                  const std::type_info* name = nullptr);
  // The latest result of a round without a name delivered on this rank (of reduction
  // `name`, where not null); throws kodo::Error when there is none or when it is not of
  // `type`.
  const Bytes& reduced(const CollectionBase& c, const std::type_info& type,
                       const std::type_info* name = nullptr) const;

  // Rounds heard of and not yet passed on, over all collections.
  std::uint64_t pending_rounds() const;
  // One line per pending round: which local units and child ranks have not
  // contributed.
  std::string describe_pending(int rank) const;
  // Forgets pending rounds (nothing can complete them any more).
  void drop_pending();

 private:
  struct Round {
    HandlerId reducer = 0;
    std::vector<std::optional<Bytes>, RecycledAllocator<std::optional<Bytes>>> local;
    std::int64_t local_received = 0;
    std::array<std::optional<Bytes>, 2> children;
    int children_received = 0;
  };
  struct PassedUp {
    HandlerId reducer;
    std::size_t bytes;  // the result must have this length
  };
  struct Callback {
    const std::type_info* type;
    const std::type_info* name;  // null: every round
    ResultCallback call;
  };
  struct Latest {
    std::uint64_t round;
    HandlerId reducer;
    Bytes value;
  };
  struct State {
    RecycledMap<std::uint64_t, Round> open;          // heard of, not yet passed on
    RecycledMap<std::uint64_t, PassedUp> passed_up;  // passed on, result not yet delivered
    std::uint64_t next_result = 0;                   // results are delivered in round order
    std::map<std::uint64_t, std::pair<HandlerId, Bytes>> early;  // results ahead of it
    std::vector<Callback> callbacks;                             // the main program's
    std::optional<Latest> latest;                    // the last result of a round without a name
    std::map<std::type_index, Latest> latest_named;  // the same, by reduction name
    const CollectionBase* collection = nullptr;      // for reports
  };

  const ReducerHandler& reducer_of(const CollectionBase& c, HandlerId id) const;
  // Throws unless `round` lies within kMaxRoundsAhead of the oldest undelivered one.
  void check_window(const CollectionBase& c, const State& s, std::uint64_t round) const;
  Round& open_round(CollectionBase& c, State& s, std::uint64_t round, HandlerId reducer);
  void try_complete(CollectionBase& c, State& s, std::uint64_t round);
  void check_shapes(const CollectionBase& c, std::uint64_t round, const Round& r) const;
  void deliver(CollectionBase& c, State& s, std::uint64_t round, HandlerId reducer,
               const Bytes& value);

  int rank_;
  Post post_;
  std::map<std::uint32_t, State> states_;  // by collection id
};

}  // namespace kodo::detail
