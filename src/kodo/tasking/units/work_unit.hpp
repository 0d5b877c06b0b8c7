// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// WorkUnit: the base class of work units, and UnitInit, what the runtime hands a unit's
/// constructor. A unit asks its runtime for streams, device completions (when_done),
/// channels to other units (open_channel, open_neighbour_channel) and reduction rounds
/// (contribute, all_reduce).
/// Its entry methods may be coroutines (kodo::Task, task.hpp).

#include <kodo/backends/stream.hpp>
#include <kodo/comm/channel.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/index.hpp>
#include <kodo/tasking/scheduling/runtime.hpp>
#include <kodo/tasking/tasks/task.hpp>
#include <kodo/tasking/units/collection.hpp>
#include <kodo/tasking/units/neighbours.hpp>
#include <kodo/tasking/units/reduction_ops.hpp>
#include <kodo/tasking/units/unit_ref.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <source_location>
#include <utility>

namespace kodo {

/// What the runtime hands a unit's constructor: the unit's place in its collection.
template <class U>
struct UnitInit {
  Extent3 shape;  ///< the collection's shape
  Index3 index;   ///< the unit's index in it

 private:
  friend class Collection<U>;
  friend class WorkUnit<U>;
  friend struct detail::MigrationAccess;
  UnitInit(Runtime* runtime, std::uint32_t collection, Extent3 shape, Index3 index)
      : shape(shape), index(index), runtime_(runtime), collection_(collection) {}
  Runtime* runtime_;
  std::uint32_t collection_;
};

/// Base class of work units: a unit's index, its collection, and what it may ask of the
/// runtime it runs on.
template <class Derived>
class WorkUnit {
 public:
  /// A unit's constructor passes on the UnitInit it was given.
  explicit WorkUnit(const UnitInit<Derived>& init)
      : collection_(init.runtime_, init.collection_, init.shape), index_(init.index) {}

  /// This unit's index in its collection.
  const Index3& index() const { return index_; }
  /// This unit's place among its rank's units of the collection (0, 1, ... in index
  /// order), valid from its constructor on until units move: to pick a stream of the
  /// rank's pool, so that a rank's units take turns wherever they came from.
  std::int64_t local_slot() const {
    auto& store = collection_.store();
    return store.slot_of(store.shape().linear(index_));
  }
  /// The rank that holds this unit now (another one once the unit has moved).
  int rank() const { return runtime().rank(); }
  /// The collection this unit belongs to.
  const Collection<Derived>& collection() const { return collection_; }
  /// Another unit of this collection, for invoking its entry methods.
  UnitRef<Derived> unit(const Index3& index) const { return collection_[index]; }

  /// The rank's streams (compute and communication; units share them round-robin).
  StreamPool& streams() const { return runtime().streams(); }
  /// Runs `continuation` from the scheduler loop once the work enqueued on `source` so
  /// far is done; the rank never waits for it.
  void when_done(CompletionSource& source, std::function<void()> continuation) const {
    runtime().when_done(source, std::move(continuation));
  }
  /// Awaited in a task (co_await when_done(stream)): the work enqueued on `source` so far.
  auto when_done(CompletionSource& source,
                 std::source_location where = std::source_location::current()) const {
    return detail::Awaitable<detail::DeviceWorkDone>({&runtime(), &source, where});
  }

  /// Launches `batch`'s kernels at the end of the scheduler's turn, each as one kernel
  /// with the same kernels of the rank's other units' batches (kernel_batch.hpp), then
  /// runs `then` from the scheduler loop. Awaited in a task: co_await launch(batch).
  ///@{
  void launch(KernelBatch& batch, std::function<void()> then) const {
    runtime().launch(batch, std::move(then));
  }
  auto launch(KernelBatch& batch,
              std::source_location where = std::source_location::current()) const {
    return detail::Awaitable<detail::BatchLaunched>({&runtime(), &batch, where});
  }
  ///@}

  /// This unit's end of a channel with unit `peer` of the same collection (channel.hpp);
  /// `port` tells apart several links between the same two units. Local copies and
  /// staging copies run on `stream`, and a send waits for the work enqueued there.
  /// `port` is below 2^29: ports from 2^29 up are the runtime's (neighbour channels, and
  /// from 2^30 step programs').
  Channel open_channel(Stream& stream, const Index3& peer, CommMode mode = CommMode::device,
                       int port = 0) const;
  /// The 0.1 argument order, kept for one release (CHANGELOG, "Deprecated").
  [[deprecated("kodo 0.2 takes the stream first: open_channel(stream, peer, mode, port)")]]
  Channel open_channel(const Index3& peer, Stream& stream, CommMode mode = CommMode::device,
                       int port = 0) const {
    return open_channel(stream, peer, mode, port);
  }

  /// The unit one step in `direction` on the collection's grid, wrapping around the
  /// `periodic` dimensions; nullopt where the step leaves the grid (neighbours.hpp).
  std::optional<Index3> neighbour(Direction direction, Periodic periodic = {}) const {
    return neighbour_index(collection_.shape(), index_, direction, periodic);
  }
  /// A channel with that neighbour, whose other end is the neighbour's channel in the
  /// opposite direction (what one sends toward `direction` arrives there); the runtime
  /// chooses the ports, so coinciding neighbours get distinct links and a unit that is its
  /// own neighbour gets a loopback link (neighbours.hpp). Throws kodo::Error when there is
  /// no neighbour in `direction`.
  Channel open_neighbour_channel(Stream& stream, Direction direction, Periodic periodic = {},
                                 CommMode mode = CommMode::device) const;

  /// States this unit's load for the balancers (balance.hpp), in any unit that is the
  /// same for every unit of the collection (seconds, cells, atoms): it replaces the time
  /// (host or device) the runtime measures in the unit's calls, and holds until stated
  /// again, across moves.
  void set_load(double load) const;

  /// Measures this unit's load, while its collection's loads are measured (measure_loads,
  /// balance.hpp) and the unit states none (set_load wins), as `stream`'s elapsed time from
  /// the start of each of its entry methods and task resumes to the end of the work the call
  /// enqueued there (two timing events per call; it includes idle gaps and what the stream
  /// waited for), instead of the calls' host time, which on a GPU is the time to launch.
  /// Called by the constructor, as the unit is rebuilt where it moves. On the host backend
  /// the work runs inside the calls: the host time is kept.
  void measure_device_load(Stream& stream) const;

  /// Contributes `value` to this unit's next reduction round. When every unit of the
  /// collection has contributed to the round, the values combined with Op are delivered
  /// to entry method Target (taking T, or T and the round's std::uint64_t number) of every
  /// unit, then to the main program of every rank (Collection::on_reduced and reduced). All units
  /// of a round must use the same T, Op and Target. Op is a type: a default-constructed Op combines
  /// the values. T is trivially copyable (Sum, Min and Max combine a std::array element by
  /// element), or a std::vector<E>: a runtime-length array, combined element by element with Op on
  /// E, and delivered as std::vector<E>; the vectors of one round must have one length, or the job
  /// ends with "a reduction of mismatched shapes". A round 65,536 or more ahead of the oldest one
  /// its rank has not delivered ends the job (a bound on what a rank holds).
  template <auto Target, detail::ReductionValueType T, class Op = Sum>
  void contribute(const T& value, Op = {}) {
    contribute_to_round<detail::Reducer<Derived, T, Op, Target>>(
        next_round_++, detail::ReductionValue<T>::bytes(value));
  }
  /// The same with the result for the main program only.
  template <detail::ReductionValueType T, class Op = Sum>
  void contribute(const T& value, Op op = {}) {
    contribute<nullptr>(value, op);
  }
  /// Contributes to a round of the named reduction Name (a kodo::Reduction type,
  /// reduction_ops.hpp), with or without a Target.
  ///@{
  template <auto Target, detail::NamedReduction Name>
  void contribute(const typename Name::value_type& value) {
    using R =
        detail::Reducer<Derived, typename Name::value_type, typename Name::operation, Target, Name>;
    contribute_to_round<R>(next_round_++,
                           detail::ReductionValue<typename Name::value_type>::bytes(value));
  }
  template <detail::NamedReduction Name>
  void contribute(const typename Name::value_type& value) {
    contribute<nullptr, Name>(value);
  }
  ///@}

  /// Awaited in a task: contributes `value` to this unit's next round, as contribute()
  /// does, and gives the round's result with its number (kodo::Reduced) once every unit
  /// has contributed; the main program gets it too. All units of a round contribute the
  /// same way (all_reduce, or contribute with one Target).
  template <detail::ReductionValueType T, class Op = Sum>
  auto all_reduce(const T& value, Op = {},
                  std::source_location where = std::source_location::current()) {
    return detail::Awaitable<AllReduce<T, Op>>({this, value, where});
  }
  /// The same for a round of the named reduction Name (reduction_ops.hpp).
  template <detail::NamedReduction Name>
  auto all_reduce(const typename Name::value_type& value,
                  std::source_location where = std::source_location::current()) {
    using T = typename Name::value_type;
    return detail::Awaitable<AllReduce<T, typename Name::operation, Name>>({this, value, where});
  }

  /// Awaited in a task: a balance point of the unit's collection, where the task ends.
  /// Once every unit's task has reached it and the whole job is quiet, inside run(), the
  /// collection is balanced as the main program chose (kodo::balance_points, balance.hpp),
  /// and entry method M is called with `args` on every unit, wherever it now is. If any
  /// unit moved, every unit was rebuilt and restored from its state() (migration.hpp);
  /// otherwise every unit kept all its members: M goes on in both cases, from members
  /// state() names and from `args`, as the task's locals are gone. Every unit of the
  /// collection awaits the point in the same phase. Code after the co_await never runs. In
  /// a unit type that is a class template: this->template balance_point<&U::m>(...).
  template <auto M, class... A>
  auto balance_point(A&&... args);

  /// Contributes the contents of a device (or host) view to this unit's next round,
  /// once the work enqueued on `stream` so far is done: no fence is needed. A rank-0
  /// view of E contributes an E, a rank-1 view a std::vector<E> (above). The view must
  /// be contiguous; the runtime keeps it, copies it on `stream` into pinned host memory
  /// and contributes the copy from the scheduler loop. The round is this call's, in
  /// call order, whenever the copy completes.
  template <auto Target, class V, class Op = Sum>
    requires Kokkos::is_view<V>::value
  void contribute(Stream& stream, const V& view, Op = {}) {
    contribute_view<Target, Op>(stream, view);
  }
  /// The same with the result for the main program only.
  template <class V, class Op = Sum>
    requires Kokkos::is_view<V>::value
  void contribute(Stream& stream, const V& view, Op op = {}) {
    contribute<nullptr>(stream, view, op);
  }

 protected:
  ~WorkUnit() = default;

 private:
  Runtime& runtime() const { return collection_.runtime(); }

  template <class R>
  void contribute_to_round(std::uint64_t round, Bytes value) {
    auto& store = collection_.store();
    runtime().contribute(store, store.slot_of(store.shape().linear(index_)), round, R::id,
                         std::move(value));
  }

  // The unit's contribution of a view's contents (contribute(stream, view) above).
  template <auto Target, class Op, class V>
  void contribute_view(Stream& stream, const V& view);
  void start_task(Task task);

  // What all_reduce and balance_point await (work_unit_impl.hpp).
  template <class T, class Op, class Name = void>
  struct AllReduce;
  struct BalancePoint;
  template <class U>
  friend detail::AwaitedRounds& detail::awaited_rounds(U& unit);
  template <class U>
  friend void detail::start_unit_task(U& unit, Task task);
  friend struct detail::MigrationAccess;

  Collection<Derived> collection_;
  Index3 index_;
  std::uint64_t next_round_ = 0;
  detail::AwaitedRounds awaited_rounds_;
};

}  // namespace kodo

// The bodies of the members above (after WorkUnit: they define its members).
#include <kodo/tasking/units/detail/work_unit_impl.hpp>
