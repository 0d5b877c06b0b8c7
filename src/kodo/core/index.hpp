// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Three-dimensional indices and shapes of work-unit collections.

#include <cstdint>
#include <ostream>

namespace kodo {

struct Index3 {
  std::int64_t x = 0, y = 0, z = 0;
  friend bool operator==(const Index3&, const Index3&) = default;
};

// The shape of a 3D index space; indices are linearised with z fastest.
struct Extent3 {
  std::int64_t x = 1, y = 1, z = 1;
  friend bool operator==(const Extent3&, const Extent3&) = default;

  std::int64_t size() const { return x * y * z; }
  bool contains(const Index3& i) const {
    return i.x >= 0 && i.x < x && i.y >= 0 && i.y < y && i.z >= 0 && i.z < z;
  }
  std::int64_t linear(const Index3& i) const { return (i.x * y + i.y) * z + i.z; }
  Index3 delinear(std::int64_t l) const { return {l / (y * z), (l / z) % y, l % z}; }
};

inline std::ostream& operator<<(std::ostream& os, const Index3& i) {
  return os << '(' << i.x << ',' << i.y << ',' << i.z << ')';
}
inline std::ostream& operator<<(std::ostream& os, const Extent3& e) {
  return os << e.x << 'x' << e.y << 'x' << e.z;
}

}  // namespace kodo
