#pragma once
// Handlers: how an entry method is called with arguments kept as objects or rebuilt
// from bytes, and how a reduction's values are combined and delivered. Each is
// registered once per program under a stable id, with its unit type (registry.hpp).

#include "../comm/serialize.hpp"
#include "../comm/wire.hpp"
#include "collection_base.hpp"
#include "registry.hpp"

#include <cstring>
#include <memory>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <utility>

namespace kodo::detail {

// How a call from another rank is rebuilt from its serialized arguments (views taken
// from the pool, their memory listed for the transport to fill; see WireAccess), and
// how its arguments are checked first, all of them, without making any view.
struct EntryHandler {
  void (*check)(ByteReader& arguments);
  std::unique_ptr<Call> (*receive)(ByteReader& arguments);
};

// How a reducer's values are combined and handed to the units; registered per
// (unit type, value type, operation, target entry method).
struct ReducerHandler {
  std::size_t value_size;
  void (*combine)(Bytes& accumulator, const Bytes& value);
  void (*deliver)(CollectionBase& collection, const Bytes& result);
};

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

// Entry method M of unit type U (M may be declared in a base of U).
template <class U, auto M>
struct Entry {
  using Traits = MemberTraits<decltype(M)>;
  using Unit = U;
  using Arguments = typename Traits::arguments;
  static_assert(std::is_base_of_v<typename Traits::unit_type, U>,
                "kodo: the entry method is not a member of this unit type");

  // The unit as the class that declares M (adjusting the address for a base class).
  static typename Traits::unit_type* as_declaring(Unit* unit) { return unit; }

  // The arguments, converted to the parameter types and kept.
  class Kept final : public Call {
   public:
    template <class... A>
    explicit Kept(A&&... args) : args_(std::forward<A>(args)...) {}
    explicit Kept(Arguments&& args) : args_(std::move(args)) {}
    void invoke(void* unit) override {
      std::apply(
          [unit](auto&... a) { (as_declaring(static_cast<Unit*>(unit))->*M)(std::move(a)...); },
          args_);
    }

   private:
    Arguments args_;
  };

  // A call from another rank: its arguments unpacked, its views made (see WireAccess).
  static std::unique_ptr<Call> receive(ByteReader& reader) {
    return std::make_unique<Kept>(
        unpack_all(reader, std::make_index_sequence<std::tuple_size_v<Arguments>>{}));
  }
  // The same, from a reader in a check pass: nothing is kept.
  static void check(ByteReader& reader) {
    unpack_all(reader, std::make_index_sequence<std::tuple_size_v<Arguments>>{});
  }
  template <std::size_t... I>
  static Arguments unpack_all(ByteReader& reader, std::index_sequence<I...>) {
    // Braced initialisation unpacks the arguments left to right.
    Arguments args{unpack<std::tuple_element_t<I, Arguments>>(reader)...};
    if (reader.remaining() != 0)
      throw Error(cat("a call's arguments are ", reader.remaining(),
                      " bytes longer than the parameters of ", handler_name(id)));
    return args;
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
    m.payload = WireAccess::take_bytes(w);
    m.attachments = WireAccess::take_attachments(w);
  }

  static constexpr EntryHandler handler{&check, &receive};
  static inline const HandlerId id = register_handler(instantiation_name<EntryTag<U, M>>(),
                                                      HandlerKind::entry, typeid(U), &handler);
};

template <class U, class T, class Op, auto Target>
struct ReducerTag {};

// Combines values of type T with Op and delivers the result to entry method Target of
// every unit. Combination order is fixed (a rank's units by index, then its children
// in the tree), so a given decomposition always produces the same bits.
template <class U, class T, class Op, auto Target>
struct Reducer {
  static_assert(std::is_trivially_copyable_v<T>,
                "kodo: reduction values must be trivially copyable");
  static_assert(!not_every_pattern_v<T>,
                "kodo: reduction values cannot be bool or unscoped enums, which not every byte "
                "pattern is (reduce an integer: Min or Max of 0/1 for all/any)");
  static_assert(std::is_base_of_v<typename MemberTraits<decltype(Target)>::unit_type, U>,
                "kodo: the reduction target is not a member of this unit type");
  using Unit = U;

  // Sizes are checked when a value arrives (ReductionTree).
  static T load(const Bytes& b) {
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
  static constexpr ReducerHandler handler{sizeof(T), &combine, &deliver};
  static inline const HandlerId id =
      register_handler(instantiation_name<ReducerTag<U, T, Op, Target>>(), HandlerKind::reducer,
                       typeid(U), &handler);
};

}  // namespace kodo::detail
