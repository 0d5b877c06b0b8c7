// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Reduction operations for WorkUnit::contribute: Sum, Min and Max; and named reductions,
/// which the main program tells apart from a collection's other reductions.

#include <array>
#include <cstddef>
#include <type_traits>

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
/// Adds.
struct Sum {
  /// a + b; on arrays, element by element.
  ///@{
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a + b;
  }
  template <class T, std::size_t N>
  std::array<T, N> operator()(const std::array<T, N>& a, const std::array<T, N>& b) const {
    return detail::elementwise<Sum>(a, b);
  }
  ///@}
};
/// The least.
struct Min {
  /// The lesser of a and b; on arrays, element by element.
  ///@{
  template <class T>
  T operator()(const T& a, const T& b) const {
    return b < a ? b : a;
  }
  template <class T, std::size_t N>
  std::array<T, N> operator()(const std::array<T, N>& a, const std::array<T, N>& b) const {
    return detail::elementwise<Min>(a, b);
  }
  ///@}
};
/// The greatest.
struct Max {
  /// The greater of a and b; on arrays, element by element.
  ///@{
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a < b ? b : a;
  }
  template <class T, std::size_t N>
  std::array<T, N> operator()(const std::array<T, N>& a, const std::array<T, N>& b) const {
    return detail::elementwise<Max>(a, b);
  }
  ///@}
};

/// A reduction with a name, a type the program declares:
/// ```
///   struct Residual : kodo::Reduction<double, kodo::Max> {};
/// ```
/// Units contribute to its rounds with all_reduce<Residual>(value) or
/// contribute<Residual>(value) (contribute<Target, Residual>(value) with a target); the
/// main program watches its rounds alone with collection.on_reduced<Residual>(callback) and
/// reads its latest with collection.reduced<Residual>(), while other reductions of the
/// collection run beside it. Its rounds take round numbers as any round does; the main
/// program's watchers by result type (on_reduced<T>, reduced<T>) see the rounds without a
/// name only.
template <class T, class Op = Sum>
struct Reduction {
  using value_type = T;  ///< the type reduced
  using operation = Op;  ///< how two values combine
};

namespace detail {
template <class N>
concept NamedReduction = requires {
  typename N::value_type;
  typename N::operation;
} && std::is_base_of_v<Reduction<typename N::value_type, typename N::operation>, N>;
}  // namespace detail

}  // namespace kodo
