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
// The views of a call travel with it when they take at most KODO_EAGER_BYTES in all
// (default 8 KiB; into device memory through pinned host memory and a copy on a
// communication stream), otherwise by rendezvous, straight from the sender's view
// (device to device where the memory is on a GPU).
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

#include "../comm/channel.hpp"
#include "../core/numeric.hpp"
#include "collection_base.hpp"
#include "entry.hpp"
#include "runtime.hpp"

#include <memory>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

namespace kodo {

// Reduction operations. Any default-constructible functor T(T, T) works as well.
struct Sum {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a + b;
  }
};
struct Min {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return b < a ? b : a;
  }
};
struct Max {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a < b ? b : a;
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
  // to entry method Target (taking T) of every unit. All units of a round must use the
  // same T, Op and Target. Op is a type: a default-constructed Op combines the values.
  template <auto Target, class T, class Op = Sum>
  void contribute(const T& value, Op = {}) {
    using R = detail::Reducer<Derived, T, Op, Target>;
    auto& store = collection_.store();
    Bytes bytes(sizeof(T));
    std::memcpy(bytes.data(), &value, sizeof(T));
    runtime().contribute(store, store.slot_of(store.shape().linear(index_)), next_round_++, R::id,
                         std::move(bytes));
  }

 protected:
  ~WorkUnit() = default;

 private:
  Runtime& runtime() const { return collection_.runtime(); }

  Collection<Derived> collection_;
  Index3 index_;
  std::uint64_t next_round_ = 0;
};

}  // namespace kodo
