// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The walks of a unit's state() (tasking/units/unit_state.hpp): StateWriter hands each field to
// a sink (a checkpoint file, a moving unit's records, a count of bytes), StateReader
// restores each from a source, checked. Installed: state() is a template of the user's
// unit type, instantiated with these.

#include <kodo/backends/stream.hpp>
#include <kodo/core/error.hpp>
#include <kodo/tasking/units/unit_state.hpp>

#include <Kokkos_Core.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace kodo::detail {

enum class FieldKind : std::uint8_t { value = 1, sequence = 2, view = 3 };

// What a field is, as saved with it.
struct FieldShape {
  FieldKind kind = FieldKind::value;
  std::uint32_t element_size = 0;
  std::uint32_t rank = 0;                 // 1 for a sequence, 0 for a value
  std::array<std::int64_t, 8> extents{};  // the first `rank` are used
  std::uint64_t bytes = 0;                // element_size times the extents' product
};

// Where written fields go (a checkpoint file), and where restored ones come from. A
// field's bytes are on the device when its memory is not host-accessible; the sink and
// source copy them through the device's own copy path.
class StateSink {
 public:
  virtual void field(std::string_view name, const FieldShape& shape, const void* data,
                     bool on_device) = 0;
  // A sink that reads views after the walk (a migration) is handed each view before its
  // field(): a copy that keeps its memory alive, as state() may name a temporary view.
  virtual void keep(std::shared_ptr<const void> view) { (void)view; }
  bool keeps_views = false;

 protected:
  ~StateSink() = default;
};
class StateSource {
 public:
  // The next field, checked against the name, kind, element size and rank expected;
  // throws kodo::Error naming both when they differ.
  virtual FieldShape next(std::string_view name, FieldKind kind, std::uint32_t element_size,
                          std::uint32_t rank) = 0;
  // The bytes of the field next() returned, into `data`.
  virtual void read(void* data, std::uint64_t bytes, bool on_device) = 0;

 protected:
  ~StateSource() = default;
};

template <class T>
struct IsVector : std::false_type {};
template <class E, class A>
struct IsVector<std::vector<E, A>> : std::true_type {};

template <class T>
concept StateValue = std::is_trivially_copyable_v<T> && !Kokkos::is_view<T>::value;

template <class V>
constexpr bool view_on_device() {
  using M = typename V::memory_space;
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, M>::accessible;
  static_assert(host || std::is_same_v<M, ExecutionSpace::memory_space>,
                "kodo: a view in a unit's state is in host-accessible memory or in the default "
                "execution space's memory");
  return !host;
}

// The bytes a unit's state() takes as records (state_records.hpp: a checkpoint file's
// body, a moving unit's message), counted without copying anything.
class StateSizes final : public StateSink {
 public:
  void field(std::string_view name, const FieldShape& shape, const void*, bool) override {
    bytes += 4 + name.size() + 1 + 4 + 4 + 8 * std::uint64_t{shape.rank} + 8 + shape.bytes;
    if (shape.kind == FieldKind::view) view_bytes += shape.bytes, ++views;
  }
  std::uint64_t bytes = 0;
  std::uint64_t view_bytes = 0, views = 0;  // of that, the views' data, and how many
};

// Walks a unit's state() to write it.
class StateWriter {
 public:
  explicit StateWriter(StateSink& sink) : sink_(sink) {}

  template <class T>
  void operator()(std::string_view name, const T& field) {
    FieldShape shape;
    if constexpr (Kokkos::is_view<T>::value) {
      using E = typename T::non_const_value_type;
      static_assert(std::is_trivially_copyable_v<E>,
                    "kodo: a view in a unit's state holds trivially copyable values");
      if (!field.span_is_contiguous())
        throw Error(cat("the state field '", name, "' is a non-contiguous view (", field.label(),
                        ")"));
      shape.kind = FieldKind::view;
      shape.element_size = sizeof(E);
      shape.rank = static_cast<std::uint32_t>(T::rank());
      for (std::uint32_t d = 0; d < shape.rank; ++d)
        shape.extents[d] = static_cast<std::int64_t>(field.extent(d));
      shape.bytes = field.size() * sizeof(E);
      if (sink_.keeps_views) sink_.keep(std::make_shared<T>(field));
      sink_.field(name, shape, field.data(), view_on_device<T>());
    } else if constexpr (IsVector<T>::value || std::is_same_v<T, std::string>) {
      using E = typename T::value_type;
      static_assert(std::is_trivially_copyable_v<E> && !std::is_same_v<E, bool>,
                    "kodo: a sequence in a unit's state holds trivially copyable values");
      shape.kind = FieldKind::sequence;
      shape.element_size = sizeof(E);
      shape.rank = 1;
      shape.extents[0] = static_cast<std::int64_t>(field.size());
      shape.bytes = field.size() * sizeof(E);
      sink_.field(name, shape, field.data(), false);
    } else {
      static_assert(StateValue<T>,
                    "kodo: a unit's state holds trivially copyable values, std::vectors of "
                    "them, std::strings and contiguous Kokkos views");
      shape.element_size = sizeof(T);
      shape.bytes = sizeof(T);
      sink_.field(name, shape, &field, false);
    }
  }

 private:
  StateSink& sink_;
};

// Walks a unit's state() to restore it.
class StateReader {
 public:
  explicit StateReader(StateSource& source) : source_(source) {}

  template <class T>
  void operator()(std::string_view name, T& field) {
    if constexpr (Kokkos::is_view<T>::value) {
      using E = typename T::non_const_value_type;
      static_assert(!std::is_const_v<typename T::value_type>,
                    "kodo: a view restored from a unit's state is not const");
      constexpr auto rank = static_cast<std::uint32_t>(T::rank());
      const FieldShape shape = source_.next(name, FieldKind::view, sizeof(E), rank);
      if (field.data() == nullptr) {
        if constexpr (T::traits::memory_traits::is_unmanaged)
          throw Error(cat("the state field '", name, "' is an unmanaged view with no memory"));
        else
          allocate(field, name, shape, std::make_index_sequence<T::rank_dynamic()>{});
      } else {
        for (std::uint32_t d = 0; d < rank; ++d)
          if (static_cast<std::int64_t>(field.extent(d)) != shape.extents[d])
            throw Error(cat("the state field '", name, "' was saved with extent ", shape.extents[d],
                            " in dimension ", d, "; the unit's view (", field.label(), ") has ",
                            field.extent(d)));
        if (!field.span_is_contiguous())
          throw Error(cat("the state field '", name, "' is a non-contiguous view (", field.label(),
                          ")"));
      }
      source_.read(field.data(), shape.bytes, view_on_device<T>());
    } else if constexpr (IsVector<T>::value || std::is_same_v<T, std::string>) {
      using E = typename T::value_type;
      const FieldShape shape = source_.next(name, FieldKind::sequence, sizeof(E), 1);
      field.resize(static_cast<std::size_t>(shape.extents[0]));
      source_.read(field.data(), shape.bytes, false);
    } else {
      static_assert(StateValue<T>,
                    "kodo: a unit's state holds trivially copyable values, std::vectors of "
                    "them, std::strings and contiguous Kokkos views");
      source_.next(name, FieldKind::value, sizeof(T), 0);
      source_.read(&field, sizeof(T), false);
    }
  }

 private:
  // Dynamic extents come first in a Kokkos view.
  template <class V, std::size_t... D>
  static void allocate(V& view, std::string_view name, const FieldShape& shape,
                       std::index_sequence<D...>) {
    for (std::uint32_t d = sizeof...(D); d < V::rank(); ++d)
      if (static_cast<std::int64_t>(view.extent(d)) != shape.extents[d])
        throw Error(cat("the state field '", name, "' was saved with extent ", shape.extents[d],
                        " in dimension ", d, "; the view's static extent is ", view.extent(d)));
    view = V(Kokkos::view_alloc(std::string(name), Kokkos::WithoutInitializing),
             static_cast<std::size_t>(shape.extents[D])...);
  }

  StateSource& source_;
};

}  // namespace kodo::detail
