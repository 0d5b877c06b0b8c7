// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What a collection keeps of its units on this rank, and the bodies of the members
// tasking/units/collection.hpp declares. Installed: they are templates of the user's unit type.

#include <kodo/core/detail/numeric.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/index.hpp>
#include <kodo/tasking/scheduling/runtime.hpp>
#include <kodo/tasking/units/collection.hpp>
#include <kodo/tasking/units/detail/collection_base.hpp>
#include <kodo/tasking/units/unit_state.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace kodo {

namespace detail {

// The units of one collection this rank holds, beside what every collection keeps.
template <class U>
class CollectionStore final : public CollectionBase {
 public:
  CollectionStore(std::uint32_t id, Extent3 shape, int rank, int ranks)
      : CollectionBase(id, shape, rank, ranks, typeid(U)) {}
  void* unit_at(std::int64_t slot) override { return units_[static_cast<std::size_t>(slot)].get(); }
  std::vector<std::unique_ptr<U>>& units() { return units_; }
  // Builds a unit as create() did, with copies of its arguments (migration.hpp); empty
  // when they cannot be copied.
  std::function<std::unique_ptr<U>(const UnitInit<U>&)> make;

 private:
  std::vector<std::unique_ptr<U>> units_;
};

}  // namespace detail

template <class U>
template <class... Args>
Collection<U> Collection<U>::create(Runtime& runtime, Extent3 shape, Args&&... args) {
  const auto xy =
      detail::checked_mul(static_cast<std::uint64_t>(shape.x), static_cast<std::uint64_t>(shape.y));
  const auto xyz = xy ? detail::checked_mul(*xy, static_cast<std::uint64_t>(shape.z)) : xy;
  if (shape.x < 1 || shape.y < 1 || shape.z < 1 || !xyz || *xyz > std::uint64_t{1} << 62)
    throw Error(detail::cat(
        "a collection needs at least one unit in each dimension and at most 2^62 in all, not ",
        shape));
  const std::uint32_t id = runtime.collection_count();
  auto store =
      std::make_unique<detail::CollectionStore<U>>(id, shape, runtime.rank(), runtime.size());
  auto& units = store->units();
  // Only for units that can move (they have a state()): copying an argument may not
  // compile for every type that says it can be copied (a vector of unique_ptr).
  if constexpr (requires(U& u, detail::StateWriter& writer) { u.state(writer); } &&
                (std::is_copy_constructible_v<std::decay_t<Args>> && ...))
    store->make = [... kept = std::decay_t<Args>(args)](const UnitInit<U>& init) mutable {
      return std::make_unique<U>(init, kept...);
    };
  const std::int64_t count = store->local_count();
  // Registered before the units are built, so constructors can reach the collection
  // (owners of other units, channels); nothing is dispatched before run().
  runtime.add_collection(std::move(store));
  for (std::int64_t s = 0; s < count; ++s) {
    const UnitInit<U> init(&runtime, id, shape, shape.delinear(store_linear(runtime, id, s)));
    units.push_back(std::make_unique<U>(init, args...));
  }
  return Collection(&runtime, id, shape);
}

template <class U>
template <class R, class F>
void Collection<U>::on_reduced(F callback) const {
  using Result = result_of<R>;
  static_assert(std::is_invocable_v<F&, std::uint64_t, const Result&>,
                "kodo: on_reduced<R> takes a callback void(std::uint64_t round, const R&) (for "
                "a named reduction, const R::value_type&)");
  runtime_->on_reduced(
      store(), typeid(Result),
      [f = std::move(callback)](std::uint64_t round, const Bytes& bytes) mutable {
        f(round, detail::ReductionValue<Result>::load(bytes));
      },
      name_of<R>());
}

}  // namespace kodo
