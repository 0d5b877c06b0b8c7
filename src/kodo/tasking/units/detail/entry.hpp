// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Handlers: how an entry method is called with arguments kept as objects or rebuilt
// from bytes, and how a reduction's values are combined and delivered. Each is
// registered once per program under a stable id, with its unit type (registry.hpp).

#include <kodo/comm/detail/wire.hpp>
#include <kodo/comm/serialize.hpp>
#include <kodo/tasking/tasks/task.hpp>
#include <kodo/tasking/units/detail/collection_base.hpp>
#include <kodo/tasking/units/detail/registry.hpp>
#include <kodo/tasking/units/reduction_ops.hpp>

#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

namespace kodo::detail {

// How a call from another rank is rebuilt from its serialized arguments (views taken
// from the pool, their memory listed for the transport to fill; see WireAccess), and
// how its arguments are checked first, all of them, without making any view.
struct EntryHandler {
  void (*check)(ByteReader& arguments);
  std::unique_ptr<Call> (*receive)(ByteReader& arguments);
};

// How a reducer's values are combined and handed to the units; registered per
// (unit type, value type, operation, target entry method or none).
struct ReducerHandler {
  // Bytes of a value; of one element when the values are runtime-length arrays, which
  // take any whole number of elements (all of one round the same number).
  std::size_t value_size;
  bool runtime_length;
  // The type units and the main program receive (T, or std::vector<E> for a
  // runtime-length array of E), for Collection::on_reduced and reduced to check.
  const std::type_info* result_type;
  // The reduction's name (a kodo::Reduction type), or null.
  const std::type_info* name;
  // `accumulator` and `value` have the same size (the tree checks it).
  void (*combine)(Bytes& accumulator, const Bytes& value);
  // Calls the target entry method of every local unit (with the round where it takes
  // one), or resumes their tasks awaiting it (all_reduce); nothing without a target.
  void (*deliver)(CollectionBase& collection, std::uint64_t round, const Bytes& result);
};

template <class F>
struct MemberTraits;
template <class U, class R, class... A>
struct MemberTraits<R (U::*)(A...)> {
  using unit_type = U;
  using result = R;
  using arguments = std::tuple<std::decay_t<A>...>;
  static constexpr bool by_value = (!std::is_reference_v<A> && ...);
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
  static constexpr bool is_task = std::is_same_v<typename Traits::result, Task>;
  static_assert(!is_task || Traits::by_value,
                "kodo: an entry method that is a coroutine (returns kodo::Task) takes its "
                "parameters by value: a reference would outlive the call's arguments");

  // The unit as the class that declares M (adjusting the address for a base class).
  static typename Traits::unit_type* as_declaring(Unit* unit) { return unit; }

  // The arguments, converted to the parameter types and kept.
  class Kept final : public Call {
   public:
    template <class... A>
    explicit Kept(A&&... args) : args_(std::forward<A>(args)...) {}
    explicit Kept(Arguments&& args) : args_(std::move(args)) {}
    void invoke(void* unit) override {
      if constexpr (is_task) {  // the coroutine takes the arguments; the scheduler runs it
        start_unit_task(*static_cast<Unit*>(unit),
                        std::apply(
                            [unit](auto&... a) {
                              return (as_declaring(static_cast<Unit*>(unit))->*M)(std::move(a)...);
                            },
                            args_));
      } else {
        std::apply(
            [unit](auto&... a) { (as_declaring(static_cast<Unit*>(unit))->*M)(std::move(a)...); },
            args_);
      }
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

// A reduction value as bytes: a trivially copyable T (a scalar, a struct, a
// std::array) is one value, combined by Op as a whole; a std::vector<E> is a
// runtime-length array, combined element by element with Op on E.
template <class T>
struct ReductionValue {
  using element = T;
  static constexpr bool runtime_length = false;
  static constexpr std::size_t value_size = sizeof(T);
  static Bytes bytes(const T& value) {
    Bytes b(sizeof(T));
    std::memcpy(b.data(), &value, sizeof(T));
    return b;
  }
  // Sizes are checked when a value arrives (ReductionTree).
  static T load(const Bytes& b) {
    T v;
    std::memcpy(&v, b.data(), sizeof(T));
    return v;
  }
};
template <class E, class A>
struct ReductionValue<std::vector<E, A>> {
  using element = E;
  static constexpr bool runtime_length = true;
  static constexpr std::size_t value_size = sizeof(E);
  static Bytes bytes(const std::vector<E, A>& value) {
    Bytes b(value.size() * sizeof(E));
    if (!b.empty()) std::memcpy(b.data(), value.data(), b.size());
    return b;
  }
  // A whole number of elements (the tree checks it).
  static std::vector<E> load(const Bytes& b) {
    std::vector<E> v(b.size() / sizeof(E));
    if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(E));
    return v;
  }
};
// The scalar inside nested std::arrays, for the byte-pattern check.
template <class T>
struct InnermostElement {
  using type = T;
};
template <class T, std::size_t N>
struct InnermostElement<std::array<T, N>> : InnermostElement<T> {};

// What contribute() takes as a value.
template <class T>
concept ReductionValueType = std::is_trivially_copyable_v<typename ReductionValue<T>::element> &&
                             !std::is_pointer_v<T> && !NamedReduction<T>;

// The target of all_reduce's rounds: the unit's tasks awaiting them.
struct AwaitingTask {
  constexpr bool operator==(const AwaitingTask&) const = default;
};
inline constexpr AwaitingTask awaiting_task{};
template <auto Target>
inline constexpr bool targets_tasks =
    std::is_same_v<std::remove_cvref_t<decltype(Target)>, AwaitingTask>;

// Whether Target is an entry method that returns kodo::Task.
template <auto Target>
constexpr bool is_coroutine_target() {
  if constexpr (std::is_same_v<decltype(Target), std::nullptr_t> || targets_tasks<Target>)
    return false;
  else
    return std::is_same_v<typename MemberTraits<decltype(Target)>::result, Task>;
}

// Whether Target is an entry method of U (or nullptr: no target; or the unit's tasks).
template <class U, auto Target>
constexpr bool is_target_of() {
  if constexpr (std::is_same_v<decltype(Target), std::nullptr_t> || targets_tasks<Target>)
    return true;
  else
    return std::is_base_of_v<typename MemberTraits<decltype(Target)>::unit_type, U>;
}

template <class U, class T, class Op, auto Target, class Name>
struct ReducerTag {};

// Combines values of type T with Op and delivers the result to entry method Target
// (taking T, or std::vector<E> for T = std::vector<E>, and optionally the round number
// as a std::uint64_t after it) of every unit; Target is nullptr for a reduction whose
// result goes to the main program only, awaiting_task for all_reduce. Name is the
// reduction's name (a kodo::Reduction type) or void. Combination order is fixed (a rank's
// units by index, then its children in the tree), so a given decomposition always
// produces the same bits.
template <class U, class T, class Op, auto Target, class Name = void>
struct Reducer {
  using Value = ReductionValue<T>;
  using Element = typename Value::element;
  using Result = decltype(Value::load(std::declval<const Bytes&>()));
  static_assert(std::is_trivially_copyable_v<Element>,
                "kodo: reduction values must be trivially copyable (or std::vector of such)");
  static_assert(!not_every_pattern_v<typename InnermostElement<Element>::type>,
                "kodo: reduction values cannot be bool or unscoped enums, which not every byte "
                "pattern is (reduce an integer: Min or Max of 0/1 for all/any)");
  static_assert(is_target_of<U, Target>(),
                "kodo: the reduction target is not a member of this unit type");
  static_assert(!is_coroutine_target<Target>(),
                "kodo: a reduction target is not a coroutine (kodo::Task): await all_reduce "
                "in a task instead");
  using Unit = U;

  static void combine(Bytes& accumulator, const Bytes& value) {
    constexpr std::size_t size = sizeof(Element);
    for (std::size_t at = 0; at + size <= accumulator.size(); at += size) {
      Element a, b;
      std::memcpy(&a, accumulator.data() + at, size);
      std::memcpy(&b, value.data() + at, size);
      const Element r = Op{}(a, b);
      std::memcpy(accumulator.data() + at, &r, size);
    }
  }
  static void deliver([[maybe_unused]] CollectionBase& collection,
                      [[maybe_unused]] std::uint64_t round, [[maybe_unused]] const Bytes& result) {
    if constexpr (targets_tasks<Target>) {
      for (std::int64_t s = 0; s < collection.local_count(); ++s)
        awaited_rounds(*static_cast<Unit*>(collection.unit_at(s))).deliver(round, result);
    } else if constexpr (!std::is_same_v<decltype(Target), std::nullptr_t>) {
      const Result value = Value::load(result);
      for (std::int64_t s = 0; s < collection.local_count(); ++s) {
        Unit* unit = static_cast<Unit*>(collection.unit_at(s));
        if constexpr (std::is_invocable_v<decltype(Target), Unit*, const Result&, std::uint64_t>)
          (unit->*Target)(value, round);
        else
          (unit->*Target)(value);
      }
    }
  }
  static constexpr const std::type_info* name() {
    if constexpr (std::is_void_v<Name>)
      return nullptr;
    else
      return &typeid(Name);
  }
  static constexpr ReducerHandler handler{
      Value::value_size, Value::runtime_length, &typeid(Result), name(), &combine, &deliver};
  static inline const HandlerId id =
      register_handler(instantiation_name<ReducerTag<U, T, Op, Target, Name>>(),
                       HandlerKind::reducer, typeid(U), &handler);
};

}  // namespace kodo::detail
