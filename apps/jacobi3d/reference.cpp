// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "jacobi.hpp"

#include <cmath>
#include <utility>
#include <vector>

namespace jacobi {

SerialResult serial_reference(const Grid& g, std::int64_t iterations) {
  const std::int64_t sx = g.x + 2, sy = g.y + 2, sz = g.z + 2;
  auto at = [&](std::int64_t x, std::int64_t y, std::int64_t z) { return (x * sy + y) * sz + z; };
  std::vector<double> a(sx * sy * sz, 0.0);
  for (std::int64_t x = 0; x < sx; ++x)
    for (std::int64_t y = 0; y < sy; ++y)
      for (std::int64_t z = 0; z < sz; ++z)
        if (x == 0 || y == 0 || z == 0 || x == sx - 1 || y == sy - 1 || z == sz - 1)
          a[at(x, y, z)] = boundary_value(g, x - 1, y - 1, z - 1);
  std::vector<double> b = a;
  for (std::int64_t it = 0; it < iterations; ++it) {
    for (std::int64_t x = 1; x <= g.x; ++x)
      for (std::int64_t y = 1; y <= g.y; ++y)
        for (std::int64_t z = 1; z <= g.z; ++z)
          b[at(x, y, z)] = stencil(a[at(x, y, z)], a[at(x - 1, y, z)], a[at(x + 1, y, z)],
                                   a[at(x, y - 1, z)], a[at(x, y + 1, z)], a[at(x, y, z - 1)],
                                   a[at(x, y, z + 1)]);
    std::swap(a, b);
  }
  SerialResult r;
  double squares = 0;
  for (std::int64_t x = 1; x <= g.x; ++x)
    for (std::int64_t y = 1; y <= g.y; ++y)
      for (std::int64_t z = 1; z <= g.z; ++z) {
        r.checksum += point_hash(((x - 1) * g.y + (y - 1)) * g.z + (z - 1), a[at(x, y, z)]);
        const double d = a[at(x, y, z)] - b[at(x, y, z)];
        squares += d * d;
      }
  r.residual = iterations > 0 ? std::sqrt(squares) : 0.0;
  return r;
}

std::uint64_t serial_reference_checksum(const Grid& g, std::int64_t iterations) {
  return serial_reference(g, iterations).checksum;
}

}  // namespace jacobi
