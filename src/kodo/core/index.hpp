// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Three-dimensional indices and shapes of work-unit collections.

#include <cstdint>
#include <ostream>

namespace kodo {

/// A position in a 3D index space (a work unit's index in its collection).
struct Index3 {
  /// The coordinates.
  ///@{
  std::int64_t x = 0, y = 0, z = 0;
  ///@}
  /// Equal when every coordinate is.
  friend bool operator==(const Index3&, const Index3&) = default;
};

/// The shape of a 3D index space; kodo linearises indices with z fastest (linear()), and
/// linear_x_fastest() gives the order MPI codes often number their ranks in.
struct Extent3 {
  /// The number of indices along each axis.
  ///@{
  std::int64_t x = 1, y = 1, z = 1;
  ///@}
  /// Equal when every extent is.
  friend bool operator==(const Extent3&, const Extent3&) = default;

  /// The number of indices.
  std::int64_t size() const { return x * y * z; }
  /// Whether `i` lies inside this shape.
  bool contains(const Index3& i) const {
    return i.x >= 0 && i.x < x && i.y >= 0 && i.y < y && i.z >= 0 && i.z < z;
  }
  /// The position of `i` in z-fastest order.
  std::int64_t linear(const Index3& i) const { return (i.x * y + i.y) * z + i.z; }
  /// The index at position `l` in z-fastest order (the inverse of linear()).
  Index3 delinear(std::int64_t l) const { return {l / (y * z), (l / z) % y, l % z}; }
  /// The position of `i` in x-fastest order, x + X * (y + Y * z), the way MPI codes often
  /// number their ranks: a port keeps its numbering with it (a unit's old rank, say).
  std::int64_t linear_x_fastest(const Index3& i) const { return (i.z * y + i.y) * x + i.x; }
  /// The index at position `l` in x-fastest order (the inverse of linear_x_fastest()).
  Index3 delinear_x_fastest(std::int64_t l) const { return {l % x, (l / x) % y, l / (x * y)}; }
};

/// Prints an index as "(x,y,z)".
inline std::ostream& operator<<(std::ostream& os, const Index3& i) {
  return os << '(' << i.x << ',' << i.y << ',' << i.z << ')';
}
/// Prints a shape as "XxYxZ".
inline std::ostream& operator<<(std::ostream& os, const Extent3& e) {
  return os << e.x << 'x' << e.y << 'x' << e.z;
}

}  // namespace kodo
