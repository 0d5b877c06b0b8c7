#pragma once
// Byte serialization of the arguments of invocations between ranks.
//
// Values are copied into the byte stream. A Kokkos::View is not: the stream holds its
// extents and the view itself becomes an attachment, a segment of memory the transport
// sends as it is (device memory straight from the device); the receiver allocates a
// new view of the same type and the transport lands the data in it. (Invocations on
// the same rank are not serialized at all; see collection.hpp.)

#include <Kokkos_Core.hpp>

#include "../comm/memory_kind.hpp"

#include <array>
#include <cstddef>
#include <memory>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kodo {

using Bytes = std::vector<std::byte>;

// A view's memory travelling beside the bytes of a message; `keep` holds the view
// alive until the transport is done with it.
struct Attachment {
  Segment segment;
  std::shared_ptr<const void> keep;
};

class ByteWriter {
 public:
  void write(const void* data, std::size_t n) {
    if (n == 0) return;
    const auto* p = static_cast<const std::byte*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
  }
  void attach(Attachment a) { attachments_.push_back(std::move(a)); }
  Bytes take() { return std::move(bytes_); }
  std::vector<Attachment> take_attachments() { return std::move(attachments_); }
  std::size_t size() const { return bytes_.size(); }

 private:
  Bytes bytes_;
  std::vector<Attachment> attachments_;
};

class ByteReader {
 public:
  // `destinations` receives, in order, the memory of each view unpacked (for the
  // transport to fill); without it, unpacking a view is an error.
  ByteReader(const std::byte* data, std::size_t n, std::vector<Segment>* destinations = nullptr)
      : data_(data), size_(n), destinations_(destinations) {}
  explicit ByteReader(const Bytes& b, std::vector<Segment>* destinations = nullptr)
      : ByteReader(b.data(), b.size(), destinations) {}

  void expect_attachment(const Segment& s) {
    if (!destinations_)
      throw std::runtime_error("kodo: a view argument arrived without its data");
    destinations_->push_back(s);
  }

  void read(void* out, std::size_t n) {
    if (n > size_ - pos_)
      throw std::runtime_error("kodo: message payload is shorter than its arguments");
    std::memcpy(out, data_ + pos_, n);
    pos_ += n;
  }
  std::size_t remaining() const { return size_ - pos_; }

 private:
  const std::byte* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
  std::vector<Segment>* destinations_;
};

// Customisation point: specialise Serializer<T> with static pack/unpack for other types.
template <class T, class Enable = void>
struct Serializer;

template <class T>
void pack(ByteWriter& w, const T& value) {
  Serializer<T>::pack(w, value);
}
template <class T>
T unpack(ByteReader& r) {
  return Serializer<T>::unpack(r);
}

template <class T>
struct Serializer<T, std::enable_if_t<std::is_trivially_copyable_v<T> && !Kokkos::is_view<T>::value>> {
  static void pack(ByteWriter& w, const T& v) { w.write(&v, sizeof(T)); }
  static T unpack(ByteReader& r) {
    T v;
    r.read(&v, sizeof(T));
    return v;
  }
};

template <class T, class A>
struct Serializer<std::vector<T, A>> {
  static void pack(ByteWriter& w, const std::vector<T, A>& v) {
    kodo::pack<std::uint64_t>(w, v.size());
    if constexpr (std::is_trivially_copyable_v<T>) {
      w.write(v.data(), v.size() * sizeof(T));
    } else {
      for (const auto& e : v) kodo::pack(w, e);
    }
  }
  static std::vector<T, A> unpack(ByteReader& r) {
    const auto n = kodo::unpack<std::uint64_t>(r);
    if constexpr (std::is_trivially_copyable_v<T>) {
      if (n > r.remaining() / (sizeof(T) ? sizeof(T) : 1))
        throw std::runtime_error("kodo: message payload is shorter than its arguments");
      std::vector<T, A> v(n);
      r.read(v.data(), n * sizeof(T));
      return v;
    } else {
      std::vector<T, A> v;
      v.reserve(n);
      for (std::uint64_t i = 0; i < n; ++i) v.push_back(kodo::unpack<T>(r));
      return v;
    }
  }
};

template <>
struct Serializer<std::string> {
  static void pack(ByteWriter& w, const std::string& s) {
    kodo::pack<std::uint64_t>(w, s.size());
    w.write(s.data(), s.size());
  }
  static std::string unpack(ByteReader& r) {
    const auto n = kodo::unpack<std::uint64_t>(r);
    if (n > r.remaining())
      throw std::runtime_error("kodo: message payload is shorter than its arguments");
    std::string s(n, '\0');
    r.read(s.data(), n);
    return s;
  }
};

// Views travel as their extents in the byte stream and their contents as an
// attachment (the view itself, not a copy: see collection.hpp for when the sender may
// write it again). The receiver gets a new view of the same type.
template <class V>
struct Serializer<V, std::enable_if_t<Kokkos::is_view<V>::value>> {
  using value_type = typename V::non_const_value_type;
  using owning_type = Kokkos::View<typename V::non_const_data_type, typename V::array_layout,
                                   typename V::memory_space>;
  static constexpr std::size_t rank = V::rank();

  static_assert(V::rank_dynamic() == V::rank(),
                "kodo: views in messages must have only run-time extents");
  static_assert(!std::is_same_v<typename V::array_layout, Kokkos::LayoutStride>,
                "kodo: views in messages must have a contiguous layout");
  static_assert(std::is_trivially_copyable_v<value_type>,
                "kodo: views in messages must hold trivially copyable values");
  static_assert(!V::memory_traits::is_unmanaged,
                "kodo: views in messages must own their memory (the receiver gets a new view)");

  static void pack(ByteWriter& w, const V& v) {
    for (std::size_t d = 0; d < rank; ++d) kodo::pack<std::uint64_t>(w, v.extent(d));
    if (v.size() == 0) return;
    if (!v.span_is_contiguous())
      throw std::invalid_argument("kodo: a view sent in a message must be contiguous");
    w.attach(Attachment{segment_of(v), std::make_shared<V>(v)});
  }

  static V unpack(ByteReader& r) {
    std::array<std::size_t, rank> ext{};
    std::size_t count = 1;
    for (std::size_t d = 0; d < rank; ++d) {
      ext[d] = kodo::unpack<std::uint64_t>(r);
      if (ext[d] != 0 && count > std::numeric_limits<std::size_t>::max() / sizeof(value_type) / ext[d])
        throw std::runtime_error("kodo: a view argument has impossible extents");
      count *= ext[d];
    }
    owning_type v = allocate(ext, std::make_index_sequence<rank>{});
    if (count != 0) r.expect_attachment(segment_of(v));
    return v;
  }

 private:
  template <class W>
  static Segment segment_of(const W& v) {
    return Segment{const_cast<value_type*>(v.data()), v.size() * sizeof(value_type),
                   memory_kind<typename V::memory_space>()};
  }
  template <std::size_t... I>
  static owning_type allocate(const std::array<std::size_t, rank>& ext,
                              std::index_sequence<I...>) {
    return owning_type(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kodo::message"),
                       ext[I]...);
  }
};

}  // namespace kodo
