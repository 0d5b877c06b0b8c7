// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The plain kernel set of a Jacobi3D block (kernels.hpp): what a user of kodo would write,
// with the update's march from march.hpp.
#include "kernels.hpp"

#include "march.hpp"

#if defined(JACOBI_HAVE_KOKKOS_KERNELS)
#include <KokkosBlas1_dot.hpp>
#endif

#include <algorithm>
#include <cstdint>

namespace jacobi {

BlockPlace place_block(const Grid& grid, const kodo::Extent3& blocks, const kodo::Index3& index) {
  const std::int64_t global[3] = {grid.x, grid.y, grid.z},
                     parts[3] = {blocks.x, blocks.y, blocks.z}, at[3] = {index.x, index.y, index.z};
  BlockPlace p{};
  for (int d = 0; d < 3; ++d) {
    const auto r = kodo::block_range(global[d], parts[d], at[d]);
    p.origin[d] = r.begin;
    p.shape.n[d] = r.size;
    p.has_neighbour[2 * d] = at[d] > 0;
    p.has_neighbour[2 * d + 1] = at[d] + 1 < parts[d];
  }
  return p;
}

kodo::Index3 across_face(kodo::Index3 index, int f) {
  (f / 2 == 0 ? index.x : f / 2 == 1 ? index.y : index.z) += f % 2 == 0 ? -1 : 1;
  return index;
}

void init_field(const Field& a, const BlockShape& s, const Grid& g, const std::int64_t origin[3]) {
  const std::int64_t ox = origin[0], oy = origin[1], oz = origin[2];
  Kokkos::parallel_for(
      "jacobi::init", Policy(0, s.padded_size()), KOKKOS_LAMBDA(std::int64_t i) {
        const std::int64_t z = i % (s.n[2] + 2), y = (i / (s.n[2] + 2)) % (s.n[1] + 2),
                           x = i / ((s.n[2] + 2) * (s.n[1] + 2));
        const std::int64_t gx = ox + x - 1, gy = oy + y - 1, gz = oz + z - 1;
        const bool outside = gx < 0 || gy < 0 || gz < 0 || gx >= g.x || gy >= g.y || gz >= g.z;
        a(i) = outside ? boundary_value(g, gx, gy, gz) : 0.0;
      });
}

void pack_face(const Space& space, const Field& a, const BlockShape& s, int f,
               const Field& buffer) {
  pack_face_with(LaunchOn{space}, a, s, f, buffer);
}

void unpack_face(const Space& space, const Field& a, const BlockShape& s, int f,
                 const Field& data) {
  unpack_face_with(LaunchOn{space}, a, s, f, data);
}

void update(const Space& space, const Field& a, const Field& b, const BlockShape& s,
            std::int64_t chunk) {
  update_with(LaunchOn{space}, a, b, s, interior(s), chunk);
}

void pack_face(kodo::KernelBatch& batch, const Field& a, const BlockShape& s, int f,
               const Field& buffer) {
  pack_face_with(LaunchInBatch{batch}, a, s, f, buffer);
}

void unpack_face(kodo::KernelBatch& batch, const Field& a, const BlockShape& s, int f,
                 const Field& data) {
  unpack_face_with(LaunchInBatch{batch}, a, s, f, data);
}

void update(kodo::KernelBatch& batch, const Field& a, const Field& b, const BlockShape& s) {
  update_with(LaunchInBatch{batch}, a, b, s, interior(s), kAutoChunk);
}

#if defined(JACOBI_HAVE_KOKKOS_KERNELS)
// Kokkos Kernels' dot takes vectors, and the interior of a padded block is not one: the
// difference goes through a scratch vector, a slab of x planes at a time, so the scratch
// stays bounded (by default 2^24 points, 128 MiB) however large the block.
double difference_squares(const Space& space, const Field& a, const Field& b, const BlockShape& s,
                          std::int64_t scratch_points) {
  const std::int64_t plane = s.n[1] * s.n[2];
  const std::int64_t planes = std::min(s.n[0], std::max<std::int64_t>(1, scratch_points / plane));
  const Field d(Kokkos::view_alloc(Kokkos::WithoutInitializing, "jacobi::difference"),
                planes * plane);
  double sum = 0;
  for (std::int64_t x0 = 0; x0 < s.n[0]; x0 += planes) {
    const std::int64_t count = std::min(planes, s.n[0] - x0) * plane;
    Kokkos::parallel_for(
        "jacobi::difference", Policy(space, 0, count), KOKKOS_LAMBDA(std::int64_t i) {
          const std::int64_t z = i % s.n[2], y = (i / s.n[2]) % s.n[1], x = x0 + i / plane;
          const std::int64_t c = s.at(x + 1, y + 1, z + 1);
          d(i) = a(c) - b(c);
        });
    const auto part = Kokkos::subview(d, Kokkos::make_pair(std::int64_t{0}, count));
    sum += KokkosBlas::dot(space, part, part);  // fences `space`
  }
  return sum;
}

const char* residual_method() { return "Kokkos Kernels dot"; }
#else
double difference_squares(const Space& space, const Field& a, const Field& b, const BlockShape& s,
                          std::int64_t /*scratch_points: no scratch here*/) {
  Kokkos::View<double, Space::memory_space> result("jacobi::difference");
  Kokkos::parallel_reduce(
      "jacobi::difference", Policy(space, 0, s.interior_size()),
      KOKKOS_LAMBDA(std::int64_t i, double& acc) {
        const std::int64_t z = i % s.n[2], y = (i / s.n[2]) % s.n[1], x = i / (s.n[2] * s.n[1]);
        const std::int64_t c = s.at(x + 1, y + 1, z + 1);
        acc += (a(c) - b(c)) * (a(c) - b(c));
      },
      result);
  double sum = 0;
  Kokkos::deep_copy(space, sum, result);
  space.fence("jacobi::difference");
  return sum;
}

const char* residual_method() { return "Kokkos reduction"; }
#endif

std::uint64_t checksum(const Space& space, const Field& a, const BlockShape& s, const Grid& g,
                       const std::int64_t origin[3]) {
  const std::int64_t ox = origin[0], oy = origin[1], oz = origin[2];
  // Into device memory, then copied: reducing straight into a host scalar on a stream
  // instance let the device write the host stack on an H200 (Kokkos 4.6, CUDA 13).
  Kokkos::View<std::uint64_t, Space::memory_space> result("jacobi::checksum");
  Kokkos::parallel_reduce(
      "jacobi::checksum", Policy(space, 0, s.interior_size()),
      KOKKOS_LAMBDA(std::int64_t i, std::uint64_t& acc) {
        const std::int64_t z = i % s.n[2], y = (i / s.n[2]) % s.n[1], x = i / (s.n[2] * s.n[1]);
        const std::int64_t global = ((ox + x) * g.y + (oy + y)) * g.z + (oz + z);
        acc += point_hash(global, a(s.at(x + 1, y + 1, z + 1)));
      },
      result);
  std::uint64_t sum = 0;
  Kokkos::deep_copy(space, sum, result);
  space.fence("jacobi::checksum");
  return sum;
}

}  // namespace jacobi
