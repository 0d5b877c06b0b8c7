// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Collections of work units and asynchronous entry-method invocation (a unit's base
/// class: work_unit.hpp; a reference to one unit: unit_ref.hpp):
/// ```
///   auto blocks = kodo::Collection<Block>::create(runtime, {4, 2, 2}, 0.5);  // 16 units
///   blocks[{1, 0, 1}].send<&Block::receive>(3, face);   // an entry method, local or remote
///   runtime.run();                                      // until the job is quiet
/// ```
/// Entry methods are ordinary member functions; a call runs later, on the rank that holds
/// the unit. Its arguments are copied when it is made, except views, which are handed
/// over: the very view on the same rank, elsewhere a view from the receiver's pool
/// (view_pool.hpp) that the data lands in. When a view may be written again, and how long
/// a received one stays the unit's: docs/concepts.md, "Rules a program keeps".

#include <kodo/core/detail/numeric.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/index.hpp>
#include <kodo/tasking/scheduling/runtime.hpp>
#include <kodo/tasking/units/detail/collection_base.hpp>
#include <kodo/tasking/units/detail/entry.hpp>
#include <kodo/tasking/units/unit_ref.hpp>
#include <kodo/tasking/units/unit_state.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace kodo {

template <class U>
struct UnitInit;  // work_unit.hpp
template <class Derived>
class WorkUnit;  // work_unit.hpp

namespace detail {
template <class U>
class CollectionStore;   // a collection's units on this rank (collection_impl.hpp)
struct MigrationAccess;  // migration.hpp
}  // namespace detail

/// A handle to a collection of units of type U, cheap to copy; units keep one to reach
/// their neighbours.
template <class U>
class Collection {
 public:
  Collection() = default;

  /// Collective: every rank calls it, in the same order relative to other collections.
  /// Builds this rank's units as U(UnitInit<U>, args...); `args` are passed by
  /// reference to each local constructor (they are not sent anywhere). The collection
  /// keeps a copy of each argument, where U has a state() and all can be copied, to build
  /// a unit that moves to another rank (migration.hpp) the same way: pass what units must
  /// share by reference as a pointer or std::ref.
  template <class... Args>
  static Collection create(Runtime& runtime, Extent3 shape, Args&&... args);

  /// A reference to the unit at `index`, wherever it is (unit_ref.hpp).
  UnitRef<U> operator[](const Index3& index) const { return {runtime_, id_, shape_, index}; }

  /// Invokes entry method M on every unit of the collection. Called by one rank (or
  /// one unit); every unit then runs M once.
  template <auto M, class... A>
  void broadcast(const A&... args) const {
    for (std::int64_t l = 0; l < shape_.size(); ++l)
      (*this)[shape_.delinear(l)].template send<M>(args...);
  }

  /// Invokes entry method M on the units this rank holds. Called by every rank (the
  /// SPMD main program), it reaches every unit once without any message between ranks.
  template <auto M, class... A>
  void broadcast_local(const A&... args) const {
    const auto& s = store();
    for (std::int64_t slot = 0; slot < s.local_count(); ++slot)
      (*this)[shape_.delinear(s.linear_of(slot))].template send<M>(args...);
  }

  /// The shape of the unit grid, and its number of units.
  ///@{
  const Extent3& shape() const { return shape_; }
  std::int64_t size() const { return shape_.size(); }
  ///@}
  /// The collection's number: the n-th created by the program has id n on every rank.
  std::uint32_t id() const { return id_; }
  /// The runtime the collection belongs to.
  Runtime& runtime() const { return *runtime_; }
  /// The rank that holds the unit at `index`.
  int owner(const Index3& index) const { return store().map().owner(shape_.linear(index)); }

  /// Calls f(U&) for each unit held by this rank, in index order.
  template <class F>
  void for_each_local(F&& f) const {
    for (auto& u : store().units()) f(*u);
  }

  /// Reduction results for the main program. R is the result type: the T contributed,
  /// std::vector<E> for a std::vector<E> or rank-1 view of E, E for a rank-0 view of E.
  /// Every rank's main program calls on_reduced before run(): `callback(round, result)`,
  /// a void(std::uint64_t, const R&), then runs on this rank once per completed round of
  /// this collection without a name (rounds count from 0, named ones too), from the
  /// scheduler loop, in round order, after the units' target; a round whose results are
  /// not of type R ends the job naming both types.
  /// R may instead name a reduction (a kodo::Reduction type, reduction_ops.hpp): the
  /// callback, taking its result type, then runs for that reduction's rounds only, so the
  /// main program can watch several reductions of one collection.
  template <class R, class F>
  void on_reduced(F callback) const;
  /// The result of the latest round without a name of this collection completed on this
  /// rank (run() leaves it behind), or of named reduction R's latest round. Throws
  /// kodo::Error when no such round has completed, or when its results are not of type R.
  template <class R>
  auto reduced() const {
    using Result = result_of<R>;
    return detail::ReductionValue<Result>::load(runtime_->reduced(store(), typeid(Result),
                                                                  name_of<R>()));
  }

 private:
  friend class WorkUnit<U>;
  friend struct detail::MigrationAccess;
  static std::int64_t store_linear(Runtime& runtime, std::uint32_t id, std::int64_t slot) {
    return runtime.collection(id).linear_of(slot);
  }
  // A named reduction's result type, or R itself.
  template <class R>
  static auto result_type_of() {
    if constexpr (detail::NamedReduction<R>) {
      using T = typename R::value_type;
      return std::type_identity<
          decltype(detail::ReductionValue<T>::load(std::declval<const Bytes&>()))>{};
    } else {
      static_assert(detail::ReductionValueType<R>, "kodo: R is not a reduction result type");
      return std::type_identity<R>{};
    }
  }
  template <class R>
  using result_of = typename decltype(result_type_of<R>())::type;
  template <class R>
  static const std::type_info* name_of() {
    if constexpr (detail::NamedReduction<R>)
      return &typeid(R);
    else
      return nullptr;
  }
  Collection(Runtime* runtime, std::uint32_t id, Extent3 shape)
      : runtime_(runtime), id_(id), shape_(shape) {}
  detail::CollectionStore<U>& store() const {
    auto& s = static_cast<detail::CollectionStore<U>&>(runtime_->collection(id_));
    if (s.broken)
      throw Error(detail::cat("collection ", id_,
                              " cannot be used: a migration failed while rebuilding its units"));
    return s;
  }

  Runtime* runtime_ = nullptr;
  std::uint32_t id_ = 0;
  Extent3 shape_;
};

}  // namespace kodo

// The bodies of the members above, and what a collection keeps of its units.
#include <kodo/tasking/units/detail/collection_impl.hpp>
