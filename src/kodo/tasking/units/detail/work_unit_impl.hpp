// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The bodies of WorkUnit's members that tasking/units/work_unit.hpp declares, and what its
// awaitables are made of. Installed: they are templates of the user's unit type.

#include <kodo/backends/stream.hpp>
#include <kodo/comm/channel.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/index.hpp>
#include <kodo/tasking/scheduling/runtime.hpp>
#include <kodo/tasking/tasks/task.hpp>
#include <kodo/tasking/units/collection.hpp>
#include <kodo/tasking/units/neighbours.hpp>
#include <kodo/tasking/units/work_unit.hpp>

#include <Kokkos_Profiling_ScopedRegion.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace kodo {

template <class Derived>
Channel WorkUnit<Derived>::open_channel(Stream& stream, const Index3& peer, CommMode mode,
                                        int port) const {
  if (port >= detail::kNeighbourPorts)
    throw Error(
        detail::cat("unit ", index_, " opened a channel on port ", port,
                    ": ports from 2^29 up are the runtime's (neighbour channels, step programs)"));
  const int peer_rank = collection_.shape().contains(peer) ? collection_.owner(peer) : -1;
  return Channel(runtime().channel_host(),
                 detail::LinkSpec{collection_.id(), collection_.shape(), index_, peer, peer_rank,
                                  port, &stream, mode});
}

template <class Derived>
Channel WorkUnit<Derived>::open_neighbour_channel(Stream& stream, Direction direction,
                                                  Periodic periodic, CommMode mode) const {
  const std::optional<Index3> peer = neighbour(direction, periodic);
  if (!peer)
    throw Error(detail::cat("unit ", index_, " has no neighbour in direction ", direction,
                            " on its collection's grid of shape ", collection_.shape(),
                            " (a dimension that is not periodic ends there)"));
  const auto& shape = collection_.shape();
  const auto ports = detail::neighbour_ports(shape.linear(index_), shape.linear(*peer), direction);
  return Channel(runtime().channel_host(),
                 detail::LinkSpec{collection_.id(), shape, index_, *peer, collection_.owner(*peer),
                                  ports.receive, &stream, mode, ports.send});
}

template <class Derived>
void WorkUnit<Derived>::set_load(double load) const {
  if (!(load >= 0) || !std::isfinite(load))
    throw Error(detail::cat("unit ", index_, " stated a load of ", load,
                            ": a load is finite and not negative"));
  auto& store = collection_.store();
  store.load(store.slot_of(store.shape().linear(index_))).stated = load;
}

template <class Derived>
void WorkUnit<Derived>::measure_device_load(Stream& stream) const {
  auto& store = collection_.store();
  store.load(store.slot_of(store.shape().linear(index_))).device_stream = stream.native_handle();
}

template <class Derived>
template <auto M, class... A>
auto WorkUnit<Derived>::balance_point(A&&... args) {
  using E = detail::Entry<Derived, M>;
  static_assert(sizeof...(A) == std::tuple_size_v<typename E::Arguments>,
                "kodo: wrong number of arguments for this entry method");
  // Kept as the entry method's parameters (a pointer into the unit would not outlive a
  // move), sent as a call once the collection is balanced.
  return detail::Awaitable<BalancePoint>(
      {this, [collection = collection_, index = index_,
              kept = typename E::Arguments(std::forward<A>(args)...)] {
         std::apply([&](const auto&... a) { collection[index].template send<M>(a...); }, kept);
       }});
}

template <class Derived>
template <auto Target, class Op, class V>
void WorkUnit<Derived>::contribute_view(Stream& stream, const V& view) {
  static_assert(V::rank() <= 1, "kodo: a view contributed to a reduction has rank 0 or 1");
  using E = typename V::non_const_value_type;
  using T = std::conditional_t<V::rank() == 0, E, std::vector<E>>;
  using R = detail::Reducer<Derived, T, Op, Target>;
  if (!view.span_is_contiguous())
    throw Error(detail::cat("unit ", index_, " contributed a non-contiguous view (", view.label(),
                            ") to a reduction"));
  const std::uint64_t round = next_round_++;
  const std::size_t count = view.size(), bytes = count * sizeof(E);
  auto staging = runtime().pinned_staging(bytes);
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  static const std::string region = "kodo::reduction contribution copy";
  Kokkos::Profiling::ScopedRegion here(region);  // unmanaged views: no label of their own
  Kokkos::deep_copy(
      stream.space(),
      Kokkos::View<E*, Kokkos::LayoutRight, Kokkos::SharedHostPinnedSpace, Unmanaged>(
          reinterpret_cast<E*>(staging.data()), count),
      Kokkos::View<const E*, Kokkos::LayoutRight, typename V::memory_space, Unmanaged>(view.data(),
                                                                                       count));
  // The view and the staging buffer stay alive until the copy is done.
  when_done(stream, [this, view, staging, bytes, round] {
    Bytes value(bytes);
    if (bytes) std::memcpy(value.data(), staging.data(), bytes);
    contribute_to_round<R>(round, std::move(value));
  });
}

template <class Derived>
void WorkUnit<Derived>::start_task(Task task) {
  auto& store = collection_.store();
  detail::start_task(std::move(task),
                     detail::cat("unit ", index_, " of collection ", collection_.id()),
                     runtime().tasks(), runtime().channel_host(), &store,
                     store.slot_of(store.shape().linear(index_)));
}

// all_reduce(value): contributes when awaited; the result resumes the task from the
// scheduler loop (not from inside the reduction tree, which may be delivering to the
// unit's neighbours).
template <class Derived>
template <class T, class Op, class Name>
struct WorkUnit<Derived>::AllReduce {
  using Reducer = detail::Reducer<Derived, T, Op, detail::awaiting_task, Name>;
  using Result = typename Reducer::Result;
  WorkUnit* unit;
  T value;
  std::source_location where;
  std::uint64_t round = 0;
  std::optional<Result> reduced{};
  bool ready() const { return false; }
  void start(detail::TaskRecord& task, std::function<void()> done) {
    round = unit->next_round_++;
    unit->awaited_rounds_
        .expect(round, detail::recycled([this, host = task.host,
                                         done = std::move(done)](const Bytes& bytes) mutable {
                  reduced = detail::ReductionValue<T>::load(bytes);
                  host->expect_event();
                  host->queue_callback(std::move(done));
                }));
    unit->template contribute_to_round<Reducer>(round, detail::ReductionValue<T>::bytes(value));
  }
  Reduced<Result> result() { return {std::move(*reduced), round}; }
  const char* what() const { return "the result of all_reduce round"; }
  std::int64_t number() const { return static_cast<std::int64_t>(round); }
};

// balance_point: the task leaves the rank's list of waiting tasks (the job may go quiet
// with it) and is kept by the collection until the scheduler balances it.
template <class Derived>
struct WorkUnit<Derived>::BalancePoint {
  static constexpr bool ends_task = true;  ///< not in a when_all (task.hpp)
  WorkUnit* unit;
  std::function<void()> go_on;
  std::source_location where{};
  bool ready() const { return false; }
  void start(detail::TaskRecord& task, const std::function<void()>&) {
    auto& store = unit->collection_.store();
    const std::int64_t linear = store.shape().linear(unit->index_);
    if (!store.parked.emplace(linear, detail::CollectionBase::Parked{task.frame, std::move(go_on)})
             .second)
      throw Error(detail::cat("unit ", unit->index_,
                              " awaits a balance point in two tasks at once (one task per unit "
                              "reaches a balance point)"));
    detail::leave_task_list(task);
  }
  void result() const {}
  const char* what() const { return "a balance point (balance_point)"; }
  std::int64_t number() const { return -1; }
};

namespace detail {

template <class U>
AwaitedRounds& awaited_rounds(U& unit) {
  return static_cast<WorkUnit<U>&>(unit).awaited_rounds_;
}
template <class U>
void start_unit_task(U& unit, Task task) {
  static_cast<WorkUnit<U>&>(unit).start_task(std::move(task));
}

}  // namespace detail

}  // namespace kodo
