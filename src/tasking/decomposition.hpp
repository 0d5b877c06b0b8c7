#pragma once
// Cutting a 3D grid into cuboid work units.

#include "../core/index.hpp"

#include <cstdint>

namespace kodo {

// The unit grid (ux, uy, uz), ux*uy*uz == units, that cuts `grid` into cuboids with the
// least total cut surface; ties go to the grid that keeps z (the contiguous dimension)
// longest. Every unit gets at least one point per dimension. Throws kodo::Error when
// `units` < 1 or no such cut exists (e.g. more units than grid points).
Extent3 split_grid(const Extent3& grid, std::int64_t units);

// Part `part` of `n` points cut into `parts` nearly equal pieces (the first n % parts
// pieces are one longer).
struct Range {
  std::int64_t begin, size;
};
Range block_range(std::int64_t n, std::int64_t parts, std::int64_t part);

}  // namespace kodo
