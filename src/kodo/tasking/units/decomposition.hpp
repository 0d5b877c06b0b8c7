// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Cutting a 3D grid into cuboid work units.

#include <kodo/core/index.hpp>

#include <cstdint>

namespace kodo {

/// What a cut across each dimension costs per point of its area, against the others.
/// Where z is the contiguous dimension (a view's last index in LayoutRight, a padded
/// block's innermost loop), a face across z is strided in memory: a GPU reads a sector
/// per point to pack or update it, where faces across x and y come in whole rows. A z
/// weight above 2 keeps z whole wherever cutting x and y more can: 192^3 in 8 units is
/// then 4 x 2 x 1, not 2 x 2 x 2 (Jacobi3D on an H100: 65.1 against 72.8 us per step).
struct CutCosts {
  /// The weight of a cut across each dimension.
  ///@{
  double x = 1, y = 1, z = 1;
  ///@}
};

/// The unit grid (ux, uy, uz), ux*uy*uz == units, that cuts `grid` into cuboids with the
/// least total cut surface, each cut's area weighted by `costs`; ties go to the grid that
/// keeps z (the contiguous dimension) longest, then y (a face across x is one contiguous
/// piece of a LayoutRight block). Every unit gets at least one point per
/// dimension. Throws kodo::Error when `units` < 1, a cost is not a positive finite number,
/// or no such cut exists (e.g. more units than grid points).
Extent3 split_grid(const Extent3& grid, std::int64_t units, const CutCosts& costs = {});

/// The most units units_for_odf() gives: cutting a grid into more (split_grid) and keeping
/// their map take more time and memory per rank than any run would spend.
inline constexpr std::int64_t kMostOdfUnits = std::int64_t{1} << 30;
/// The units of a collection with `odf` units per rank on `ranks` ranks (odf * ranks).
/// Throws kodo::Error naming both when `odf` or `ranks` is below 1 or the product is above
/// kMostOdfUnits (2^30).
std::int64_t units_for_odf(std::int64_t odf, int ranks);

/// A piece of a range of points (block_range).
struct Range {
  /// Its first point, and its number of points.
  ///@{
  std::int64_t begin, size;
  ///@}
};
/// Part `part` of `n` points cut into `parts` nearly equal pieces (the first n % parts
/// pieces are one longer).
Range block_range(std::int64_t n, std::int64_t parts, std::int64_t part);

}  // namespace kodo
