// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// MiniMD's per-step kernels on one device: the Lennard-Jones force over full neighbour
// lists and the list build, as apps/minimd runs them and in the alternatives tried
// against them. The system is the app's (an FCC lattice at density 0.8442, atoms
// displaced at random by up to 0.1, periodic images as ghosts, own atoms in bin order).
// The app keeps positions in columns (x, y, z each contiguous) and lists in quads (four
// neighbours of an atom in 16 bytes, 32 atoms side by side), and its force loads a quad's
// four neighbours before using any; the alternatives run over lists of ints laid out
// atom-fastest (the app's before quads): other look-aheads, rows of three, rows padded to
// 32 bytes, several threads per atom, and half lists and cluster pairs
// (minimd_cluster_pairs.hpp); for the list build, ints (the app's before quads), bin by
// bin (before it read a stencil row as one range) over padded rows, rows, and columns
// with one atomic per atom for the longest list or with none, and two probes (no stores,
// float positions). Every force variant must match the app's forces (bitwise where the
// summation order is the same); every list variant must list the same neighbours. The
// program fails if not. Variants removed since (their results are in perf/results): the
// bench's own quads, before the app took them, and launch bounds on the force (run 81).
//
//   minimd_kernel_bench [--sizes 32,64,100] [--reps 20] [--csv FILE]
//
// A size is S: S^3 unit cells, 4 S^3 atoms.

#include "minimd_cluster_pairs.hpp"
#include "options.hpp"
#include "report.hpp"

#include <kodo/kodo.hpp>

#include <minimd/kernels.hpp>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <functional>
#include <random>
#include <type_traits>
#include <vector>

namespace {

using minimd::Device;
using minimd::for_each_candidate;
using minimd::Indices;
using minimd::Memory;
using minimd::NeighborList;
using minimd::Vectors;

// A position padded to 32 bytes: one aligned sector per gather instead of three loads
// that may straddle two.
struct alignas(32) Atom {
  double x, y, z, pad;
};
using Atoms = Kokkos::View<Atom*, Memory>;
using GatheredAtoms = Kokkos::View<const Atom*, Memory, Kokkos::MemoryTraits<Kokkos::RandomAccess>>;
// The app's lists before quads: ints laid out atom-fastest (the device's layout).
using IntList = Kokkos::View<int**, Memory>;
// Lists with each atom's neighbours contiguous, for several lanes per atom.
using RowList = Kokkos::View<int**, Kokkos::LayoutRight, Memory>;

using cluster_pairs::Force3;
}  // namespace

namespace {

// The Lennard-Jones force divided by the distance, written as the app writes it.
KOKKOS_INLINE_FUNCTION double lj_force(const minimd::Potential& p, double rsq) {
  const double sr2 = 1.0 / rsq;
  const double sr6 = sr2 * sr2 * sr2 * p.sigma6;
  return 48.0 * sr6 * (sr6 - 0.5) * sr2 * p.epsilon;
}

void pad(const Device& space, Vectors x, int n, Atoms out) {
  Kokkos::parallel_for(
      "bench::pad", Kokkos::RangePolicy<Device>(space, 0, n),
      KOKKOS_LAMBDA(int i) { out(i) = Atom{x(i, 0), x(i, 1), x(i, 2), 0.0}; });
}

// The app's full-list loop, reading padded positions.
void force_padded(const Device& space, GatheredAtoms x, Vectors f, int nlocal, IntList neighbors,
                  Indices count, minimd::Potential p) {
  Kokkos::parallel_for(
      "bench::force_padded", Kokkos::RangePolicy<Device>(space, 0, nlocal), KOKKOS_LAMBDA(int i) {
        const Atom a = x(i);
        double fx = 0, fy = 0, fz = 0;
        const int n = count(i);
        for (int k = 0; k < n; ++k) {
          const Atom b = x(neighbors(i, k));
          const double dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
          const double rsq = dx * dx + dy * dy + dz * dz;
          if (rsq < p.cutoff_sq) {
            const double force = lj_force(p, rsq);
            fx += dx * force;
            fy += dy * force;
            fz += dz * force;
          }
        }
        f(i, 0) = fx;
        f(i, 1) = fy;
        f(i, 2) = fz;
      });
}

// Positions as rows of three doubles (the app's layout before it took columns).
using Rows = Kokkos::View<double* [3], Kokkos::LayoutRight, Memory>;

// The plain full-list loop with the next `U` neighbours' positions loaded before any of
// them is used, over positions of either layout; the sums keep the list's order.

template <int U, class Positions>
void force_unrolled(const Device& space, Positions x_, Vectors f, int nlocal, IntList neighbors,
                    Indices count, minimd::Potential p) {
  using Gathered = Kokkos::View<const double* [3], typename Positions::array_layout, Memory,
                                Kokkos::MemoryTraits<Kokkos::RandomAccess>>;
  const Gathered x = x_;
  Kokkos::parallel_for(
      "bench::force_unrolled", Kokkos::RangePolicy<Device>(space, 0, nlocal), KOKKOS_LAMBDA(int i) {
        const double xi = x(i, 0), yi = x(i, 1), zi = x(i, 2);
        double fx = 0, fy = 0, fz = 0;
        const int n = count(i);
        for (int k0 = 0; k0 < n; k0 += U) {
          double dx[U], dy[U], dz[U];
          for (int u = 0; u < U; ++u) {
            const int j = k0 + u < n ? neighbors(i, k0 + u) : i;
            dx[u] = xi - x(j, 0);
            dy[u] = yi - x(j, 1);
            dz[u] = zi - x(j, 2);
          }
          for (int u = 0; u < U; ++u) {
            const double rsq = dx[u] * dx[u] + dy[u] * dy[u] + dz[u] * dz[u];
            if (k0 + u < n && rsq < p.cutoff_sq) {
              const double force = lj_force(p, rsq);
              fx += dx[u] * force;
              fy += dy[u] * force;
              fz += dz[u] * force;
            }
          }
        }
        f(i, 0) = fx;
        f(i, 1) = fy;
        f(i, 2) = fz;
      });
}

// `lanes` threads per atom, each over every lanes-th neighbour, then a tree sum.
void force_lanes(const Device& space, GatheredAtoms x, Vectors f, int nlocal, RowList neighbors,
                 Indices count, minimd::Potential p, int lanes) {
  using Policy = Kokkos::TeamPolicy<Device>;
  // Host backends run teams of one thread (their vector length is 1).
  const int team = std::is_same_v<Device, Kokkos::DefaultHostExecutionSpace> ? 1 : 128 / lanes;
  Kokkos::parallel_for(
      "bench::force_lanes", Policy(space, (nlocal + team - 1) / team, team, lanes),
      KOKKOS_LAMBDA(const Policy::member_type& m) {
        const int i = m.league_rank() * team + m.team_rank();
        if (i >= nlocal) return;
        const Atom a = x(i);
        Force3 sum;
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(m, count(i)),
            [&](int k, Force3& s) {
              const Atom b = x(neighbors(i, k));
              const double dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
              const double rsq = dx * dx + dy * dy + dz * dz;
              if (rsq < p.cutoff_sq) {
                const double force = lj_force(p, rsq);
                s.x += dx * force;
                s.y += dy * force;
                s.z += dz * force;
              }
            },
            sum);
        Kokkos::single(Kokkos::PerThread(m), [&]() {
          f(i, 0) = sum.x;
          f(i, 1) = sum.y;
          f(i, 2) = sum.z;
        });
      });
}

using GatheredRows = Kokkos::View<const double* [3], Kokkos::LayoutRight, Memory,
                                  Kokkos::MemoryTraits<Kokkos::RandomAccess>>;
using GatheredColumns = Kokkos::View<const double* [3], Kokkos::LayoutLeft, Memory,
                                     Kokkos::MemoryTraits<Kokkos::RandomAccess>>;
KOKKOS_INLINE_FUNCTION Atom at(const GatheredAtoms& x, int j) { return x(j); }
KOKKOS_INLINE_FUNCTION Atom at(const GatheredColumns& x, int j) {
  return Atom{x(j, 0), x(j, 1), x(j, 2), 0.0};
}
KOKKOS_INLINE_FUNCTION Atom at(const GatheredRows& x, int j) {
  return Atom{x(j, 0), x(j, 1), x(j, 2), 0.0};
}

// The app's list build as it was before it read a stencil row's bins as one range (bin
// by bin), reading padded positions, rows or columns; without the longest list, or
// (`longest`) with one atomic max per atom into it, as the app did before it took a
// separate reduction for the longest list.
template <class Positions>
void build_with(const Device& space, Positions x, int nlocal, const minimd::BinGrid& grid,
                minimd::Stencil stencil, Indices bin_of, Indices bin_start, Indices bin_atoms,
                double cutoff, IntList neighbors, Indices count, minimd::Counters longest = {}) {
  const double cutoff_sq = cutoff * cutoff;
  const int most = static_cast<int>(neighbors.extent(1));
  const int rows = static_cast<int>(stencil.extent(0));
  Kokkos::parallel_for(
      "bench::build_with", Kokkos::RangePolicy<Device>(space, 0, nlocal), KOKKOS_LAMBDA(int i) {
        const Atom a = at(x, i);
        const int bin = bin_of(i);
        const int bx = bin % grid.count[0];
        const int by = (bin / grid.count[0]) % grid.count[1];
        const int bz = bin / (grid.count[0] * grid.count[1]);
        int n = 0;
        // Bin by bin, each with its own bounds (the app reads a row's bins as one range).
        for (int r = 0; r < rows; ++r)
          for (int s = stencil(r, 2); s <= stencil(r, 3); ++s) {
            const int cx = bx + s, cy = by + stencil(r, 0), cz = bz + stencil(r, 1);
            if (cx < 0 || cy < 0 || cz < 0 || cx >= grid.count[0] || cy >= grid.count[1] ||
                cz >= grid.count[2])
              continue;
            const int other = (cz * grid.count[1] + cy) * grid.count[0] + cx;
            for (int q = bin_start(other); q < bin_start(other + 1); ++q) {
              const int j = bin_atoms(q);
              if (j == i) continue;
              const Atom b = at(x, j);
              const double dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
              if (dx * dx + dy * dy + dz * dz <= cutoff_sq) {
                if (n < most) neighbors(i, n) = j;
                ++n;
              }
            }
          }
        count(i) = n;
        if (longest.extent(0) > 0)
          Kokkos::atomic_max(&longest(minimd::most_neighbors), static_cast<std::int64_t>(n));
      });
}

// The app's build (a stencil row's bins as one range) in two probes of where its time
// goes: `Write` false counts the neighbours without writing the list (the cost of the
// scattered list stores is the difference), and positions of float (half the bytes per
// gather; distances tested against the cutoff plus a margin that covers float rounding,
// so the lists hold every pair the app's do, and a few beyond).
template <bool Write, class Real>
void build_rows(const Device& space,
                Kokkos::View<const Real* [3], Kokkos::LayoutLeft, Memory,
                             Kokkos::MemoryTraits<Kokkos::RandomAccess>>
                    x,
                int nlocal, const minimd::BinGrid& grid, minimd::Stencil stencil, Indices bin_of,
                Indices bin_start, Indices bin_atoms, double cutoff, IntList neighbors,
                Indices count) {
  const Real cutoff_sq =
      static_cast<Real>(cutoff * cutoff * (std::is_same_v<Real, float> ? 1.0001 : 1.0));
  const int most = static_cast<int>(neighbors.extent(1));
  Kokkos::parallel_for(
      "bench::build_rows", Kokkos::RangePolicy<Device>(space, 0, nlocal), KOKKOS_LAMBDA(int i) {
        const Real xi = x(i, 0), yi = x(i, 1), zi = x(i, 2);
        int n = 0;
        for_each_candidate(grid, stencil, bin_start, bin_atoms, bin_of(i), i, [&](int j) {
          const Real dx = xi - x(j, 0), dy = yi - x(j, 1), dz = zi - x(j, 2);
          if (dx * dx + dy * dy + dz * dz <= cutoff_sq) {
            if (Write && n < most) neighbors(i, n) = j;
            ++n;
          }
        });
        count(i) = n;
      });
}

// Whether list b holds every neighbour list the app's a holds (b may hold more).
bool holds_lists(NeighborList a, Indices ca, IntList b, Indices cb, int n) {
  const auto ha = a.to_host();
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  auto hca = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ca);
  auto hcb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), cb);
  for (int i = 0; i < n; ++i) {
    std::vector<int> mine;
    for (int k = 0; k < hcb(i); ++k) mine.push_back(hb(i, k));
    std::sort(mine.begin(), mine.end());
    for (int k = 0; k < hca(i); ++k)
      if (!std::binary_search(mine.begin(), mine.end(), ha(i, k))) return false;
  }
  return true;
}

// The test system: own atoms [0, nlocal) sorted into bins, periodic images within the
// neighbour cutoff after them.
struct System {
  Vectors x;
  int nlocal = 0, nall = 0;
  minimd::BinGrid grid{};
};

System make_system(int cells, double cut, double bin_size, Device space) {
  const double a = std::cbrt(4.0 / 0.8442), length = cells * a;
  const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
  std::mt19937_64 random(12345);
  std::uniform_real_distribution<double> jitter(-0.1, 0.1);
  std::vector<double> own;
  own.reserve(12ull * cells * cells * cells);
  for (int k = 0; k < cells; ++k)
    for (int j = 0; j < cells; ++j)
      for (int i = 0; i < cells; ++i)
        for (const auto& b : basis) {
          const double p[3] = {(i + b[0]) * a, (j + b[1]) * a, (k + b[2]) * a};
          for (double c : p) own.push_back(std::fmod(c + jitter(random) + length, length));
        }
  std::vector<double> all = own;
  const std::size_t nlocal = own.size() / 3;
  for (std::size_t n = 0; n < nlocal; ++n)
    for (int sz = -1; sz <= 1; ++sz)
      for (int sy = -1; sy <= 1; ++sy)
        for (int sx = -1; sx <= 1; ++sx) {
          if (!sx && !sy && !sz) continue;
          const int s[3] = {sx, sy, sz};
          double p[3];
          bool near = true;
          for (int d = 0; d < 3; ++d) {
            p[d] = own[3 * n + d] + s[d] * length;
            near = near && p[d] >= -cut && p[d] < length + cut;
          }
          if (near) all.insert(all.end(), p, p + 3);
        }
  System sys;
  sys.nlocal = static_cast<int>(nlocal);
  sys.nall = static_cast<int>(all.size() / 3);
  for (int d = 0; d < 3; ++d) {
    sys.grid.origin[d] = -cut;
    sys.grid.inverse_size[d] = 1.0 / bin_size;
    sys.grid.count[d] = static_cast<int>(std::ceil((length + 2 * cut) / bin_size));
  }
  Vectors x("bench::x", sys.nall), v("bench::v", sys.nall);
  auto host = Kokkos::create_mirror_view(x);
  for (int n = 0; n < sys.nall; ++n)
    for (int d = 0; d < 3; ++d) host(n, d) = all[3 * n + d];
  Kokkos::deep_copy(x, host);
  // Own atoms in bin order, as the app keeps them.
  Indices bin_of("bench::bin_of", sys.nlocal), start("bench::start", sys.grid.total() + 1),
      fill("bench::fill", sys.grid.total()), order("bench::order", sys.nlocal);
  minimd::bin_atoms(space, x, sys.nlocal, sys.grid, bin_of, start, fill, order);
  Vectors xs("bench::x_sorted", sys.nall), vs("bench::v_sorted", sys.nall);
  minimd::gather_atoms(space, x, v, order, sys.nlocal, xs, vs);
  Kokkos::deep_copy(space, Kokkos::subview(xs, std::make_pair(sys.nlocal, sys.nall), Kokkos::ALL),
                    Kokkos::subview(x, std::make_pair(sys.nlocal, sys.nall), Kokkos::ALL));
  space.fence("bench::system");
  sys.x = xs;
  return sys;
}

double time_median(const Device& space, int reps, const std::function<void()>& run) {
  run();
  space.fence("bench::warm");
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const double t0 = perf::seconds();
    run();
    space.fence("bench::time");
    t.push_back(perf::seconds() - t0);
  }
  return perf::median(t);
}

// The largest difference between two force arrays, relative to the largest force.
double difference(Vectors a, Vectors b, int n) {
  auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  double most = 0, scale = 0;
  for (int i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) {
      most = std::max(most, std::abs(ha(i, d) - hb(i, d)));
      scale = std::max(scale, std::abs(ha(i, d)));
    }
  return scale > 0 ? most / scale : most;
}

// Whether a build lists the same neighbours as the app's a, in the same order.
bool same_lists(NeighborList a, Indices ca, IntList b, Indices cb, int n) {
  const auto ha = a.to_host();
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  auto hca = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ca);
  auto hcb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), cb);
  for (int i = 0; i < n; ++i) {
    if (hca(i) != hcb(i)) return false;
    for (int k = 0; k < hca(i); ++k)
      if (ha(i, k) != hb(i, k)) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  perf::Options options(
      "minimd_kernel_bench",
      "MiniMD's force (full lists) and neighbour-list build on one device, as apps/minimd runs "
      "them and in alternatives; fails if a variant's forces or lists differ.");
  const auto& sizes = options.integers(
      "--sizes", kodo::host_build ? "8,16" : "32,64,100", 4, 400,
      "S values, comma-separated: S^3 FCC cells, 4 S^3 atoms (a device build's default: "
      "32,64,100)");
  const auto& reps_option =
      options.integer("--reps", 20, 1, 1 << 20, "timed runs per variant and size");
  const auto& csv_file = options.file("--csv", "also write the rows to FILE");
  if (const auto exit = options.parse(runtime, argc, argv)) return *exit;
  perf::Csv csv(csv_file, argc, argv, "cells,atoms,kernel,variant,seconds,atoms_per_second,check");
  const int reps = static_cast<int>(reps_option);
  const Device space = runtime.streams().compute(0).space();
  const double force_cut = 2.5, cut = 2.8;
  const minimd::Potential p{force_cut * force_cut, 1.0, 1.0};
  int failures = 0;
  for (const std::int64_t size : sizes) {
    const int cells = static_cast<int>(size);
    // Lists at the app's bin size (half the neighbour cutoff) and at a whole cutoff.
    // The force variants use the system, bins and lists of the app's bin size.
    NeighborList reference_list;
    Indices reference_count;
    System sys;
    for (const double bin_size : {cut, 0.5 * cut}) {
      sys = make_system(cells, cut, bin_size, space);
      const int nlocal = sys.nlocal, nall = sys.nall;
      auto row = [&](const char* kernel, const std::string& variant, double t, const char* check) {
        char line[256];
        std::snprintf(line, sizeof line, "%d,%d,%s,%s,%.6e,%.4e,%s", cells, nlocal, kernel,
                      variant.c_str(), t, nlocal / t, check);
        csv.row(line);
      };
      const auto stencil = minimd::make_stencil(sys.grid, cut);
      Indices bin_of("bench::bin_of", nall), start("bench::start", sys.grid.total() + 1),
          fill("bench::fill", sys.grid.total()), atoms("bench::atoms", nall);
      const std::string bins = bin_size < cut ? "half_cutoff_bins" : "cutoff_bins";
      row("bin", bins,
          time_median(space, reps,
                      [&] {
                        minimd::bin_atoms(space, sys.x, nall, sys.grid, bin_of, start, fill, atoms);
                      }),
          "-");
      NeighborList list("bench::list", nlocal, 128);
      Indices count("bench::count", nlocal);
      minimd::Counters counters("bench::counters", minimd::counter_slots);
      row("build", "app_" + bins,
          time_median(space, reps,
                      [&] {
                        minimd::build_neighbors(space, sys.x, nlocal, sys.grid, stencil, bin_of,
                                                start, atoms, cut, minimd::ListKind::full, list,
                                                count, counters);
                      }),
          "-");
      Atoms padded("bench::padded", nall);
      pad(space, sys.x, nall, padded);
      IntList list2("bench::list2", nlocal, 128);
      Indices count2("bench::count2", nlocal);
      const double t = time_median(space, reps, [&] {
        build_with(space, GatheredAtoms(padded), nlocal, sys.grid, stencil, bin_of, start, atoms,
                   cut, list2, count2);
      });
      bool same = same_lists(list, count, list2, count2, nlocal);
      failures += !same;
      row("build", "padded_" + bins, t, same ? "same" : "DIFFERENT");
      Rows rows("bench::rows", nall);
      Kokkos::deep_copy(rows, sys.x);
      const double tr = time_median(space, reps, [&] {
        build_with(space, GatheredRows(rows), nlocal, sys.grid, stencil, bin_of, start, atoms, cut,
                   list2, count2);
      });
      same = same_lists(list, count, list2, count2, nlocal);
      failures += !same;
      row("build", "rows_" + bins, tr, same ? "same" : "DIFFERENT");
      for (const bool per_atom : {false, true}) {
        const double tc = time_median(space, reps, [&] {
          build_with(space, GatheredColumns(sys.x), nlocal, sys.grid, stencil, bin_of, start, atoms,
                     cut, list2, count2, per_atom ? counters : minimd::Counters{});
        });
        same = same_lists(list, count, list2, count2, nlocal);
        failures += !same;
        row("build", (per_atom ? "columns_atomic_per_atom_" : "columns_no_longest_") + bins, tc,
            same ? "same" : "DIFFERENT");
      }
      {
        using Reals = Kokkos::View<const double* [3], Kokkos::LayoutLeft, Memory,
                                   Kokkos::MemoryTraits<Kokkos::RandomAccess>>;
        using Floats = Kokkos::View<float* [3], Kokkos::LayoutLeft, Memory>;
        // The app's loop before quads, storing ints (without the app's launch hint and its
        // longest-list pass: the app's build before quads, 4.75 ms at 4M atoms on an H100,
        // is run 81's app row).
        const double ti = time_median(space, reps, [&] {
          build_rows<true, double>(space, Reals(sys.x), nlocal, sys.grid, stencil, bin_of, start,
                                   atoms, cut, list2, count2);
        });
        same = same_lists(list, count, list2, count2, nlocal);
        failures += !same;
        row("build", "ints_loop_" + bins, ti, same ? "same" : "DIFFERENT");
        const double tn = time_median(space, reps, [&] {
          build_rows<false, double>(space, Reals(sys.x), nlocal, sys.grid, stencil, bin_of, start,
                                    atoms, cut, list2, count2);
        });
        row("build", "rows_counts_only_" + bins, tn, "-");
        Floats xf("bench::x_float", nall);
        const Vectors xd = sys.x;
        Kokkos::parallel_for(
            "bench::to_float", Kokkos::RangePolicy<Device>(space, 0, nall), KOKKOS_LAMBDA(int i) {
              for (int d = 0; d < 3; ++d) xf(i, d) = static_cast<float>(xd(i, d));
            });
        const double tf = time_median(space, reps, [&] {
          build_rows<true, float>(space, xf, nlocal, sys.grid, stencil, bin_of, start, atoms, cut,
                                  list2, count2);
        });
        same = holds_lists(list, count, list2, count2, nlocal);
        failures += !same;
        row("build", "rows_float_positions_" + bins, tf, same ? "holds_all" : "MISSING");
      }
      if (bin_size < cut) {
        reference_list = list;
        reference_count = count;
      }
    }
    // Forces over the app's lists.
    const int nlocal = sys.nlocal, nall = sys.nall;
    auto row = [&](const std::string& variant, double t, double diff) {
      char line[256];
      std::snprintf(line, sizeof line, "%d,%d,force,%s,%.6e,%.4e,%.1e", cells, nlocal,
                    variant.c_str(), t, nlocal / t, diff);
      csv.row(line);
    };
    Vectors f_app("bench::f_app", nall), f("bench::f", nall);
    minimd::Payload ev("bench::ev", 2);
    row("app",
        time_median(space, reps,
                    [&] {
                      minimd::force(space, sys.x, f_app, nlocal, nall, reference_list,
                                    reference_count, minimd::ListKind::full, p, false, ev);
                    }),
        0.0);
    // The app's lists as ints, atom-fastest, for the variants over those.
    IntList ints("bench::ints", nlocal, reference_list.capacity());
    {
      const NeighborList l = reference_list;
      const Indices c = reference_count;
      Kokkos::parallel_for(
          "bench::to_ints", Kokkos::RangePolicy<Device>(space, 0, nlocal), KOKKOS_LAMBDA(int i) {
            for (int k = 0; k < Kokkos::min(c(i), l.capacity()); ++k) ints(i, k) = l(i, k);
          });
    }
    Atoms padded("bench::padded", nall);
    row("pad_copy", time_median(space, reps, [&] { pad(space, sys.x, nall, padded); }), 0.0);
    const double t = time_median(space, reps, [&] {
      force_padded(space, padded, f, nlocal, ints, reference_count, p);
    });
    const double d = difference(f_app, f, nlocal);
    failures += d != 0.0;
    row("padded", t, d);
    Rows rows("bench::rows", nall);
    Kokkos::deep_copy(rows, sys.x);
    const auto& l = ints;
    const auto& c = reference_count;
    const std::vector<std::pair<std::string, std::function<void()>>> plain = {
        {"ints_columns_ahead4", [&] { force_unrolled<4>(space, sys.x, f, nlocal, l, c, p); }},
        {"columns_ahead1", [&] { force_unrolled<1>(space, sys.x, f, nlocal, l, c, p); }},
        {"columns_ahead2", [&] { force_unrolled<2>(space, sys.x, f, nlocal, l, c, p); }},
        {"columns_ahead8", [&] { force_unrolled<8>(space, sys.x, f, nlocal, l, c, p); }},
        {"rows_ahead1", [&] { force_unrolled<1>(space, rows, f, nlocal, l, c, p); }},
        {"rows_ahead2", [&] { force_unrolled<2>(space, rows, f, nlocal, l, c, p); }},
        {"rows_ahead4", [&] { force_unrolled<4>(space, rows, f, nlocal, l, c, p); }}};
    for (const auto& [name, run] : plain) {
      const double tu = time_median(space, reps, run);
      const double du = difference(f_app, f, nlocal);
      failures += du != 0.0;
      row(name, tu, du);
    }
    // Half lists (each pair once, both atoms' forces added atomically), for scale.
    {
      minimd::Counters counters("bench::counters", minimd::counter_slots);
      NeighborList half("bench::half", nlocal, 128);
      Indices half_count("bench::half_count", nlocal);
      const auto stencil = minimd::make_stencil(sys.grid, cut);
      Indices bin_of("bench::bin_of", nall), start("bench::start", sys.grid.total() + 1),
          fill("bench::fill", sys.grid.total()), atoms("bench::atoms", nall);
      minimd::bin_atoms(space, sys.x, nall, sys.grid, bin_of, start, fill, atoms);
      minimd::build_neighbors(space, sys.x, nlocal, sys.grid, stencil, bin_of, start, atoms, cut,
                              minimd::ListKind::half, half, half_count, counters);
      const double th = time_median(space, reps, [&] {
        minimd::force(space, sys.x, f, nlocal, nall, half, half_count, minimd::ListKind::half, p,
                      false, ev);
      });
      const double dh = difference(f_app, f, nlocal);
      failures += dh > 1e-12;
      row("app_half_list", th, dh);
    }
    // The same ints with each atom's neighbours contiguous (deep_copy transposes).
    RowList row_lists("bench::row_lists", nlocal, reference_list.capacity());
    Kokkos::deep_copy(space, row_lists, ints);
    for (int lanes : {2, 4, 8, 16}) {
      const double tl = time_median(space, reps, [&] {
        force_lanes(space, padded, f, nlocal, row_lists, reference_count, p, lanes);
      });
      const double dl = difference(f_app, f, nlocal);
      failures += dl > 1e-12;
      row("lanes" + std::to_string(lanes), tl, dl);
    }
    // Cluster pairs (minimd_cluster_pairs.hpp): the force on cluster slots, then the
    // scatter of the slots' forces to the atoms (a row of its own).
    for (const int size : {2, 4, 8}) {
      const auto clusters = cluster_pairs::make_clusters(sys.x, nlocal, nall, cut, size);
      Vectors f_slots("bench::f_slots", static_cast<std::size_t>(clusters.own) * size);
      const double tc =
          time_median(space, reps, [&] { cluster_pairs::force(space, clusters, f_slots, p); });
      Kokkos::deep_copy(f, 0.0);
      const double ts =
          time_median(space, reps, [&] { cluster_pairs::scatter(space, clusters, f_slots, f); });
      const double dc = difference(f_app, f, nlocal);
      failures += dc > 1e-12;
      const std::string name = "clusters" + std::to_string(size);
      row(name + "_visits" + std::to_string(std::lround(clusters.slots_per_atom)), tc, dc);
      row(name + "_scatter", ts, dc);
    }
  }
  if (failures) std::fprintf(stderr, "minimd_kernel_bench: %d variant(s) differ\n", failures);
  return failures ? 1 : 0;
}
