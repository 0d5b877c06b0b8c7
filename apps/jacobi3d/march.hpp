// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// How jacobi3d's kernels run on a device: the launchers (a kernel runs now on a stream, or
// becomes a node of a graph), the update's march along x, and the face copies. Shared by
// kernels.cpp (the plain kernel set) and tuned_kernels.cpp (the variants); jacobi3d's own,
// not for its users.

#include "kernels.hpp"

#include <Kokkos_Graph.hpp>

#include <cstdint>
#include <string>
#include <utility>

namespace jacobi {
// An unnamed namespace, in a header on purpose: each of the two files gets kernels of its
// own. With these templates in a named namespace, kernels instantiated in both files (the
// update's march and the face copies, from update() and from step()) crashed jacobi3d with
// SIGSEGV on an H200 in every run that called step() or update_inner() (CUDA 13, Kokkos
// 4.6.99), where the host backend ran them.
namespace {
using Policy = Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>;
using ReadField =
    Kokkos::View<const double*, Space::memory_space, Kokkos::MemoryTraits<Kokkos::Restrict>>;
using WriteField =
    Kokkos::View<double*, Space::memory_space, Kokkos::MemoryTraits<Kokkos::Restrict>>;

// Every kernel below is written once against a launcher, so the same code either runs
// now on a stream (LaunchOn) or becomes the next node of a graph (LaunchInGraph).
// Kernels give their range and policy type, and the launcher the execution-space
// instance: a policy built without one default-constructs the execution space, which in
// Kokkos' CUDA backend allocates on the heap at every launch.
template <class P>
struct Range {
  typename P::index_type begin, end;
};

struct LaunchOn {
  Space space;
  template <class P, class F>
  void operator()(const char* label, const Range<P>& range, const F& functor) const {
    Kokkos::parallel_for(label, P(space, range.begin, range.end), functor);
  }
};

// Or becomes a kernel of a kodo::KernelBatch, launched with other blocks'.
struct LaunchInBatch {
  kodo::KernelBatch& batch;
  template <class P, class F>
  void operator()(const char* label, const Range<P>& range, F&& functor) const {
    // (a lambda moved in)
    batch.parallel_for(label, P(batch.stream().space(), range.begin, range.end),
                       std::forward<F>(functor));
  }
};

// Marching a longer chunk keeps more x neighbours in registers but leaves fewer threads:
// below some 2^17 threads an H200 is not filled, and a small block runs faster in
// shorter chunks (perf/results/jacobi_kernel_chunks_h200.csv). CPUs have threads to
// spare at any size, and keep the longest chunk.
inline std::int64_t choose_chunk(std::int64_t chunk, std::int64_t columns, std::int64_t nx) {
  if (chunk > 0) return chunk;
  chunk = kUpdateChunk;
  if (kodo::host_build) return chunk;
  while (chunk > 4 && (nx + chunk - 1) / chunk * columns < (std::int64_t{1} << 17)) chunk /= 2;
  return chunk;
}

// A box of interior points: [lo[d], hi[d]) along each dimension d, in padded
// coordinates (a block's whole interior is [1, n[d] + 1)).
struct Box {
  std::int64_t lo[3], hi[3];
  std::int64_t extent(int d) const { return hi[d] - lo[d]; }
  bool empty() const { return extent(0) <= 0 || extent(1) <= 0 || extent(2) <= 0; }
  std::int64_t size() const { return empty() ? 0 : extent(0) * extent(1) * extent(2); }
};

inline Box interior(const BlockShape& s) {
  return {{1, 1, 1}, {s.n[0] + 1, s.n[1] + 1, s.n[2] + 1}};
}

struct LaunchInGraph {
  Kokkos::Experimental::GraphNodeRef<Space> node;
  template <class P, class F>
  void operator()(const char* label, const Range<P>& range, const F& functor) {
    node = node.then_parallel_for(std::string(label), P(range.begin, range.end), functor);
  }
};

// Each thread marches along x through `chunk` points of one (y, z) column of `box`,
// keeping the x neighbours in registers and issuing the loads of the next `Ahead` planes
// before this plane's store; adjacent threads take adjacent z, so loads are coalesced.
template <int Ahead, class Launch, class In, class Out>
void march_ahead(Launch&& launch, const char* label, const In& a, const Out& b, const BlockShape& s,
                 const Box& box, std::int64_t chunk) {
  if (box.empty()) return;
  const std::int64_t sx = (s.n[1] + 2) * (s.n[2] + 2), sy = s.n[2] + 2;
  const std::int64_t nx = box.extent(0), ny = box.extent(1), nz = box.extent(2);
  const std::int64_t x_begin = box.lo[0], x_end = box.hi[0], y_begin = box.lo[1],
                     z_begin = box.lo[2];
  chunk = choose_chunk(chunk, ny * nz, nx);
  const std::int64_t chunks = (nx + chunk - 1) / chunk;
  launch(
      label, Range<Policy>{0, chunks * ny * nz}, KOKKOS_LAMBDA(std::int64_t i) {
        const std::int64_t z = i % nz + z_begin, y = (i / nz) % ny + y_begin, c = i / (nz * ny);
        const std::int64_t x0 = x_begin + c * chunk;
        const std::int64_t x1 = x0 + chunk <= x_end ? x0 + chunk : x_end;
        std::int64_t p = s.at(x0, y, z);
        // ring[0] = plane x-1, ring[1] = x, ring[2..] = x+1 .. x+Ahead (when inside)
        double ring[Ahead + 2];
        for (int k = 0; k < Ahead + 2; ++k) ring[k] = x0 - 1 + k <= x1 ? a(p + (k - 1) * sx) : 0.0;
        for (std::int64_t x = x0; x < x1; ++x, p += sx) {
          const double ym = a(p - sy), yp = a(p + sy), zm = a(p - 1), zp = a(p + 1);
          const double next = x + Ahead + 1 <= x1 ? a(p + (Ahead + 1) * sx) : 0.0;
          b(p) = stencil(ring[1], ring[0], ring[2], ym, yp, zm, zp);
          for (int k = 0; k < Ahead + 1; ++k) ring[k] = ring[k + 1];
          ring[Ahead + 1] = next;
        }
      });
}

// Two neighbouring z points, loaded and stored as one 16-byte access.
struct alignas(16) Pair {
  double lo, hi;
};

// One thread's column of pairs, from padded pair index q through `steps` x planes.
// The pointers are restrict-qualified as parameters (qualifiers on a lambda's captures
// do not reach the compiler). The loop's form matters: a count-down loop compiled to
// code 4% slower on an H200 than this count-up one.
KOKKOS_INLINE_FUNCTION void march_column(const Pair* __restrict__ a, Pair* __restrict__ b,
                                         std::int64_t q, std::int64_t steps, std::int64_t sxq,
                                         std::int64_t syq, bool lo_inside, bool hi_inside) {
  const double* a1 = reinterpret_cast<const double*>(a);
  double* b1 = reinterpret_cast<double*>(b);
  Pair xm = a[q - sxq], cc = a[q];
  for (std::int64_t step = 0; step < steps; ++step) {
    const Pair xp = a[q + sxq], ym = a[q - syq], yp = a[q + syq];
    const double zl = a1[2 * q - 1], zr = a1[2 * q + 2];
    Pair out;
    out.lo = stencil(cc.lo, xm.lo, xp.lo, ym.lo, yp.lo, zl, cc.hi);
    out.hi = stencil(cc.hi, xm.hi, xp.hi, ym.hi, yp.hi, cc.lo, zr);
    if (lo_inside && hi_inside) {
      b[q] = out;
    } else {
      if (lo_inside) b1[2 * q] = out.lo;
      if (hi_inside) b1[2 * q + 1] = out.hi;
    }
    xm = cc;
    cc = xp;
    q += sxq;
  }
}

// The thread layout of every march over pairs of padded z positions (2k, 2k+1): a
// warp takes 32 consecutive pairs of one row (coalesced), and a 128-thread block the
// same pairs of 4 neighbouring rows, so the y neighbours of its inner rows come from L1
// (+4% over one row per block, perf/results/jacobi_kernel_explore_row_tiles_h200.csv).
// Each thread hands its column -- pair k of interior row y (0-based), x planes
// [x0, x1) -- to `column`. The thread index is split with `Index` arithmetic: 32-bit
// when the thread count allows (a 64-bit division is a long software sequence on GPUs);
// offsets into the field stay 64-bit, so a block may exceed 2^31 points.
template <class Index, class Column>
struct PairColumns {
  static constexpr int kRows = 4;
  Column column;
  std::int64_t x_begin, x_end, y_begin, rows, k_begin, pairs, chunk;
  Index pair_tiles, row_tiles;

  KOKKOS_INLINE_FUNCTION void operator()(Index i) const {
    const Index lane = i % 32, warp = i / 32, row = warp % kRows, tile = warp / kRows;
    const std::int64_t k = static_cast<std::int64_t>(tile % pair_tiles) * 32 + lane;
    const std::int64_t y = static_cast<std::int64_t>(tile / pair_tiles % row_tiles) * kRows + row;
    const std::int64_t c = tile / pair_tiles / row_tiles;
    if (k >= pairs || y >= rows) return;
    const std::int64_t x0 = x_begin + c * chunk;
    column(k_begin + k, y_begin + y, x0, x0 + chunk <= x_end ? x0 + chunk : x_end);
  }
};

// The columns of the pairs that hold the points of `box`: pairs k_begin .. k_end - 1
// (the first and last may hold a point outside the box, which `column` must skip).
// Needs padded rows of even length (z extent even), so that pairs are aligned.
// `MinBlocks` thread blocks per SM caps the registers a thread may use: more resident
// warps hide more memory latency, until values spill (see the callers).
template <int MinBlocks, class Launch, class Column>
void for_each_pair_column(Launch&& launch, const char* label, const Box& box, std::int64_t chunk,
                          const Column& column) {
  if (box.empty()) return;
  const std::int64_t nx = box.extent(0), rows = box.extent(1);
  const std::int64_t k_begin = box.lo[2] / 2, pairs = (box.hi[2] + 1) / 2 - k_begin;
  chunk = choose_chunk(chunk, rows * pairs, nx);
  const std::int64_t chunks = (nx + chunk - 1) / chunk;
  const auto run = [&](auto index) {
    using Index = decltype(index);
    using Functor = PairColumns<Index, Column>;
    const Index pair_tiles = (pairs + 31) / 32,
                row_tiles = (rows + Functor::kRows - 1) / Functor::kRows;
    using Policy = Kokkos::RangePolicy<Space, Kokkos::IndexType<Index>,
                                       Kokkos::LaunchBounds<32 * Functor::kRows, MinBlocks>>;
    launch(label,
           Range<Policy>{0,
                         static_cast<Index>(chunks) * row_tiles * pair_tiles * 32 * Functor::kRows},
           Functor{column, box.lo[0], box.hi[0], box.lo[1] - 1, rows, k_begin, pairs, chunk,
                   pair_tiles, row_tiles});
  };
  // Thread count, rounded up to whole tiles of 32 pairs x 4 rows.
  const std::int64_t threads = chunks * ((rows + 3) / 4 * 4) * ((pairs + 31) / 32 * 32);
  if (threads <= std::numeric_limits<std::uint32_t>::max())
    run(std::uint32_t{});
  else
    run(std::int64_t{});
}

// The update of `box` over pairs: every access to the centre, x and y neighbours is a
// 16-byte load; the z neighbours outside the pair are two 8-byte loads. Positions of a
// pair outside the box (ghosts, or points left to another kernel) are read, never
// written.
template <class Launch>
void march_pairs(Launch&& launch, const Field& af, const Field& bf, const BlockShape& s,
                 const Box& box, std::int64_t chunk) {
  const Pair* a = reinterpret_cast<const Pair*>(af.data());
  Pair* b = reinterpret_cast<Pair*>(bf.data());
  const std::int64_t sxq = (s.n[1] + 2) * (s.n[2] + 2) / 2, syq = (s.n[2] + 2) / 2;
  const std::int64_t z_begin = box.lo[2], z_end = box.hi[2];
  // 9 blocks of 128 threads per SM leave 56 registers a thread, no spill: 36 resident
  // warps instead of the 32 that the 60 registers chosen freely allow, 9% faster at
  // 192^3 (perf/results/jacobi_kernel_min_blocks_h200x2.csv).
  for_each_pair_column<9>(
      launch, "jacobi::update_pairs", box, chunk,
      KOKKOS_LAMBDA(std::int64_t k, std::int64_t y, std::int64_t x0, std::int64_t x1) {
        march_column(a, b, x0 * sxq + (y + 1) * syq + k, x1 - x0, sxq, syq, 2 * k >= z_begin,
                     2 * k + 1 < z_end);
      });
}

template <class Launch>
void pack_face_with(Launch&& launch, const Field& a, const BlockShape& s, int f,
                    const Field& buffer) {
  const std::int64_t layer = f % 2 == 0 ? 1 : s.n[f / 2];
  launch(
      "jacobi::pack", Range<Policy>{0, s.face_size(f)},
      KOKKOS_LAMBDA(std::int64_t k) { buffer(k) = a(s.face_point(f, k, layer)); });
}

template <class Launch>
void unpack_face_with(Launch&& launch, const Field& a, const BlockShape& s, int f,
                      const Field& data) {
  const std::int64_t layer = f % 2 == 0 ? 0 : s.n[f / 2] + 1;
  launch(
      "jacobi::unpack", Range<Policy>{0, s.face_size(f)},
      KOKKOS_LAMBDA(std::int64_t k) { a(s.face_point(f, k, layer)) = data(k); });
}

template <class Launch>
void update_with(Launch&& launch, const Field& a, const Field& b, const BlockShape& s,
                 const Box& box, std::int64_t chunk) {
  if constexpr (!kodo::host_build)
    if (s.n[2] % 2 == 0) return march_pairs(launch, a, b, s, box, chunk);
  march_ahead<1>(launch, "jacobi::update", ReadField(a), WriteField(b), s, box, chunk);
}

}  // namespace
}  // namespace jacobi
