#pragma once
// Collections of work units, asynchronous entry-method invocation, and what a unit can
// ask of the runtime (streams, device completions, channels, reductions).
//
//   struct Block : kodo::WorkUnit<Block> {
//     Block(const kodo::UnitInit<Block>& init, double scale) : WorkUnit(init) { ... }
//     void receive(int step, Kokkos::View<double*> face);   // an entry method
//   };
//   auto blocks = kodo::Collection<Block>::create(runtime, {4, 2, 2}, 0.5);
//   blocks[{1, 0, 1}].send<&Block::receive>(3, face);       // local or remote alike
//   runtime.run();                                          // until the job is quiet
//
// Entry methods are ordinary member functions. An invocation runs later, on the rank
// that holds the unit. Its arguments are copied when the call is made, except views,
// which are handed over: a unit on the same rank receives the very same view (no copy,
// device memory stays on the device). For a unit on another rank, the receiving
// runtime takes a view of the same type from its pool of reused allocations
// (comm/view_pool.hpp) and the data lands in it; the entry method runs once it has.
// Host views of a call travel with it when they take at most KODO_EAGER_BYTES in all
// (default 8 KiB); device views, and larger ones, by rendezvous, straight from the
// sender's view into the pooled one (device to device where the memory is on a GPU).
//
// Views and their owners:
// - The sender may drop its copy of a view at once (kodo keeps the view until it has
//   been sent), but must not write the view until its protocol knows the receiver has
//   the data (on the same rank the receiver holds the very view, so: until the receiver
//   is done with it). Device work that fills a view must be complete before the view is
//   sent (when_done).
// - A view an entry method receives is its own until every copy of it is dropped: it
//   may keep one (as a member, say) as long as it likes, and no other call's data lands
//   in that memory meanwhile. Once the last copy is gone the memory returns to the pool,
//   and a later call may land in it.
// - Device work launched on a received view does not hold it (a kernel keeps no
//   reference once launched): keep a copy until that work is done, e.g. by capturing
//   the view in the when_done continuation that follows the work.
//
// For repeated transfers between the same units into memory the receiver chose in
// advance, use a Channel (open_channel).

#include <kodo/comm/channel.hpp>
#include <kodo/core/numeric.hpp>
#include <kodo/tasking/collection_base.hpp>
#include <kodo/tasking/entry.hpp>
#include <kodo/tasking/runtime.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace kodo {

// Reduction operations; on a std::array they work element by element. Any
// default-constructible functor T(T, T) works as well (E(E, E) for std::vector<E>).
namespace detail {
template <class Op, class T, std::size_t N>
std::array<T, N> elementwise(const std::array<T, N>& a, const std::array<T, N>& b) {
  std::array<T, N> r;
  for (std::size_t i = 0; i < N; ++i) r[i] = Op{}(a[i], b[i]);
  return r;
}
}  // namespace detail
struct Sum {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a + b;
  }
  template <class T, std::size_t N>
  std::array<T, N> operator()(const std::array<T, N>& a, const std::array<T, N>& b) const {
    return detail::elementwise<Sum>(a, b);
  }
};
struct Min {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return b < a ? b : a;
  }
  template <class T, std::size_t N>
  std::array<T, N> operator()(const std::array<T, N>& a, const std::array<T, N>& b) const {
    return detail::elementwise<Min>(a, b);
  }
};
struct Max {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a < b ? b : a;
  }
  template <class T, std::size_t N>
  std::array<T, N> operator()(const std::array<T, N>& a, const std::array<T, N>& b) const {
    return detail::elementwise<Max>(a, b);
  }
};

namespace detail {
template <class U>
class CollectionStore final : public CollectionBase {
 public:
  CollectionStore(std::uint32_t id, Extent3 shape, int rank, int ranks)
      : CollectionBase(id, shape, rank, ranks, typeid(U)) {}
  void* unit_at(std::int64_t slot) override { return units_[static_cast<std::size_t>(slot)].get(); }
  std::vector<std::unique_ptr<U>>& units() { return units_; }

 private:
  std::vector<std::unique_ptr<U>> units_;
};
}  // namespace detail

// What the runtime hands a unit's constructor: the unit's place in its collection.
template <class U>
struct UnitInit {
  Extent3 shape;
  Index3 index;

 private:
  friend class Collection<U>;
  friend class WorkUnit<U>;
  UnitInit(Runtime* runtime, std::uint32_t collection, Extent3 shape, Index3 index)
      : shape(shape), index(index), runtime_(runtime), collection_(collection) {}
  Runtime* runtime_;
  std::uint32_t collection_;
};

// A reference to one unit, local or remote, for invoking its entry methods.
template <class U>
class UnitRef {
 public:
  UnitRef(Runtime* runtime, std::uint32_t collection, Extent3 shape, Index3 index)
      : runtime_(runtime), collection_(collection), shape_(shape), index_(index) {
    if (!shape_.contains(index_))
      throw Error(detail::cat("unit ", index_, " is outside its collection of shape ", shape_));
  }

  // Invokes entry method M on the unit with `args` (copied now, run later).
  template <auto M, class... A>
  void send(A&&... args) const {
    using E = detail::Entry<U, M>;
    static_assert(sizeof...(A) == std::tuple_size_v<typename E::Arguments>,
                  "kodo: wrong number of arguments for this entry method");
    const std::int64_t linear = shape_.linear(index_);
    const int owner = runtime_->collection(collection_).map().owner(linear);
    detail::Message m;
    m.header = {detail::MessageKind::invoke, collection_, E::id, linear, runtime_->rank()};
    if (owner == runtime_->rank())
      m.local = std::make_unique<typename E::Kept>(std::forward<A>(args)...);
    else
      E::serialize(m, std::forward<A>(args)...);
    runtime_->post(owner, std::move(m));
  }

  Index3 index() const { return index_; }

 private:
  Runtime* runtime_;
  std::uint32_t collection_;
  Extent3 shape_;
  Index3 index_;
};

// A handle to a collection of units of type U, cheap to copy; units keep one to reach
// their neighbours.
template <class U>
class Collection {
 public:
  Collection() = default;

  // Collective: every rank calls it, in the same order relative to other collections.
  // Builds this rank's units as U(UnitInit<U>, args...); `args` are passed by
  // reference to each local constructor (they are not sent anywhere).
  template <class... Args>
  static Collection create(Runtime& runtime, Extent3 shape, Args&&... args) {
    const auto xy = detail::checked_mul(static_cast<std::uint64_t>(shape.x),
                                        static_cast<std::uint64_t>(shape.y));
    const auto xyz = xy ? detail::checked_mul(*xy, static_cast<std::uint64_t>(shape.z)) : xy;
    if (shape.x < 1 || shape.y < 1 || shape.z < 1 || !xyz || *xyz > std::uint64_t{1} << 62)
      throw Error(detail::cat(
          "a collection needs at least one unit in each dimension and at most 2^62 in all, not ",
          shape));
    const std::uint32_t id = runtime.collection_count();
    auto store =
        std::make_unique<detail::CollectionStore<U>>(id, shape, runtime.rank(), runtime.size());
    auto& units = store->units();
    const std::int64_t first = store->first_local(), count = store->local_count();
    // Registered before the units are built, so constructors can reach the collection
    // (owners of other units, channels); nothing is dispatched before run().
    runtime.add_collection(std::move(store));
    for (std::int64_t s = 0; s < count; ++s) {
      const UnitInit<U> init(&runtime, id, shape, shape.delinear(first + s));
      units.push_back(std::make_unique<U>(init, args...));
    }
    return Collection(&runtime, id, shape);
  }

  UnitRef<U> operator[](const Index3& index) const { return {runtime_, id_, shape_, index}; }

  // Invokes entry method M on every unit of the collection. Called by one rank (or
  // one unit); every unit then runs M once.
  template <auto M, class... A>
  void broadcast(const A&... args) const {
    for (std::int64_t l = 0; l < shape_.size(); ++l)
      (*this)[shape_.delinear(l)].template send<M>(args...);
  }

  // Invokes entry method M on the units this rank holds. Called by every rank (the
  // SPMD main program), it reaches every unit once without any message between ranks.
  template <auto M, class... A>
  void broadcast_local(const A&... args) const {
    const auto& s = store();
    for (std::int64_t slot = 0; slot < s.local_count(); ++slot)
      (*this)[shape_.delinear(s.first_local() + slot)].template send<M>(args...);
  }

  const Extent3& shape() const { return shape_; }
  std::int64_t size() const { return shape_.size(); }
  // The collection's number: the n-th created by the program has id n on every rank.
  std::uint32_t id() const { return id_; }
  Runtime& runtime() const { return *runtime_; }
  // The rank that holds the unit at `index`.
  int owner(const Index3& index) const { return store().map().owner(shape_.linear(index)); }

  // Calls f(U&) for each unit held by this rank, in index order.
  template <class F>
  void for_each_local(F&& f) const {
    for (auto& u : store().units()) f(*u);
  }

  // Reduction results for the main program. R is the result type: the T contributed,
  // std::vector<E> for a std::vector<E> or rank-1 view of E, E for a rank-0 view of E.
  // Every rank's main program calls on_reduced before run(): `callback(round, result)`,
  // a void(std::uint64_t, const R&), then runs on this rank once per completed round of
  // this collection (rounds count from 0), from the scheduler loop, in round order, after
  // the units' target; a round whose results are not of type R ends the job naming both
  // types.
  template <class R, class F>
  void on_reduced(F callback) const {
    static_assert(detail::ReductionValueType<R>, "kodo: R is not a reduction result type");
    static_assert(std::is_invocable_v<F&, std::uint64_t, const R&>,
                  "kodo: on_reduced<R> takes a callback void(std::uint64_t round, const R&)");
    runtime_->on_reduced(store(), typeid(R),
                         [f = std::move(callback)](std::uint64_t round,
                                                   const Bytes& bytes) mutable {
                           f(round, detail::ReductionValue<R>::load(bytes));
                         });
  }
  // The result of the latest round of this collection completed on this rank (run()
  // leaves it behind). Throws kodo::Error when no round has completed, or when its
  // results are not of type R.
  template <class R>
  R reduced() const {
    static_assert(detail::ReductionValueType<R>, "kodo: R is not a reduction result type");
    return detail::ReductionValue<R>::load(runtime_->reduced(store(), typeid(R)));
  }

 private:
  friend class WorkUnit<U>;
  Collection(Runtime* runtime, std::uint32_t id, Extent3 shape)
      : runtime_(runtime), id_(id), shape_(shape) {}
  detail::CollectionStore<U>& store() const {
    return static_cast<detail::CollectionStore<U>&>(runtime_->collection(id_));
  }

  Runtime* runtime_ = nullptr;
  std::uint32_t id_ = 0;
  Extent3 shape_;
};

// Base class of work units: a unit's index, its collection, and what it may ask of the
// runtime it runs on.
template <class Derived>
class WorkUnit {
 public:
  explicit WorkUnit(const UnitInit<Derived>& init)
      : collection_(init.runtime_, init.collection_, init.shape), index_(init.index) {}

  const Index3& index() const { return index_; }
  const Collection<Derived>& collection() const { return collection_; }
  // Another unit of this collection, for invoking its entry methods.
  UnitRef<Derived> unit(const Index3& index) const { return collection_[index]; }

  // The rank's streams (compute and communication; units share them round-robin).
  StreamPool& streams() const { return runtime().streams(); }
  // Runs `continuation` from the scheduler loop once the work enqueued on `source` so
  // far is done; the rank never waits for it.
  void when_done(CompletionSource& source, std::function<void()> continuation) const {
    runtime().when_done(source, std::move(continuation));
  }

  // This unit's end of a channel with unit `peer` of the same collection (channel.hpp);
  // `port` tells apart several links between the same two units. Local copies and
  // staging copies run on `stream`, and a send waits for the work enqueued there.
  Channel open_channel(const Index3& peer, Stream& stream, CommMode mode = CommMode::device,
                       int port = 0) const {
    const int peer_rank = collection_.shape().contains(peer) ? collection_.owner(peer) : -1;
    return Channel(runtime().channel_host(),
                   detail::LinkSpec{collection_.id(), collection_.shape(), index_, peer, peer_rank,
                                    port, &stream, mode});
  }

  // Contributes `value` to this unit's next reduction round. When every unit of the
  // collection has contributed to the round, the values combined with Op are delivered
  // to entry method Target (taking T) of every unit, then to the main program of every
  // rank (Collection::on_reduced and reduced). All units of a round must use the same T,
  // Op and Target. Op is a type: a default-constructed Op combines the values. T is
  // trivially copyable (Sum, Min and Max combine a std::array element by element), or
  // a std::vector<E>: a runtime-length array, combined element by element with Op on E,
  // and delivered as std::vector<E>; the vectors of one round must have one length, or
  // the job ends with "a reduction of mismatched shapes".
  template <auto Target, detail::ReductionValueType T, class Op = Sum>
  void contribute(const T& value, Op = {}) {
    contribute_to_round<detail::Reducer<Derived, T, Op, Target>>(
        next_round_++, detail::ReductionValue<T>::bytes(value));
  }
  // The same with the result for the main program only.
  template <detail::ReductionValueType T, class Op = Sum>
  void contribute(const T& value, Op op = {}) {
    contribute<nullptr>(value, op);
  }

  // Contributes the contents of a device (or host) view to this unit's next round,
  // once the work enqueued on `stream` so far is done: no fence is needed. A rank-0
  // view of E contributes an E, a rank-1 view a std::vector<E> (above). The view must
  // be contiguous; the runtime keeps it, copies it on `stream` into pinned host memory
  // and contributes the copy from the scheduler loop. The round is this call's, in
  // call order, whenever the copy completes.
  template <auto Target, class V, class Op = Sum>
    requires Kokkos::is_view<V>::value
  void contribute(Stream& stream, const V& view, Op = {}) {
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
    Kokkos::deep_copy(stream.space(),
                      Kokkos::View<E*, Kokkos::LayoutRight, Kokkos::SharedHostPinnedSpace,
                                   Unmanaged>(reinterpret_cast<E*>(staging.data()), count),
                      Kokkos::View<const E*, Kokkos::LayoutRight, typename V::memory_space,
                                   Unmanaged>(view.data(), count));
    // The view and the staging buffer stay alive until the copy is done.
    when_done(stream, [this, view, staging, bytes, round] {
      Bytes value(bytes);
      if (bytes) std::memcpy(value.data(), staging.data(), bytes);
      contribute_to_round<R>(round, std::move(value));
    });
  }
  // The same with the result for the main program only.
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

  Collection<Derived> collection_;
  Index3 index_;
  std::uint64_t next_round_ = 0;
};

}  // namespace kodo
