// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Cluster pairs for MiniMD's force (issue 33), tried in perf/minimd_kernel_bench beside
// the app's per-atom lists. Atoms are grouped in spatial clusters of C: columns of the
// x-y plane about as wide as C atoms are deep, each sorted along z and cut every C atoms,
// the last cluster of a column padded with slots far from every atom. A cluster's list
// holds the clusters whose bounding boxes come within the list cutoff of its own (so
// every atom pair within the cutoff is in some listed cluster pair while atoms move less
// than half the skin, as with atom lists). In the force kernel the C atoms of an
// i-cluster are C team members, and each has C vector lanes: lane v computes the pairs of
// its i atom with atom v of every listed j-cluster, so one load of a j-cluster's
// positions serves C i atoms (the app's kernel gathers each neighbour once per pair).
// The price: pairs beyond the cutoff are computed and masked, several times as many as
// an atom list holds. Clusters and lists are built on the host here (setup, untimed).

#include <kodo/kodo.hpp>

#include <minimd/kernels.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

namespace cluster_pairs {

using minimd::Device;
using minimd::Indices;
using minimd::Memory;
using minimd::Vectors;

struct Clusters {
  int size = 0;               // C: atom slots per cluster
  int own = 0, all = 0;       // clusters of own atoms (first) and of all atoms
  Vectors x;                  // all * C slots; a padding slot is far from every other slot
  Indices atom;               // slot -> atom, -1 for padding
  Indices start, list;        // own cluster c's j-clusters: list[start(c), start(c + 1))
  double slots_per_atom = 0;  // j slots the kernel visits per own atom (listed clusters x C)
};

// Clusters of size `c` over atoms [0, nall) of `x` (own atoms [0, nlocal) in clusters of
// their own, listed first), and their lists at `rlist`.
inline Clusters make_clusters(Vectors x_device, int nlocal, int nall, double rlist, int c) {
  const auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x_device);
  std::vector<int> slots;                    // atom of each slot, -1 for padding
  std::vector<std::array<double, 6>> boxes;  // lo xyz, hi xyz of each cluster's atoms
  auto cluster = [&](int first, int last) {
    if (last <= first) return;
    double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
    for (int i = first; i < last; ++i)
      for (int d = 0; d < 3; ++d) {
        lo[d] = std::min(lo[d], x(i, d));
        hi[d] = std::max(hi[d], x(i, d));
      }
    // Columns as wide as a cube of C atoms at the group's mean density (a flat group of
    // ghosts is denser per volume of its box than it looks: the cube is still right).
    const double volume = std::max((hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]), 1e-30);
    const double side = std::cbrt(c * volume / (last - first));
    const int nx = std::max(1, static_cast<int>((hi[0] - lo[0]) / side) + 1);
    const int ny = std::max(1, static_cast<int>((hi[1] - lo[1]) / side) + 1);
    std::vector<int> ids(last - first);
    std::iota(ids.begin(), ids.end(), first);
    std::vector<int> column(nall, 0);
    for (int i : ids) {
      const int cx = std::min(nx - 1, static_cast<int>((x(i, 0) - lo[0]) / side));
      const int cy = std::min(ny - 1, static_cast<int>((x(i, 1) - lo[1]) / side));
      column[i] = cy * nx + cx;
    }
    std::sort(ids.begin(), ids.end(), [&](int a, int b) {
      if (column[a] != column[b]) return column[a] < column[b];
      if (x(a, 2) != x(b, 2)) return x(a, 2) < x(b, 2);
      return a < b;
    });
    // A run of one column without a gap along z wider than `side` (ghosts: a column
    // crosses the halo below the unit and the one above) is cut into clusters.
    for (std::size_t k = 0; k < ids.size();) {
      std::size_t end = k + 1;
      while (end < ids.size() && column[ids[end]] == column[ids[k]] &&
             x(ids[end], 2) - x(ids[end - 1], 2) <= side)
        ++end;
      for (; k < end; k = std::min(k + c, end)) {
        std::array<double, 6> box{1e300, 1e300, 1e300, -1e300, -1e300, -1e300};
        for (int s = 0; s < c; ++s) {
          const int i = k + s < end ? ids[k + s] : -1;
          slots.push_back(i);
          for (int d = 0; i >= 0 && d < 3; ++d) {
            box[d] = std::min(box[d], x(i, d));
            box[3 + d] = std::max(box[3 + d], x(i, d));
          }
        }
        boxes.push_back(box);
      }
    }
  };
  cluster(0, nlocal);
  Clusters out;
  out.size = c;
  out.own = static_cast<int>(boxes.size());
  cluster(nlocal, nall);
  out.all = static_cast<int>(boxes.size());

  // The lists: clusters binned by their boxes' centres in cells at least the list cutoff
  // plus the widest box wide, so a listed cluster's centre is in a neighbouring cell.
  double widest = 0, lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
  std::vector<std::array<double, 3>> centre(out.all);
  for (int k = 0; k < out.all; ++k)
    for (int d = 0; d < 3; ++d) {
      widest = std::max(widest, boxes[k][3 + d] - boxes[k][d]);
      centre[k][d] = 0.5 * (boxes[k][d] + boxes[k][3 + d]);
      lo[d] = std::min(lo[d], centre[k][d]);
      hi[d] = std::max(hi[d], centre[k][d]);
    }
  const double cell = rlist + widest;
  int n[3];
  for (int d = 0; d < 3; ++d) n[d] = static_cast<int>((hi[d] - lo[d]) / cell) + 1;
  auto cell_of = [&](int k, int d) {
    return std::min(n[d] - 1, static_cast<int>((centre[k][d] - lo[d]) / cell));
  };
  std::vector<std::vector<int>> cells(static_cast<std::size_t>(n[0]) * n[1] * n[2]);
  for (int k = 0; k < out.all; ++k)
    cells[(static_cast<std::size_t>(cell_of(k, 2)) * n[1] + cell_of(k, 1)) * n[0] + cell_of(k, 0)]
        .push_back(k);
  std::vector<int> start{0}, list;
  for (int k = 0; k < out.own; ++k) {
    const int at[3] = {cell_of(k, 0), cell_of(k, 1), cell_of(k, 2)};
    const std::size_t first = list.size();
    for (int cz = std::max(0, at[2] - 1); cz <= std::min(n[2] - 1, at[2] + 1); ++cz)
      for (int cy = std::max(0, at[1] - 1); cy <= std::min(n[1] - 1, at[1] + 1); ++cy)
        for (int cx = std::max(0, at[0] - 1); cx <= std::min(n[0] - 1, at[0] + 1); ++cx)
          for (int j : cells[(static_cast<std::size_t>(cz) * n[1] + cy) * n[0] + cx]) {
            double gap_sq = 0;
            for (int d = 0; d < 3; ++d) {
              const double gap =
                  std::max({0.0, boxes[j][d] - boxes[k][3 + d], boxes[k][d] - boxes[j][3 + d]});
              gap_sq += gap * gap;
            }
            if (gap_sq <= rlist * rlist) list.push_back(j);
          }
    // In index order: neighbouring clusters' positions are near in memory.
    std::sort(list.begin() + static_cast<std::ptrdiff_t>(first), list.end());
    start.push_back(static_cast<int>(list.size()));
  }
  // Each of a cluster's C atoms visits the C slots of each listed cluster.
  out.slots_per_atom = static_cast<double>(list.size()) * c * c / std::max(1, nlocal);

  out.x = Vectors("cluster_pairs::x", slots.size());
  out.atom = Indices("cluster_pairs::atom", slots.size());
  out.start = Indices("cluster_pairs::start", start.size());
  out.list = Indices("cluster_pairs::list", std::max<std::size_t>(1, list.size()));
  auto hx = Kokkos::create_mirror_view(out.x);
  auto ha = Kokkos::create_mirror_view(out.atom);
  auto hs = Kokkos::create_mirror_view(out.start);
  auto hl = Kokkos::create_mirror_view(out.list);
  for (std::size_t s = 0; s < slots.size(); ++s) {
    ha(s) = slots[s];
    for (int d = 0; d < 3; ++d)  // padding: each slot far from all others
      hx(s, d) = slots[s] >= 0 ? x(slots[s], d) : 1e6 + 10.0 * static_cast<double>(s);
  }
  for (std::size_t k = 0; k < start.size(); ++k) hs(k) = start[k];
  for (std::size_t k = 0; k < list.size(); ++k) hl(k) = list[k];
  Kokkos::deep_copy(out.x, hx);
  Kokkos::deep_copy(out.atom, ha);
  Kokkos::deep_copy(out.start, hs);
  Kokkos::deep_copy(out.list, hl);
  return out;
}

struct Force3 {
  double x = 0, y = 0, z = 0;
  KOKKOS_INLINE_FUNCTION Force3& operator+=(const Force3& o) {
    x += o.x;
    y += o.y;
    z += o.z;
    return *this;
  }
};

}  // namespace cluster_pairs

template <>
struct Kokkos::reduction_identity<cluster_pairs::Force3> {
  KOKKOS_FORCEINLINE_FUNCTION static cluster_pairs::Force3 sum() { return {}; }
};

namespace cluster_pairs {

// Forces on the own clusters' slots: f_slots(s) for slot s of an own cluster.
inline void force(const Device& space, const Clusters& cl, Vectors f_slots,
                  const minimd::Potential p) {
  using Policy = Kokkos::TeamPolicy<Device>;
  using Gathered = Kokkos::View<const double* [3], Vectors::array_layout, Memory,
                                Kokkos::MemoryTraits<Kokkos::RandomAccess>>;
  const Gathered x = cl.x;
  const Indices start = cl.start, list = cl.list;
  const int c = cl.size, slots = cl.own * cl.size;
  // 128 threads a team on a GPU (C members of C lanes per cluster); host backends run
  // teams of one thread.
  const int team = std::is_same_v<Device, Kokkos::DefaultHostExecutionSpace> ? 1 : 128 / c;
  Kokkos::parallel_for(
      "bench::force_clusters", Policy(space, (slots + team - 1) / team, team, c),
      KOKKOS_LAMBDA(const Policy::member_type& m) {
        const int i = m.league_rank() * team + m.team_rank();
        if (i >= slots) return;
        const int ci = i / c;
        const double xi = x(i, 0), yi = x(i, 1), zi = x(i, 2);
        Force3 sum;
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(m, c),
            [&](int v, Force3& s) {
              for (int k = start(ci); k < start(ci + 1); ++k) {
                const int j = list(k) * c + v;
                const double dx = xi - x(j, 0), dy = yi - x(j, 1), dz = zi - x(j, 2);
                const double rsq = dx * dx + dy * dy + dz * dz;
                if (rsq < p.cutoff_sq && j != i) {
                  const double sr2 = 1.0 / rsq;
                  const double sr6 = sr2 * sr2 * sr2 * p.sigma6;
                  const double force = 48.0 * sr6 * (sr6 - 0.5) * sr2 * p.epsilon;
                  s.x += dx * force;
                  s.y += dy * force;
                  s.z += dz * force;
                }
              }
            },
            sum);
        Kokkos::single(Kokkos::PerThread(m), [&]() {
          f_slots(i, 0) = sum.x;
          f_slots(i, 1) = sum.y;
          f_slots(i, 2) = sum.z;
        });
      });
}

// f(atom) = f_slots(slot) for the own clusters' atoms.
inline void scatter(const Device& space, const Clusters& cl, Vectors f_slots, Vectors f) {
  const Indices atom = cl.atom;
  Kokkos::parallel_for(
      "bench::scatter_clusters", Kokkos::RangePolicy<Device>(space, 0, cl.own * cl.size),
      KOKKOS_LAMBDA(int s) {
        const int i = atom(s);
        if (i >= 0)
          for (int d = 0; d < 3; ++d) f(i, d) = f_slots(s, d);
      });
}

}  // namespace cluster_pairs
