// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Byte serialization of the arguments of entry-method calls between ranks (calls on the
/// same rank are not serialized at all).
///
/// Values are copied into the byte stream. A Kokkos::View is not: the stream holds its
/// extents and the view's memory travels beside the bytes as it is (device memory straight
/// from the device), into a view of the same type from the receiver's pool (view_pool.hpp).
/// Other types travel by specialising Serializer<T> (pack/unpack through
/// ByteWriter/ByteReader; examples/07_own_type.cpp). Bytes from another rank are input:
/// every count and extent read here is checked against the bytes that remain, the data that
/// arrived and the bounds below before anything is allocated; a violation throws
/// kodo::Error naming it. Trivially copyable types travel as their bytes, unchecked: send
/// only those every byte pattern is a valid value of, or give them a Serializer that checks.

#include <kodo/backends/detail/memory.hpp>
#include <kodo/comm/detail/view_pool.hpp>
#include <kodo/core/detail/numeric.hpp>
#include <kodo/core/error.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kodo {

/// A serialized byte stream.
using Bytes = std::vector<std::byte>;

namespace detail {
// Bounds on what one message can make its receiver allocate.
inline constexpr std::uint64_t kMaxArgumentBytes = std::uint64_t{1} << 30;  // 1 GiB of arguments
inline constexpr std::uint64_t kMaxViewDataBytes = std::uint64_t{1} << 38;  // 256 GiB of views

// A view's memory travelling beside the bytes of a message; `keep` holds the view
// alive until the transport is done with it.
struct Attachment {
  detail::Segment segment;
  std::shared_ptr<const void> keep;
};
struct WireAccess;

// bool and unscoped enums: types of which not every byte pattern is a value. (A scoped
// enum has a fixed underlying type, every value of which it takes.)
template <class T, bool = std::is_enum_v<T>>
struct IsUnscopedEnum : std::false_type {};
template <class T>
struct IsUnscopedEnum<T, true>
    : std::bool_constant<std::is_convertible_v<T, std::underlying_type_t<T>>> {};
template <class T>
constexpr bool not_every_pattern_v = std::is_same_v<T, bool> || IsUnscopedEnum<T>::value;
}  // namespace detail

/// How a T travels in messages: a specialisation has `static void pack(ByteWriter&, const
/// T&)` and `static T unpack(ByteReader&)`. kodo specialises it for trivially copyable
/// types, bool, scoped enums, std::vector, std::string and Kokkos views; other types
/// travel by specialising it.
template <class T, class Enable = void>
struct Serializer;

/// The byte stream a Serializer packs into.
class ByteWriter {
 public:
  /// Appends `n` bytes from `data`.
  void write(const void* data, std::size_t n) {
    if (n == 0) return;
    const auto* p = static_cast<const std::byte*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
  }
  /// The bytes written so far.
  std::size_t size() const { return bytes_.size(); }

 private:
  template <class T, class E>
  friend struct Serializer;
  friend struct detail::WireAccess;
  void attach(detail::Attachment a) { attachments_.push_back(std::move(a)); }

  Bytes bytes_;
  std::vector<detail::Attachment> attachments_;
};

/// The byte stream a Serializer unpacks from: bytes that came from another rank, read
/// with every length checked.
class ByteReader {
 public:
  /// Reads the `n` bytes at `data` (which must outlive the reader).
  ByteReader(const std::byte* data, std::size_t n) : data_(data), size_(n) {}
  /// Reads `b` (which must outlive the reader).
  explicit ByteReader(const Bytes& b) : ByteReader(b.data(), b.size()) {}

  /// Copies the next `n` bytes to `out`; throws kodo::Error if fewer remain.
  void read(void* out, std::size_t n) {
    if (n > size_ - pos_)
      throw Error(detail::cat("a message's arguments end after ", size_, " bytes; reading ", n,
                              " more at offset ", pos_));
    if (n == 0) return;
    std::memcpy(out, data_ + pos_, n);
    pos_ += n;
  }
  /// The bytes not read yet.
  std::size_t remaining() const { return size_ - pos_; }

 private:
  template <class T, class E>
  friend struct Serializer;
  friend struct detail::WireAccess;

  // Views of non-zero size come only with a message that carries view data (see
  // WireAccess): each view's bytes are taken from that data before the view is made.
  // A check pass makes no views; otherwise they come from the pool (or are allocated,
  // without one) and their memory is listed in `destinations_` for the data to land in.
  void reserve_view_data(std::uint64_t bytes) {
    if (!carries_views_)
      throw Error(detail::cat("a view argument of ", bytes,
                              " bytes arrived in a message that carries no view data"));
    if (bytes > view_data_left_)
      throw Error(detail::cat("a view argument of ", bytes, " bytes exceeds the ", view_data_left_,
                              " bytes of view data left in the message"));
    view_data_left_ -= bytes;
  }
  // Where the data of the view just made goes.
  void expect_view_data(const detail::Segment& s) {
    if (!destinations_) throw Error("a view argument has data, but the message carries none");
    destinations_->push_back(s);
  }

  const std::byte* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
  bool carries_views_ = false;
  bool checking_ = false;
  std::vector<detail::Segment>* destinations_ = nullptr;
  detail::ViewPool* pool_ = nullptr;
  std::uint64_t view_data_left_ = 0;
};

/// Writes `value` to `w` (through Serializer<T>).
template <class T>
void pack(ByteWriter& w, const T& value) {
  Serializer<T>::pack(w, value);
}
/// Reads a T from `r` (through Serializer<T>); throws kodo::Error on malformed bytes.
template <class T>
T unpack(ByteReader& r) {
  return Serializer<T>::unpack(r);
}

/// Trivially copyable types travel as their bytes. kodo cannot look inside them: send only
/// types that every byte pattern is a valid value of (no bool, enum or std::optional
/// members), or give them a Serializer that checks.
template <class T>
struct Serializer<T,
                  std::enable_if_t<std::is_trivially_copyable_v<T> && !Kokkos::is_view<T>::value &&
                                   !std::is_same_v<T, bool> && !std::is_enum_v<T>>> {
  /// Writes `v`'s bytes; reads them back.
  ///@{
  static void pack(ByteWriter& w, const T& v) { w.write(&v, sizeof(T)); }
  static T unpack(ByteReader& r) {
    T v;
    r.read(&v, sizeof(T));
    return v;
  }
  ///@}
};

/// bool travels as one byte, checked to be 0 or 1 on arrival.
template <>
struct Serializer<bool> {
  /// Writes 0 or 1; reads it back (anything else is a kodo::Error).
  ///@{
  static void pack(ByteWriter& w, bool v) { kodo::pack<std::uint8_t>(w, v ? 1 : 0); }
  static bool unpack(ByteReader& r) {
    const auto b = kodo::unpack<std::uint8_t>(r);
    if (b > 1) throw Error(detail::cat("a bool argument holds ", unsigned{b}, ", not 0 or 1"));
    return b == 1;
  }
  ///@}
};

/// A scoped enum travels as its underlying type (any value of it may arrive: check it).
template <class E>
struct Serializer<E, std::enable_if_t<std::is_enum_v<E>>> {
  using U = std::underlying_type_t<E>;  ///< the type it travels as
  // A scoped enum takes every value of its underlying type; an unscoped one without a
  // fixed type does not (a value beyond its enumerators' range is undefined).
  static_assert(
      !detail::IsUnscopedEnum<E>::value,
      "kodo: enums in messages must be scoped (enum class), or have a Serializer of their own");
  /// Writes `v` as a U; reads it back.
  ///@{
  static void pack(ByteWriter& w, E v) { kodo::pack<U>(w, static_cast<U>(v)); }
  static E unpack(ByteReader& r) { return static_cast<E>(kodo::unpack<U>(r)); }
  ///@}
};

namespace detail {
// A count read from the wire, checked against the bytes left: every element takes at
// least `min_bytes` of them (serialize_impl.hpp).
inline std::uint64_t read_count(ByteReader& r, std::size_t min_bytes, const char* what);
}  // namespace detail

/// A vector travels as its size and its elements (its count checked against the bytes
/// that remain).
template <class T, class A>
struct Serializer<std::vector<T, A>> {
  /// Writes `v`; reads a vector back.
  ///@{
  static void pack(ByteWriter& w, const std::vector<T, A>& v) {
    kodo::pack<std::uint64_t>(w, v.size());
    if constexpr (std::is_trivially_copyable_v<T> && !std::is_same_v<T, bool> &&
                  !std::is_enum_v<T> && !Kokkos::is_view<T>::value) {
      w.write(v.data(), v.size() * sizeof(T));
    } else {
      for (const auto& e : v) kodo::pack(w, e);
    }
  }
  static std::vector<T, A> unpack(ByteReader& r) {
    if constexpr (std::is_trivially_copyable_v<T> && !std::is_same_v<T, bool> &&
                  !std::is_enum_v<T> && !Kokkos::is_view<T>::value) {
      const auto n = detail::read_count(r, sizeof(T), "vector");
      std::vector<T, A> v(n);
      r.read(v.data(), n * sizeof(T));
      return v;
    } else {
      // Elements of other types take at least one byte each (a count, an extent, a
      // value), so the bytes left bound the count.
      const auto n = detail::read_count(r, 1, "vector");
      std::vector<T, A> v;  // not reserved: n elements may take far more memory than bytes
      for (std::uint64_t i = 0; i < n; ++i) v.push_back(kodo::unpack<T>(r));
      return v;
    }
  }
  ///@}
};

/// A string travels as its size and its characters.
template <>
struct Serializer<std::string> {
  /// Writes `s`; reads a string back.
  ///@{
  static void pack(ByteWriter& w, const std::string& s) {
    kodo::pack<std::uint64_t>(w, s.size());
    w.write(s.data(), s.size());
  }
  static std::string unpack(ByteReader& r) {
    const auto n = detail::read_count(r, 1, "string");
    std::string s(n, '\0');
    r.read(s.data(), n);
    return s;
  }
  ///@}
};

/// Views travel as their extents in the byte stream and their contents beside it (the
/// view itself, not a copy: see collection.hpp for when the sender may write it again).
/// The receiver gets a view of the same type that no other view shares (from its pool),
/// or, for a view with no elements, one that holds no memory.
template <class V>
struct Serializer<V, std::enable_if_t<Kokkos::is_view<V>::value>> {
  using value_type = typename V::non_const_value_type;  ///< the element type
  /// The view type the receiver gets: V's data type, layout and memory space, managed.
  using owning_type = Kokkos::View<typename V::non_const_data_type, typename V::array_layout,
                                   typename V::memory_space>;
  static constexpr std::size_t rank = V::rank();  ///< the view's number of dimensions

  static_assert(rank >= 1, "kodo: views in messages must have at least one dimension");
  static_assert(V::rank_dynamic() == V::rank(),
                "kodo: views in messages must have only run-time extents");
  static_assert(!std::is_same_v<typename V::array_layout, Kokkos::LayoutStride>,
                "kodo: views in messages must have a contiguous layout");
  static_assert(std::is_trivially_copyable_v<value_type>,
                "kodo: views in messages must hold trivially copyable values");
  static_assert(!detail::not_every_pattern_v<value_type>,
                "kodo: views in messages cannot hold bool or unscoped enum values, which not "
                "every byte pattern is (use an integer type or an enum class)");
  static_assert(
      !V::memory_traits::is_unmanaged,
      "kodo: views in messages must own their memory (the receiver gets a view of its own)");

  /// Writes `v`'s extents and attaches its memory to the message.
  static void pack(ByteWriter& w, const V& v) {
    for (std::size_t d = 0; d < rank; ++d) kodo::pack<std::uint64_t>(w, v.extent(d));
    if (v.size() == 0) return;
    if (!v.span_is_contiguous()) throw Error("a view sent in a message must be contiguous");
    w.attach(detail::Attachment{segment_of(v), std::make_shared<V>(v)});
  }

  /// Reads the extents and makes the view the data lands in (checked against kodo's bound
  /// and the view data the message carries).
  static V unpack(ByteReader& r) {
    std::array<std::size_t, rank> ext{};
    std::uint64_t bytes = sizeof(value_type);
    for (std::size_t d = 0; d < rank; ++d) {
      const auto e = kodo::unpack<std::uint64_t>(r);
      // Each extent on its own too: an empty view's product stays 0 whatever follows.
      const auto product = detail::checked_mul(bytes, e);
      if (e > detail::kMaxViewDataBytes / sizeof(value_type) || !product ||
          *product > detail::kMaxViewDataBytes)
        throw Error(detail::cat("a view argument's extent ", e, " in dimension ", d,
                                " makes it larger than kodo's bound of ", detail::kMaxViewDataBytes,
                                " bytes"));
      bytes = *product;
      ext[d] = static_cast<std::size_t>(e);
    }
    const bool empty = std::any_of(ext.begin(), ext.end(), [](std::size_t e) { return e == 0; });
    if (!empty) r.reserve_view_data(bytes);
    if (r.checking_) return owning_type();
    if (empty) return without_memory(ext, std::make_index_sequence<rank>{});
    owning_type v = r.pool_ ? r.pool_->template take<owning_type>(ext)
                            : allocate(ext, std::make_index_sequence<rank>{});
    r.expect_view_data(segment_of(v));
    return v;
  }

 private:
  template <class W>
  static detail::Segment segment_of(const W& v) {
    return detail::Segment{const_cast<value_type*>(v.data()), v.size() * sizeof(value_type),
                           detail::memory_kind<typename V::memory_space>()};
  }
  template <std::size_t... I>
  static owning_type allocate(const std::array<std::size_t, rank>& ext, std::index_sequence<I...>) {
    return owning_type(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kodo::message"), ext[I]...);
  }
  // An empty view keeps its extents but needs no memory (nor an allocation).
  template <std::size_t... I>
  static owning_type without_memory(const std::array<std::size_t, rank>& ext,
                                    std::index_sequence<I...>) {
    return owning_type(static_cast<value_type*>(nullptr), ext[I]...);
  }
};
}  // namespace kodo

// How counts are read, and what the runtime and the transport use of the streams.
#include <kodo/comm/detail/serialize_impl.hpp>
