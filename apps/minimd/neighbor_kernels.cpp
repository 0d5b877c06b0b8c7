// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// minimd's kernels of the reneighboring program, binning, neighbour lists and force
// (kernels.hpp).
#include "kernel_policies.hpp"
#include "kernels.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace minimd {

// ---- the reneighboring program's own ----------------------------------------------

namespace {
using One = Kokkos::RangePolicy<Device>;  // a kernel of one item: counts kept on the device

// The count in element 0 of a message with `per`-double records (none in an empty view),
// cut to the records the view has room for; `cut` is set when it did not fit.
KOKKOS_INLINE_FUNCTION int message_count(const Payload& in, int per, bool& cut) {
  if (in.size() == 0) return 0;
  const auto room = static_cast<double>((in.size() - 1) / per);
  const double said = in(0);
  if (!(said >= 0 && said <= room)) {  // also a count that is not a number
    cut = true;
    return said > room ? static_cast<int>(room) : 0;
  }
  return static_cast<int>(said);
}
}  // namespace

void save_atoms(const Device& space, Vectors x, Vectors v, Vectors f, Count own, Vectors x_saved,
                Vectors v_saved, Vectors f_saved, Counters counters) {
  Kokkos::parallel_for(
      "minimd::save_atoms", Range(space, 0, std::max(own.bound, 1)), KOKKOS_LAMBDA(int i) {
        if (i == 0) counters(lost) = counters(overflow) = 0;
        if (i >= own.get()) return;
        for (int e = 0; e < 3; ++e) {
          x_saved(i, e) = x(i, e);
          v_saved(i, e) = v(i, e);
          f_saved(i, e) = f(i, e);
        }
      });
}

void count_arrivals(const Device& space, const Payload (&ins)[2], int d, int rows,
                    Counters counters) {
  const Payload in0 = ins[0], in1 = ins[1];
  Kokkos::parallel_for(
      "minimd::count_arrivals", One(space, 0, 1), KOKKOS_LAMBDA(int) {
        bool cut = false;
        int from[2] = {message_count(in0, 6, cut), message_count(in1, 6, cut)};
        const int stay = counters(staying);
        for (int s = 0; s < 2; ++s) {  // what fits the unit's rows
          const int room = Kokkos::max(0, rows - stay - (s == 1 ? from[0] : 0));
          if (from[s] > room) {
            from[s] = room;
            cut = true;
          }
          counters(arrived + 2 * d + s) = from[s];
        }
        counters(own) = stay + from[0] + from[1];
        if (cut) counters(overflow) = 1;
      });
}

void count_ghosts(const Device& space, const Payload (&ins)[2], const int (&rooms)[2], int d,
                  int rows, Counters counters) {
  const Payload in0 = ins[0], in1 = ins[1];
  const int room0 = rooms[0], room1 = rooms[1];
  Kokkos::parallel_for(
      "minimd::count_ghosts", One(space, 0, 1), KOKKOS_LAMBDA(int) {
        bool cut = false;
        const bool images = in0.size() == 0 && in1.size() == 0;
        int from[2] = {images ? counters(border_count + 2 * d + 1) : message_count(in0, 3, cut),
                       images ? counters(border_count + 2 * d) : message_count(in1, 3, cut)};
        int first = counters(all_atoms);
        for (int s = 0; s < 2; ++s) {
          const int room = Kokkos::min(s == 0 ? room0 : room1, Kokkos::max(0, rows - first));
          if (from[s] > room) {
            from[s] = room;
            cut = true;
          }
          counters(ghost_first + 2 * d + s) = first;
          counters(ghost_count + 2 * d + s) = from[s];
          first += from[s];
        }
        counters(all_atoms) = first;
        if (cut) counters(overflow) = 1;
      });
}

void copy_count(const Device& space, Counters counters, int from, int to) {
  Kokkos::parallel_for(
      "minimd::copy_count", One(space, 0, 1),
      KOKKOS_LAMBDA(int) { counters(to) = counters(from); });
}

void check_count(const Device& space, Counters counters, int slot, int most) {
  Kokkos::parallel_for(
      "minimd::check_count", One(space, 0, 1), KOKKOS_LAMBDA(int) {
        if (counters(slot) > most) counters(overflow) = 1;
      });
}

void copy_atoms(const Device& space, Vectors x_from, Vectors v_from, Count n, Vectors x,
                Vectors v) {
  Kokkos::parallel_for(
      "minimd::copy_atoms", over(space, n), KOKKOS_LAMBDA(int i) {
        if (i >= n.get()) return;
        for (int e = 0; e < 3; ++e) {
          x(i, e) = x_from(i, e);
          v(i, e) = v_from(i, e);
        }
      });
}

Stencil make_stencil(const BinGrid& grid, double cutoff) {
  int reach[3];
  double size[3];
  for (int d = 0; d < 3; ++d) {
    size[d] = 1.0 / grid.inverse_size[d];
    reach[d] = static_cast<int>(std::ceil(cutoff * grid.inverse_size[d]));
  }
  // A bin dx away along d is at least (|dx| - 1) bin sizes from any point of bin 0; the
  // bins of a row within reach are those with |dx| up to a bound.
  std::vector<int> rows;
  for (int dz = -reach[2]; dz <= reach[2]; ++dz)
    for (int dy = -reach[1]; dy <= reach[1]; ++dy) {
      int first = reach[0] + 1, last = -reach[0] - 1;
      for (int dx = -reach[0]; dx <= reach[0]; ++dx) {
        const int o[3] = {dx, dy, dz};
        double gap = 0;
        for (int d = 0; d < 3; ++d) {
          const double g = std::max(0, std::abs(o[d]) - 1) * size[d];
          gap += g * g;
        }
        if (gap <= cutoff * cutoff) {
          first = std::min(first, dx);
          last = std::max(last, dx);
        }
      }
      if (first <= last) rows.insert(rows.end(), {dy, dz, first, last});
    }
  const auto n = rows.size() / 4;
  Stencil stencil("minimd::stencil", n);
  auto host = Kokkos::create_mirror_view(stencil);
  for (std::size_t k = 0; k < n; ++k)
    for (int c = 0; c < 4; ++c) host(k, c) = rows[4 * k + c];
  Kokkos::deep_copy(stencil, host);
  return stencil;
}

namespace {
KOKKOS_INLINE_FUNCTION int bin_coordinate(double c, double origin, double inverse, int count) {
  int b = static_cast<int>((c - origin) * inverse);
  return b < 0 ? 0 : (b >= count ? count - 1 : b);
}
}  // namespace

namespace {
// Atoms [0, n) in buckets 0 .. buckets - 1, `key(i)` being atom i's: bucket_of(i),
// bucket_start (buckets + 1) and out (the atoms of bucket b at [bucket_start(b),
// bucket_start(b + 1)), in index order so the result does not depend on thread timing).
// `fill` is scratch of `buckets` ints.
template <class Key>
void sort_into_buckets(const Device& space, Count n, int buckets, const Key& key, Indices bucket_of,
                       Indices bucket_start, Indices fill, Indices out) {
  Kokkos::deep_copy(space, Kokkos::subview(fill, std::make_pair(0, buckets)), 0);
  Kokkos::parallel_for(
      "minimd::bin", over(space, n), KOKKOS_LAMBDA(int i) {
        if (i >= n.get()) return;
        const int b = key(i);
        bucket_of(i) = b;
        Kokkos::atomic_inc(&fill(b));
      });
  // The final pass also sets `fill` back to 0 for the next kernel (no reset launch).
  Kokkos::parallel_scan(
      "minimd::bin_start", Range(space, 0, buckets + 1), KOKKOS_LAMBDA(int b, int& sum, bool last) {
        const int atoms = b < buckets ? fill(b) : 0;
        if (last) {
          bucket_start(b) = sum;
          if (b < buckets) fill(b) = 0;
        }
        sum += atoms;
      });
  Kokkos::parallel_for(
      "minimd::bin_fill", over(space, n), KOKKOS_LAMBDA(int i) {
        if (i >= n.get()) return;
        const int b = bucket_of(i);
        out(bucket_start(b) + Kokkos::atomic_fetch_add(&fill(b), 1)) = i;
      });
  // Index order within each bucket (buckets hold a few dozen atoms).
  Kokkos::parallel_for(
      "minimd::bin_order", Range(space, 0, buckets), KOKKOS_LAMBDA(int b) {
        const int begin = bucket_start(b), end = bucket_start(b + 1);
        for (int p = begin + 1; p < end; ++p) {
          const int atom = out(p);
          int q = p;
          for (; q > begin && out(q - 1) > atom; --q) out(q) = out(q - 1);
          out(q) = atom;
        }
      });
}

// The bin of a position.
struct BinOf {
  Vectors x;
  BinGrid grid;
  KOKKOS_INLINE_FUNCTION int operator()(int i) const {
    int b[3];
    for (int d = 0; d < 3; ++d)
      b[d] = bin_coordinate(x(i, d), grid.origin[d], grid.inverse_size[d], grid.count[d]);
    return (b[2] * grid.count[1] + b[1]) * grid.count[0] + b[0];
  }
};

// The bin, moved past every bin for an atom less than `margin` inside `box` on any side.
struct InteriorFirst {
  BinOf bin;
  Box box;
  double margin;
  KOKKOS_INLINE_FUNCTION int operator()(int i) const {
    bool inside = true;
    for (int d = 0; d < 3; ++d)
      inside = inside && bin.x(i, d) >= box.lo[d] + margin && bin.x(i, d) < box.hi[d] - margin;
    return bin(i) + (inside ? 0 : bin.grid.total());
  }
};
}  // namespace

void bin_atoms(const Device& space, Vectors x, Count n, const BinGrid& grid, Indices bin_of,
               Indices bin_start, Indices fill, Indices bin_atoms) {
  sort_into_buckets(space, n, grid.total(), BinOf{x, grid}, bin_of, bin_start, fill, bin_atoms);
}

void order_interior_first(const Device& space, Vectors x, Count n, const BinGrid& grid,
                          const Box& box, double margin, Indices bin_of, Indices bin_start,
                          Indices fill, Indices order, Counters counters) {
  const int bins = grid.total();
  sort_into_buckets(space, n, 2 * bins, InteriorFirst{BinOf{x, grid}, box, margin}, bin_of,
                    bin_start, fill, order);
  Kokkos::parallel_for(
      "minimd::interior_count", Range(space, 0, 1),
      KOKKOS_LAMBDA(int) { counters(interior) = bin_start(bins); });
}

namespace {
// Positions as the list build and the force kernels read them: through the read-only
// cache (gathers of neighbours; 1.4x faster list builds than plain loads on an H200).
using Gathered = Kokkos::View<const double* [3], Vectors::array_layout, Memory,
                              Kokkos::MemoryTraits<Kokkos::RandomAccess>>;
}  // namespace

void build_neighbors(const Device& space, Vectors positions, Count nlocal, const BinGrid& grid,
                     Stencil stencil, Indices bin_of, Indices bin_start, Indices bin_atoms,
                     double cutoff, ListKind kind, NeighborList neighbors, Indices count,
                     Counters counters) {
  const Gathered x = positions;
  const double cutoff_sq = cutoff * cutoff;
  const int groups = neighbors.capacity() / 4;
  if (nlocal.bound == 0) {
    Kokkos::deep_copy(space, Kokkos::subview(counters, static_cast<int>(most_neighbors)), 0);
    return;
  }
  Kokkos::parallel_for(
      "minimd::build_neighbors", light(over(space, nlocal)), KOKKOS_LAMBDA(int i) {
        if (i >= nlocal.get()) return;
        const int own = nlocal.get();
        const double xi = x(i, 0), yi = x(i, 1), zi = x(i, 2);
        int n = 0;
        Quad q{{i, i, i, i}};
        for_each_candidate(grid, stencil, bin_start, bin_atoms, bin_of(i), i, [&](int j) {
          const double dx = xi - x(j, 0), dy = yi - x(j, 1), dz = zi - x(j, 2);
          if (kind != ListKind::full) {
            if (j < own) {
              if (j < i) return;
            } else if (kind == ListKind::half_newton) {
              // The ghost copy of a pair across units: kept by the side where the
              // other atom is above (z, then y, then x), so exactly one side keeps it.
              const double gz = x(j, 2), gy = x(j, 1), gx = x(j, 0);
              if (gz < zi) return;
              if (gz == zi && (gy < yi || (gy == yi && gx < xi))) return;
            }
          }
          if (dx * dx + dy * dy + dz * dz <= cutoff_sq) {
            q.j[n % 4] = j;
            if (++n % 4 == 0) {
              if (n / 4 <= groups) neighbors.store(i, n / 4 - 1, q);
              q = Quad{{i, i, i, i}};
            }
          }
        });
        if (n % 4 != 0 && n / 4 < groups) neighbors.store(i, n / 4, q);
        count(i) = n;
      });
  // The longest list, in a pass of its own: an atomic max per atom on one address made
  // the build 1.3x slower on an H200 (perf/minimd_kernel_bench).
  Kokkos::parallel_reduce(
      "minimd::longest_list", over(space, nlocal),
      KOKKOS_LAMBDA(int i, int& most) {
        if (i < nlocal.get() && count(i) > most) most = count(i);
      },
      Kokkos::Max<int, Memory>(Kokkos::subview(counters, static_cast<int>(most_neighbors))));
}

namespace {
struct Energy {};  // tag: also sum the energy and the virial

// The Lennard-Jones pair term at squared distance rsq (inside the cutoff): the force
// divided by the distance, and the pair's energy.
KOKKOS_INLINE_FUNCTION double pair_force(const Potential& p, double rsq, double& energy) {
  const double sr2 = 1.0 / rsq;
  const double sr6 = sr2 * sr2 * sr2 * p.sigma6;
  energy = 4.0 * sr6 * (sr6 - 1.0) * p.epsilon;
  return 48.0 * sr6 * (sr6 - 0.5) * sr2 * p.epsilon;
}

// Forces from neighbour lists of kind K. Full lists: each atom sums its own force, no
// atomics. Half lists: both atoms of a pair, so f is zeroed first and added atomically;
// without Newton across units (half), a ghost's force is not kept (its owner lists the
// pair too) and the pair counts half on each side. The positions of a quad's four
// neighbours are loaded before any is used, so more gathers are in flight per thread
// (1.13x on an H200 against one at a time); the sums keep the list's order, so the forces
// are those of the plain loop.
template <ListKind K>
struct PairForces {
  Gathered x;
  Vectors f;
  NeighborList neighbors;
  Indices count;
  Potential p;
  int nlocal;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    double e = 0, w = 0;
    compute<false>(i, e, w);
  }
  KOKKOS_INLINE_FUNCTION void operator()(Energy, int i, double& e, double& w) const {
    compute<true>(i, e, w);
  }
  template <bool E>
  KOKKOS_INLINE_FUNCTION void compute(int i, double& e, double& w) const {
    const double xi = x(i, 0), yi = x(i, 1), zi = x(i, 2);
    double fx = 0, fy = 0, fz = 0;
    // A list longer than its room is built again before its forces count; until then
    // (a step program's step that will run again) only what it holds is read.
    const int n = Kokkos::min(count(i), neighbors.capacity());
    for (int k0 = 0; k0 < n; k0 += 4) {
      const Quad q = neighbors.quad(i, k0 / 4);  // past the count: i itself, skipped
      double dxs[4], dys[4], dzs[4];
      for (int u = 0; u < 4; ++u) {
        dxs[u] = xi - x(q.j[u], 0);
        dys[u] = yi - x(q.j[u], 1);
        dzs[u] = zi - x(q.j[u], 2);
      }
      for (int u = 0; u < 4; ++u)
        if (k0 + u < n) pair<E>(q.j[u], dxs[u], dys[u], dzs[u], fx, fy, fz, e, w);
    }
    if constexpr (K == ListKind::full) {
      f(i, 0) = fx;
      f(i, 1) = fy;
      f(i, 2) = fz;
    } else {
      Kokkos::atomic_add(&f(i, 0), fx);
      Kokkos::atomic_add(&f(i, 1), fy);
      Kokkos::atomic_add(&f(i, 2), fz);
    }
  }
  // One listed pair (i, j) at separation (dx, dy, dz) = x_i - x_j.
  template <bool E>
  KOKKOS_INLINE_FUNCTION void pair(int j, double dx, double dy, double dz, double& fx, double& fy,
                                   double& fz, double& e, double& w) const {
    const double rsq = dx * dx + dy * dy + dz * dz;
    if (rsq < p.cutoff_sq) {
      double pair_energy;
      const double force = pair_force(p, rsq, pair_energy);
      fx += dx * force;
      fy += dy * force;
      fz += dz * force;
      // The share of the pair's energy and virial this atom's list accounts for.
      double share = 1.0;
      if constexpr (K == ListKind::full) {
        share = 0.5;  // each pair is seen from both of its atoms
      } else {
        const bool both = K == ListKind::half_newton || j < nlocal;
        if (both) {
          Kokkos::atomic_add(&f(j, 0), -dx * force);
          Kokkos::atomic_add(&f(j, 1), -dy * force);
          Kokkos::atomic_add(&f(j, 2), -dz * force);
        } else {
          share = 0.5;
        }
      }
      if constexpr (E) {
        e += share * pair_energy;
        w += share * rsq * force;
      }
    }
  }
};

// A force functor over atoms [first, last) where the device reads either end (Count).
template <class Functor>
struct Between {
  Functor forces;
  Count first, last;
  KOKKOS_INLINE_FUNCTION bool outside(int i) const { return i < first.get() || i >= last.get(); }
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    if (!outside(i)) forces(i);
  }
  KOKKOS_INLINE_FUNCTION void operator()(Energy tag, int i, double& e, double& w) const {
    if (!outside(i)) forces(tag, i, e, w);
  }
};

// The force over atoms [first, last): the range launched when both are host counts, else
// [0 or first, last's bound) with the rest skipped on the device.
template <class Functor>
void run_force(const char* name, const Launch& to, const Count& first, const Count& last,
               const Functor& functor, bool energy, Payload ev) {
  const int begin = first.slot < 0 ? first.bound : 0;
  const int end = std::max(begin, last.bound);
  auto launch = [&](const auto& forces) {
    if (energy)
      Kokkos::parallel_reduce(name, Kokkos::RangePolicy<Device, Energy>(to.space(), begin, end),
                              forces, Kokkos::Sum<double, Memory>(Kokkos::subview(ev, 0)),
                              Kokkos::Sum<double, Memory>(Kokkos::subview(ev, 1)));
    else
      to.parallel_for(name, begin, end, forces);
  };
  if (first.slot < 0 && last.slot < 0)
    launch(functor);
  else
    launch(Between<Functor>{functor, first, last});
}
}  // namespace

void force_full(const Launch& to, Vectors x, Vectors f, Count first, Count last, int nlocal,
                NeighborList neighbors, Indices count, const Potential& p, bool energy,
                Payload ev) {
  run_force("minimd::force_full", to, first, last,
            PairForces<ListKind::full>{x, f, neighbors, count, p, nlocal}, energy, ev);
}

void force(const Device& space, Vectors x, Vectors f, int nlocal, int nall, NeighborList neighbors,
           Indices count, ListKind kind, const Potential& p, bool energy, Payload ev) {
  if (kind == ListKind::full) {
    force_full(space, x, f, 0, nlocal, nlocal, neighbors, count, p, energy, ev);
    return;
  }
  Kokkos::parallel_for(
      "minimd::zero_forces", over(space, nall), KOKKOS_LAMBDA(int i) {
        for (int d = 0; d < 3; ++d) f(i, d) = 0;
      });
  if (kind == ListKind::half_newton)
    run_force("minimd::force_half", space, 0, nlocal,
              PairForces<ListKind::half_newton>{x, f, neighbors, count, p, nlocal}, energy, ev);
  else
    run_force("minimd::force_half", space, 0, nlocal,
              PairForces<ListKind::half>{x, f, neighbors, count, p, nlocal}, energy, ev);
}

}  // namespace minimd
