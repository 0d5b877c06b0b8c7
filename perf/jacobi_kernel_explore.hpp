#pragma once
// Experimental Jacobi update kernels for jacobi_kernel_bench (not used by the app).
#include <kernels.hpp>

namespace explore {

using jacobi::BlockShape;
using jacobi::Field;
using jacobi::Space;
using Policy = Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>;

struct alignas(16) Pair {
  double lo, hi;
};

template <bool Mul>
KOKKOS_INLINE_FUNCTION double st(double c, double xm, double xp, double ym, double yp, double zm,
                                 double zp) {
  const double sum = c + xm + xp + ym + yp + zm + zp;
  if constexpr (Mul) return sum * (1.0 / 7.0);
  else return sum / 7.0;
}

// W columns marched together (each a pair of z points), so W independent 16-byte
// DRAM loads are in flight per thread and step.
template <int W, bool Mul>
KOKKOS_INLINE_FUNCTION void march(const Pair* __restrict__ a, Pair* __restrict__ b,
                                  const std::int64_t (&q0)[W], const bool (&on)[W],
                                  const bool (&lo)[W], const bool (&hi)[W], std::int64_t steps,
                                  std::int64_t sxq, std::int64_t syq) {
  const double* a1 = reinterpret_cast<const double*>(a);
  double* b1 = reinterpret_cast<double*>(b);
  std::int64_t q[W];
  Pair xm[W], cc[W];
  for (int w = 0; w < W; ++w) {
    q[w] = on[w] ? q0[w] : q0[0];
    xm[w] = a[q[w] - sxq];
    cc[w] = a[q[w]];
  }
  for (std::int64_t s = 0; s < steps; ++s) {
    Pair xp[W];
    for (int w = 0; w < W; ++w) xp[w] = a[q[w] + sxq];
    for (int w = 0; w < W; ++w) {
      const Pair ym = a[q[w] - syq], yp = a[q[w] + syq];
      const double zl = a1[2 * q[w] - 1], zr = a1[2 * q[w] + 2];
      Pair out;
      out.lo = st<Mul>(cc[w].lo, xm[w].lo, xp[w].lo, ym.lo, yp.lo, zl, cc[w].hi);
      out.hi = st<Mul>(cc[w].hi, xm[w].hi, xp[w].hi, ym.hi, yp.hi, cc[w].lo, zr);
      if (on[w]) {
        if (lo[w] && hi[w]) {
          b[q[w]] = out;
        } else {
          if (lo[w]) b1[2 * q[w]] = out.lo;
          if (hi[w]) b1[2 * q[w] + 1] = out.hi;
        }
      }
      xm[w] = cc[w];
      cc[w] = xp[w];
      q[w] += sxq;
    }
  }
}

struct Geometry {
  std::int64_t sxq, syq, nx, ny, nz, pairs;
  explicit Geometry(const BlockShape& s)
      : sxq((s.n[1] + 2) * (s.n[2] + 2) / 2), syq((s.n[2] + 2) / 2), nx(s.n[0]), ny(s.n[1]),
        nz(s.n[2]), pairs((s.n[2] + 2) / 2) {}
};

// One column per thread (the app's kernel, raw pointers).
template <bool Mul>
void pairs1(const Space& space, const Field& af, const Field& bf, const BlockShape& s, std::int64_t chunk) {
  const Pair* a = reinterpret_cast<const Pair*>(af.data());
  Pair* b = reinterpret_cast<Pair*>(bf.data());
  const Geometry g(s);
  const std::int64_t chunks = (g.nx + chunk - 1) / chunk;
  Kokkos::parallel_for("explore::pairs1", Policy(space, 0, chunks * g.ny * g.pairs), KOKKOS_LAMBDA(std::int64_t i) {
    const std::int64_t k = i % g.pairs, y = (i / g.pairs) % g.ny, c = i / (g.pairs * g.ny);
    const std::int64_t x0 = c * chunk + 1, x1 = x0 + chunk <= g.nx + 1 ? x0 + chunk : g.nx + 1;
    const std::int64_t q0[1] = {x0 * g.sxq + (y + 1) * g.syq + k};
    const bool on[1] = {true}, lo[1] = {k > 0}, hi[1] = {2 * k + 1 <= g.nz};
    march<1, Mul>(a, b, q0, on, lo, hi, x1 - x0, g.sxq, g.syq);
  });
}

// Two columns per thread, 32 pairs apart: a warp covers 64 consecutive pairs, loads
// stay coalesced.
template <bool Mul>
void pairs_interleaved(const Space& space, const Field& af, const Field& bf, const BlockShape& s,
                       std::int64_t chunk) {
  const Pair* a = reinterpret_cast<const Pair*>(af.data());
  Pair* b = reinterpret_cast<Pair*>(bf.data());
  const Geometry g(s);
  const std::int64_t chunks = (g.nx + chunk - 1) / chunk, tiles = (g.pairs + 63) / 64;
  Kokkos::parallel_for("explore::pairs_interleaved", Policy(space, 0, chunks * g.ny * tiles * 32),
                       KOKKOS_LAMBDA(std::int64_t i) {
    const std::int64_t lane = i % 32, t = (i / 32) % tiles, y = (i / (32 * tiles)) % g.ny,
                       c = i / (32 * tiles * g.ny);
    const std::int64_t x0 = c * chunk + 1, x1 = x0 + chunk <= g.nx + 1 ? x0 + chunk : g.nx + 1;
    const std::int64_t k0 = t * 64 + lane, k1 = k0 + 32;
    const std::int64_t base = x0 * g.sxq + (y + 1) * g.syq;
    const std::int64_t q0[2] = {base + k0, base + k1};
    const bool on[2] = {k0 < g.pairs, k1 < g.pairs};
    const bool lo[2] = {k0 > 0, true}, hi[2] = {2 * k0 + 1 <= g.nz, 2 * k1 + 1 <= g.nz};
    if (!on[0]) return;
    march<2, Mul>(a, b, q0, on, lo, hi, x1 - x0, g.sxq, g.syq);
  });
}

// Two columns per thread: the same (y, pair) in the two halves of x.
template <bool Mul>
void pairs_two_halves(const Space& space, const Field& af, const Field& bf, const BlockShape& s,
                      std::int64_t chunk) {
  const Pair* a = reinterpret_cast<const Pair*>(af.data());
  Pair* b = reinterpret_cast<Pair*>(bf.data());
  const Geometry g(s);
  const std::int64_t half = g.nx / 2, chunks = half / chunk;  // bench sizes divide evenly
  Kokkos::parallel_for("explore::pairs_two_halves", Policy(space, 0, chunks * g.ny * g.pairs),
                       KOKKOS_LAMBDA(std::int64_t i) {
    const std::int64_t k = i % g.pairs, y = (i / g.pairs) % g.ny, c = i / (g.pairs * g.ny);
    const std::int64_t x0 = c * chunk + 1;
    const std::int64_t base = x0 * g.sxq + (y + 1) * g.syq + k;
    const std::int64_t q0[2] = {base, base + half * g.sxq};
    const bool on[2] = {true, true}, lo[2] = {k > 0, k > 0};
    const bool hi[2] = {2 * k + 1 <= g.nz, 2 * k + 1 <= g.nz};
    march<2, Mul>(a, b, q0, on, lo, hi, chunk, g.sxq, g.syq);
  });
}

// pairs1 with the thread index split in 32-bit arithmetic (64-bit division is a long
// software sequence) and an optional register cap through launch bounds.
template <bool Mul, unsigned MinBlocks = 0>
void pairs1_u32(const Space& space, const Field& af, const Field& bf, const BlockShape& s,
                std::int64_t chunk) {
  const Pair* a = reinterpret_cast<const Pair*>(af.data());
  Pair* b = reinterpret_cast<Pair*>(bf.data());
  const Geometry g(s);
  const std::uint32_t chunks = (g.nx + chunk - 1) / chunk, ny = g.ny, pairs = g.pairs;
  using P = std::conditional_t<MinBlocks == 0, Kokkos::RangePolicy<Space, Kokkos::IndexType<std::uint32_t>>,
                               Kokkos::RangePolicy<Space, Kokkos::IndexType<std::uint32_t>,
                                                   Kokkos::LaunchBounds<128, MinBlocks>>>;
  Kokkos::parallel_for("explore::pairs1_u32", P(space, 0, chunks * ny * pairs), KOKKOS_LAMBDA(std::uint32_t i) {
    const std::uint32_t k = i % pairs, rest = i / pairs, y = rest % ny, c = rest / ny;
    const std::int64_t x0 = std::int64_t(c) * chunk + 1, x1 = x0 + chunk <= g.nx + 1 ? x0 + chunk : g.nx + 1;
    const std::int64_t q0[1] = {x0 * g.sxq + (y + 1) * g.syq + k};
    const bool on[1] = {true}, lo[1] = {k > 0}, hi[1] = {2 * k + 1 <= g.nz};
    march<1, Mul>(a, b, q0, on, lo, hi, x1 - x0, g.sxq, g.syq);
  });
}

// Interleaved, 32-bit index split.
template <bool Mul>
void interleaved_u32(const Space& space, const Field& af, const Field& bf, const BlockShape& s,
                     std::int64_t chunk) {
  const Pair* a = reinterpret_cast<const Pair*>(af.data());
  Pair* b = reinterpret_cast<Pair*>(bf.data());
  const Geometry g(s);
  const std::uint32_t chunks = (g.nx + chunk - 1) / chunk, tiles = (g.pairs + 63) / 64, ny = g.ny;
  Kokkos::parallel_for("explore::interleaved_u32",
                       Kokkos::RangePolicy<Space, Kokkos::IndexType<std::uint32_t>>(space, 0, chunks * ny * tiles * 32),
                       KOKKOS_LAMBDA(std::uint32_t i) {
    const std::uint32_t lane = i % 32, r = i / 32, t = r % tiles, y = (r / tiles) % ny, c = r / tiles / ny;
    const std::int64_t x0 = std::int64_t(c) * chunk + 1, x1 = x0 + chunk <= g.nx + 1 ? x0 + chunk : g.nx + 1;
    const std::int64_t k0 = t * 64 + lane, k1 = k0 + 32;
    const std::int64_t base = x0 * g.sxq + (y + 1) * g.syq;
    const std::int64_t q0[2] = {base + k0, base + k1};
    const bool on[2] = {k0 < g.pairs, k1 < g.pairs};
    const bool lo[2] = {k0 > 0, true}, hi[2] = {2 * k0 + 1 <= g.nz, 2 * k1 + 1 <= g.nz};
    if (!on[0]) return;
    march<2, Mul>(a, b, q0, on, lo, hi, x1 - x0, g.sxq, g.syq);
  });
}

// Warps of 32 consecutive pairs, Rows warps of neighbouring y rows per block, so the
// y neighbours of inner rows come from L1.
template <int Rows>
void tiled_rows(const Space& space, const Field& af, const Field& bf, const BlockShape& s, std::int64_t chunk) {
  const Pair* a = reinterpret_cast<const Pair*>(af.data());
  Pair* b = reinterpret_cast<Pair*>(bf.data());
  const Geometry g(s);
  const std::uint32_t chunks = (g.nx + chunk - 1) / chunk, kt = (g.pairs + 31) / 32, yt = (g.ny + Rows - 1) / Rows;
  Kokkos::parallel_for("explore::tiled_rows",
                       Kokkos::RangePolicy<Space, Kokkos::IndexType<std::uint32_t>, Kokkos::LaunchBounds<32 * Rows, 1>>(
                           space, 0, chunks * yt * kt * 32 * Rows),
                       KOKKOS_LAMBDA(std::uint32_t i) {
    const std::uint32_t lane = i % 32, r = i / 32, yy = r % Rows, r2 = r / Rows, t = r2 % kt, r3 = r2 / kt,
                        ty = r3 % yt, c = r3 / yt;
    const std::int64_t k = t * 32 + lane, y = ty * Rows + yy;
    if (k >= g.pairs || y >= g.ny) return;
    const std::int64_t x0 = std::int64_t(c) * chunk + 1, x1 = x0 + chunk <= g.nx + 1 ? x0 + chunk : g.nx + 1;
    const std::int64_t q0[1] = {x0 * g.sxq + (y + 1) * g.syq + k};
    const bool on[1] = {true}, lo[1] = {k > 0}, hi[1] = {2 * k + 1 <= g.nz};
    march<1, true>(a, b, q0, on, lo, hi, x1 - x0, g.sxq, g.syq);
  });
}

// The memory roofline with 16-byte accesses.
inline void copy_pairs(const Space& space, const Field& af, const Field& bf, const BlockShape& s) {
  const Pair* a = reinterpret_cast<const Pair*>(af.data());
  Pair* b = reinterpret_cast<Pair*>(bf.data());
  Kokkos::parallel_for("explore::copy_pairs", Policy(space, 0, s.padded_size() / 2),
                       KOKKOS_LAMBDA(std::int64_t i) { b[i] = a[i]; });
}

// 16-byte copy, four accesses per thread, 32 apart (coalesced per warp).
inline void copy_pairs4(const Space& space, const Field& af, const Field& bf, const BlockShape& s) {
  const Pair* a = reinterpret_cast<const Pair*>(af.data());
  Pair* b = reinterpret_cast<Pair*>(bf.data());
  const std::int64_t n = s.padded_size() / 2;
  Kokkos::parallel_for("explore::copy_pairs4", Policy(space, 0, (n + 127) / 128 * 32),
                       KOKKOS_LAMBDA(std::int64_t i) {
    const std::int64_t base = (i / 32) * 128 + i % 32;
    Pair v[4];
    for (int w = 0; w < 4; ++w)
      if (base + 32 * w < n) v[w] = a[base + 32 * w];
    for (int w = 0; w < 4; ++w)
      if (base + 32 * w < n) b[base + 32 * w] = v[w];
  });
}

}  // namespace explore
