#pragma once
// Reduction operations for WorkUnit::contribute: Sum, Min and Max.

#include <array>
#include <cstddef>

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

}  // namespace kodo
