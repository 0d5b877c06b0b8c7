#pragma once
// Collections of work units and asynchronous entry-method invocation.
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
// device memory stays on the device); for a unit on another rank, the receiving
// runtime allocates a view of the same type and UCX moves the data into it from the
// sender's view (device to device where the memory is on a GPU), by rendezvous, and
// the entry method runs once it has landed. Either way the sender must not write a
// view it has sent until its protocol knows the receiver has it, and device work that
// fills a view must be complete before the view is sent (Runtime::when_done). For
// repeated transfers between the same units into memory the receiver chose in
// advance, use a Channel (channel.hpp).

#include "registry.hpp"
#include "runtime.hpp"
#include "serialize.hpp"

#include <cstring>
#include <tuple>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

namespace kodo {

template <class U>
class Collection;

namespace detail {

template <class F>
struct MemberTraits;
template <class U, class R, class... A>
struct MemberTraits<R (U::*)(A...)> {
  using unit_type = U;
  using arguments = std::tuple<std::decay_t<A>...>;
};
template <class U, class R, class... A>
struct MemberTraits<R (U::*)(A...) noexcept> : MemberTraits<R (U::*)(A...)> {};

template <class U, auto M>
struct EntryTag {};

// Entry method M of unit type U (M may be declared in a base of U), registered at
// start-up, in every process, under a stable id.
template <class U, auto M>
struct Entry {
  using Traits = MemberTraits<decltype(M)>;
  using Unit = U;
  using Arguments = typename Traits::arguments;
  static_assert(std::is_base_of_v<typename Traits::unit_type, U>,
                "kodo: the entry method is not a member of this unit type");

  // The unit as the class that declares M (adjusting the address for a base class).
  static typename Traits::unit_type* as_declaring(Unit* unit) { return unit; }

  // A same-rank invocation: the arguments converted to the parameter types and kept.
  class Call final : public LocalCall {
   public:
    template <class... A>
    explicit Call(A&&... args) : args_(std::forward<A>(args)...) {}
    explicit Call(Arguments&& args) : args_(std::move(args)) {}
    void invoke(void* unit) override {
      std::apply([unit](auto&... a) { (as_declaring(static_cast<Unit*>(unit))->*M)(std::move(a)...); },
                 args_);
    }

   private:
    Arguments args_;
  };

  // A call from another rank: its arguments unpacked, the memory of its views
  // allocated and listed in `destinations` for the transport to fill.
  static std::unique_ptr<LocalCall> receive(ByteReader& reader) {
    return receive_as(reader, std::make_index_sequence<std::tuple_size_v<Arguments>>{});
  }
  template <std::size_t... I>
  static std::unique_ptr<LocalCall> receive_as(ByteReader& reader, std::index_sequence<I...>) {
    // Braced initialisation unpacks the arguments left to right.
    Arguments args{unpack<std::tuple_element_t<I, Arguments>>(reader)...};
    if (reader.remaining() != 0)
      throw std::runtime_error("kodo: message payload is longer than the arguments of " +
                               handler_name(id));
    return std::make_unique<Call>(std::move(args));
  }

  // Fills `m` with the serialized arguments and their views' memory.
  template <class... A>
  static void serialize(Message& m, A&&... args) {
    static_assert(sizeof...(A) == std::tuple_size_v<Arguments>,
                  "kodo: wrong number of arguments for this entry method");
    serialize_as(m, std::make_index_sequence<sizeof...(A)>{}, std::forward<A>(args)...);
  }
  template <std::size_t... I, class... A>
  static void serialize_as(Message& m, std::index_sequence<I...>, A&&... args) {
    ByteWriter w;
    (pack<std::tuple_element_t<I, Arguments>>(
         w, std::tuple_element_t<I, Arguments>(std::forward<A>(args))),
     ...);
    m.payload = w.take();
    m.attachments = w.take_attachments();
  }

  static constexpr EntryHandler handler{&receive};
  static inline const HandlerId id =
      register_handler(instantiation_name<EntryTag<U, M>>(), &handler);
};

}  // namespace detail

// Reduction operations. Any default-constructible functor T(T, T) works as well.
struct Sum {
  template <class T>
  T operator()(const T& a, const T& b) const { return a + b; }
};
struct Min {
  template <class T>
  T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
struct Max {
  template <class T>
  T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};

namespace detail {

template <class U, class T, class Op, auto Target>
struct ReducerTag {};

// Combines values of type T with Op and delivers the result to entry method Target of
// every unit. Combination order is fixed (a rank's units by index, then its children
// in the tree), so a given decomposition always produces the same bits.
template <class U, class T, class Op, auto Target>
struct Reducer {
  static_assert(std::is_trivially_copyable_v<T>, "kodo: reduction values must be trivially copyable");
  static_assert(std::is_base_of_v<typename MemberTraits<decltype(Target)>::unit_type, U>,
                "kodo: the reduction target is not a member of this unit type");
  using Unit = U;

  static T load(const Bytes& b) {
    if (b.size() != sizeof(T))
      throw std::runtime_error("kodo: a reduction value has the wrong size for its type");
    T v;
    std::memcpy(&v, b.data(), sizeof(T));
    return v;
  }
  static void combine(Bytes& accumulator, const Bytes& value) {
    const T r = Op{}(load(accumulator), load(value));
    std::memcpy(accumulator.data(), &r, sizeof(T));
  }
  static void deliver(CollectionBase& collection, const Bytes& result) {
    const T value = load(result);
    for (std::int64_t s = 0; s < collection.local_count(); ++s)
      (static_cast<Unit*>(collection.unit_at(s))->*Target)(value);
  }
  static constexpr ReducerHandler handler{&combine, &deliver};
  static inline const HandlerId id =
      register_handler(instantiation_name<ReducerTag<U, T, Op, Target>>(), &handler);
};

template <class U>
class CollectionStore final : public CollectionBase {
 public:
  using CollectionBase::CollectionBase;
  void* unit_at(std::int64_t slot) override { return units_[slot].get(); }
  std::vector<std::unique_ptr<U>>& units() { return units_; }

 private:
  std::vector<std::unique_ptr<U>> units_;
};

}  // namespace detail

// What the runtime hands a unit's constructor: the unit's place in its collection.
template <class U>
struct UnitInit {
  Runtime* runtime;
  std::uint32_t collection;
  Extent3 shape;
  Index3 index;
};

// A reference to one unit, local or remote, for invoking its entry methods.
template <class U>
class UnitRef {
 public:
  UnitRef(Runtime* runtime, std::uint32_t collection, Extent3 shape, Index3 index)
      : runtime_(runtime), collection_(collection), shape_(shape), index_(index) {
    if (!shape_.contains(index_)) {
      std::ostringstream os;
      os << "kodo: unit " << index_ << " is outside its collection of shape " << shape_;
      throw std::out_of_range(os.str());
    }
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
      m.local = std::make_unique<typename E::Call>(std::forward<A>(args)...);
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
  Collection(Runtime* runtime, std::uint32_t id, Extent3 shape)
      : runtime_(runtime), id_(id), shape_(shape) {}

  // Collective: every rank calls it, in the same order relative to other collections.
  // Builds this rank's units as U(UnitInit<U>, args...); `args` are passed by
  // reference to each local constructor (they are not sent anywhere).
  template <class... Args>
  static Collection create(Runtime& runtime, Extent3 shape, Args&&... args) {
    if (shape.x < 1 || shape.y < 1 || shape.z < 1) {
      std::ostringstream os;
      os << "kodo: a collection needs at least one unit in each dimension, not " << shape;
      throw Error(os.str());
    }
    const std::uint32_t id = runtime.next_collection_id();
    auto store = std::make_unique<detail::CollectionStore<U>>(runtime, id, shape);
    auto& units = store->units();
    const std::int64_t first = store->first_local(), count = store->local_count();
    // Registered before the units are built, so constructors can reach the collection
    // (owners of other units, channels); nothing is dispatched before run().
    runtime.add_collection(std::move(store));
    for (std::int64_t s = 0; s < count; ++s) {
      const UnitInit<U> init{&runtime, id, shape, shape.delinear(first + s)};
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
  std::uint32_t id() const { return id_; }
  std::int64_t size() const { return shape_.size(); }
  Runtime& runtime() const { return *runtime_; }
  // The rank that holds the unit at `index`.
  int owner(const Index3& index) const { return store().map().owner(shape_.linear(index)); }

  // Calls f(U&) for each unit held by this rank, in index order.
  template <class F>
  void for_each_local(F&& f) const {
    auto& s = store();
    for (auto& u : s.units()) f(*u);
  }

 private:
  detail::CollectionStore<U>& store() const {
    return static_cast<detail::CollectionStore<U>&>(runtime_->collection(id_));
  }

  Runtime* runtime_ = nullptr;
  std::uint32_t id_ = 0;
  Extent3 shape_;
};

// Base class of work units; gives a unit its index, its collection and reductions.
template <class Derived>
class WorkUnit {
 public:
  explicit WorkUnit(const UnitInit<Derived>& init)
      : collection_(init.runtime, init.collection, init.shape), index_(init.index) {}

  const Index3& index() const { return index_; }
  const Collection<Derived>& collection() const { return collection_; }
  // Another unit of this collection, for invoking its entry methods.
  UnitRef<Derived> unit(const Index3& index) const { return collection_[index]; }

  // Contributes `value` to this unit's next reduction round. When every unit of the
  // collection has contributed to the round, the values combined with Op are delivered
  // to entry method Target (taking T) of every unit. All units of a round must use the
  // same T, Op and Target. Op is a type: a default-constructed Op combines the values.
  template <auto Target, class T, class Op = Sum>
  void contribute(const T& value, Op = {}) {
    using R = detail::Reducer<Derived, T, Op, Target>;
    auto& base = collection_.runtime().collection(collection_.id());
    ByteWriter w;
    pack(w, value);
    base.runtime().contribute(base, base.slot_of(base.shape().linear(index_)), next_round_++,
                              R::id, w.take());
  }

 protected:
  ~WorkUnit() = default;

 private:
  Collection<Derived> collection_;
  Index3 index_;
  std::uint64_t next_round_ = 0;
};

}  // namespace kodo
