// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The plain kernels of a Jacobi3D block, as free functions (nvcc does not allow device
// lambdas inside private member functions): initialise, pack and unpack a face, update,
// the residual and the checksum. What --fusion, --graphs and --overlap run instead is in
// tuned_kernels.hpp.

#include "jacobi.hpp"

#include <kodo/kodo.hpp>

#include <cstdint>
#include <string>

namespace jacobi {

using Space = Kokkos::DefaultExecutionSpace;
using Field = Kokkos::View<double*, Space::memory_space>;

// Faces are numbered 2 * dimension + side: 0 -x, 1 +x, 2 -y, 3 +y, 4 -z, 5 +z.
struct BlockShape {
  std::int64_t n[3];  // interior points per dimension

  KOKKOS_INLINE_FUNCTION std::int64_t at(std::int64_t x, std::int64_t y, std::int64_t z) const {
    return (x * (n[1] + 2) + y) * (n[2] + 2) + z;
  }
  KOKKOS_INLINE_FUNCTION std::int64_t padded_size() const {
    return (n[0] + 2) * (n[1] + 2) * (n[2] + 2);
  }
  KOKKOS_INLINE_FUNCTION std::int64_t interior_size() const { return n[0] * n[1] * n[2]; }
  // Points on face f: the product of the other two extents.
  KOKKOS_INLINE_FUNCTION std::int64_t face_size(int f) const {
    const int d = f / 2;
    return n[(d + 1) % 3] * n[(d + 2) % 3];
  }
  // Padded index of point k of face f, in the layer at coordinate `layer` along the
  // face's normal; k runs over the other two dimensions in increasing order.
  KOKKOS_INLINE_FUNCTION std::int64_t face_point(int f, std::int64_t k, std::int64_t layer) const {
    const int d = f / 2;
    const int a = d == 0 ? 1 : 0, b = d == 2 ? 1 : 2;  // the other dimensions, in order
    std::int64_t c[3];
    c[d] = layer;
    c[a] = k / n[b] + 1;
    c[b] = k % n[b] + 1;
    return at(c[0], c[1], c[2]);
  }
};

// How jacobi3d cuts its grid into blocks (kodo::split_grid): z is a block's contiguous
// dimension, so a face across z is strided in memory and its kernels cost several times
// those of a face across x or y; cuts across z come last. Measured on an H100 (one rank,
// --overlap, us per iteration): 192^3 in 8 blocks 65.1 as 4 x 2 x 1 against 72.8 as
// 2 x 2 x 2; 384^3 in 16 411.7 as 4 x 4 x 1 against 447.6 as 4 x 2 x 2; 768^3 in 8
// 2883.9 against 2979.5 (perf/results/jacobi3d_unit_shapes_h100.csv). Host backends
// use the same cut (not measured there).
inline constexpr kodo::CutCosts kCutCosts{1, 1, 4};

// Block `index` of `grid` cut into `blocks` (kodo::block_range along each axis): its
// shape, the global coordinates of its first interior point, and which faces have a
// neighbouring block.
struct BlockPlace {
  BlockShape shape;
  std::int64_t origin[3];
  bool has_neighbour[6];
};
BlockPlace place_block(const Grid& grid, const kodo::Extent3& blocks, const kodo::Index3& index);
// The block across face f of block `index`.
kodo::Index3 across_face(kodo::Index3 index, int f);

// Interior 0; ghosts on the global boundary hold boundary_value(); ghosts facing a
// neighbour are left to its faces.
void init_field(const Field& a, const BlockShape& s, const Grid& g, const std::int64_t origin[3]);
// Copies the interior layer next to face f into `buffer`.
void pack_face(const Space& space, const Field& a, const BlockShape& s, int f, const Field& buffer);
// Copies `data` into the ghost layer of face f.
void unpack_face(const Space& space, const Field& a, const BlockShape& s, int f, const Field& data);
// The same two as kernels of a batch (kodo::KernelBatch): launched with the other
// blocks' of the rank, as one kernel.
void pack_face(kodo::KernelBatch& batch, const Field& a, const BlockShape& s, int f,
               const Field& buffer);
void unpack_face(kodo::KernelBatch& batch, const Field& a, const BlockShape& s, int f,
                 const Field& data);
// One Jacobi update: the interior of b from a. Each thread marches along x through
// `chunk` points of one (y, z) column, keeping the x neighbours in registers; adjacent
// threads take adjacent z, so loads are coalesced. On GPUs, blocks with an even z
// extent use 16-byte accesses to pairs of z points, and a thread block covers four
// neighbouring rows. Chosen over the alternatives in perf/results/jacobi_kernel_*_h200.csv.
// `chunk` kAutoChunk picks kUpdateChunk, on GPUs halved (down to 4) while the block has
// too few columns to fill the GPU with threads.
inline constexpr std::int64_t kUpdateChunk = 32;
inline constexpr std::int64_t kAutoChunk = 0;
void update(const Space& space, const Field& a, const Field& b, const BlockShape& s,
            std::int64_t chunk = kAutoChunk);
// The update as a kernel of a batch.
void update(kodo::KernelBatch& batch, const Field& a, const Field& b, const BlockShape& s);
// Sum over the block's interior of (a - b)^2: with a and b two successive iterates,
// the squared norm of the last update (the residual jacobi3d reports).
// Through Kokkos Kernels' BLAS dot when the build has Kokkos Kernels (the interior
// difference copied to a scratch vector, at most `scratch_points` at a time), a Kokkos
// reduction otherwise; residual_method() names which.
double difference_squares(const Space& space, const Field& a, const Field& b, const BlockShape& s,
                          std::int64_t scratch_points = std::int64_t{1} << 24);
const char* residual_method();
// Sum of point_hash over the block's interior.
std::uint64_t checksum(const Space& space, const Field& a, const BlockShape& s, const Grid& g,
                       const std::int64_t origin[3]);

}  // namespace jacobi
