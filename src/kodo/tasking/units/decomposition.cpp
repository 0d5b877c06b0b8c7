// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/units/decomposition.hpp>

#include <kodo/core/error.hpp>

#include <cmath>
#include <limits>
#include <sstream>

namespace kodo {

std::int64_t units_for_odf(std::int64_t odf, int ranks) {
  if (odf < 1 || ranks < 1 || odf > kMostOdfUnits / ranks) {
    std::ostringstream os;
    os << "an overdecomposition factor of " << odf << " on " << ranks << " rank(s) "
       << (odf < 1 || ranks < 1 ? "gives no unit: both must be at least 1"
                                : "asks for more than 2^30 units");
    throw Error(os.str());
  }
  return odf * ranks;
}

Extent3 split_grid(const Extent3& grid, std::int64_t units, const CutCosts& costs) {
  std::ostringstream os;
  for (const double c : {costs.x, costs.y, costs.z})
    if (!(std::isfinite(c) && c > 0)) {
      os << "cannot decompose a grid with cut costs (" << costs.x << ", " << costs.y << ", "
         << costs.z << "): each must be a positive finite number";
      throw Error(os.str());
    }
  if (grid.x < 1 || grid.y < 1 || grid.z < 1) {
    os << "cannot decompose a grid of " << grid << ": every dimension must be at least 1";
    throw Error(os.str());
  }
  std::int64_t points = 0;
  if (__builtin_mul_overflow(grid.x, grid.y, &points) ||
      __builtin_mul_overflow(points, grid.z, &points)) {
    os << "cannot decompose a grid of " << grid << ": more than 2^63 points";
    throw Error(os.str());
  }
  if (units < 1) {
    os << "cannot cut a grid into " << units << " units: need at least one";
    throw Error(os.str());
  }
  if (units > points) {
    os << "cannot cut a " << grid << " grid (" << points << " points) into " << units
       << " units: more units than grid points";
    throw Error(os.str());
  }
  Extent3 best{0, 0, 0};
  auto best_cost = std::numeric_limits<double>::infinity();
  for (std::int64_t ux = 1; ux <= units && ux <= grid.x; ++ux) {
    if (units % ux) continue;
    for (std::int64_t uy = 1; uy <= units / ux && uy <= grid.y; ++uy) {
      if ((units / ux) % uy) continue;
      const std::int64_t uz = units / ux / uy;
      if (uz > grid.z) continue;
      // Area of the internal cuts: each cut plane is as large as a grid cross-section.
      // In floating point: the exact areas of huge grids overflow 64 bits.
      const double cost = costs.x * static_cast<double>(ux - 1) * grid.y * grid.z +
                          costs.y * static_cast<double>(uy - 1) * grid.x * grid.z +
                          costs.z * static_cast<double>(uz - 1) * grid.x * grid.y;
      if (cost < best_cost ||
          (cost == best_cost && (uz < best.z || (uz == best.z && uy < best.y)))) {
        best_cost = cost;
        best = {ux, uy, uz};
      }
    }
  }
  if (best.x == 0) {
    os << "cannot cut a " << grid << " grid into " << units
       << " cuboid units with at least one point each in every dimension";
    throw Error(os.str());
  }
  return best;
}

Range block_range(std::int64_t n, std::int64_t parts, std::int64_t part) {
  const std::int64_t base = n / parts, extra = n % parts;
  return {part * base + (part < extra ? part : extra), base + (part < extra ? 1 : 0)};
}

}  // namespace kodo
