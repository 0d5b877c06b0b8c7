// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The Jacobi3D problem, shared by the overdecomposed solver and the serial reference so
// both do exactly the same arithmetic.
//
// Grid: X x Y x Z unknowns, initially 0, surrounded by one layer of fixed boundary
// values. A boundary point at global position (x, y, z), where exactly the coordinate
// that crosses the boundary is -1 or X (Y, Z), holds
//     g(x, y, z) = ((x + 1) + 2 (y + 1) + 3 (z + 1)) / ((X + 1) + 2 (Y + 1) + 3 (Z + 1)),
// a linear ramp from 0 to 1 that differs along every axis, so a transposed or misplaced
// halo changes the answer. Each iteration replaces every unknown by
//     (A + A[x-1] + A[x+1] + A[y-1] + A[y+1] + A[z-1] + A[z+1]) * (1/7)
// summed in that order, times the double nearest 1/7. (A multiply, not a division: a
// double division is a long instruction sequence on GPUs and cost the update kernel
// 13% on an H200, perf/results/jacobi_kernel_explore_division_h200.csv.)

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace jacobi {

struct Grid {
  std::int64_t x, y, z;
};

KOKKOS_INLINE_FUNCTION double boundary_value(const Grid& g, std::int64_t x, std::int64_t y,
                                             std::int64_t z) {
  return static_cast<double>((x + 1) + 2 * (y + 1) + 3 * (z + 1)) /
         static_cast<double>((g.x + 1) + 2 * (g.y + 1) + 3 * (g.z + 1));
}

KOKKOS_INLINE_FUNCTION double stencil(double c, double xm, double xp, double ym, double yp,
                                      double zm, double zp) {
  return (c + xm + xp + ym + yp + zm + zp) * (1.0 / 7.0);
}

// The checksum is a sum, modulo 2^64, of a hash of every unknown's global index and bit
// pattern: it is the same for any decomposition and any summation order, and it
// changes when any bit of any value does.
KOKKOS_INLINE_FUNCTION std::uint64_t point_hash(std::int64_t global_index, double value) {
  std::uint64_t z = Kokkos::bit_cast<std::uint64_t>(value) ^
                    (static_cast<std::uint64_t>(global_index) * 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The whole problem on one thread, with no runtime: the answer every decomposition must
// reproduce bit for bit.
std::uint64_t serial_reference_checksum(const Grid& grid, std::int64_t iterations);
// The same run's checksum and residual (L2 norm of the last update, summed in its own
// order: equal to the solver's up to rounding).
struct SerialResult {
  std::uint64_t checksum = 0;
  double residual = 0;
};
SerialResult serial_reference(const Grid& grid, std::int64_t iterations);

// Which of the task path's kernels go out as kodo::KernelBatch (with the rank's other
// blocks', one launch per kernel) rather than each on its block's stream.
enum class Batches {
  none,   // every kernel on its own
  faces,  // packs and unpacks
  all,    // and the update
};

}  // namespace jacobi
