// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// minimd's kernels of integration and of selection and movement between units
// (kernels.hpp).
#include "kernels.hpp"

#include "error.hpp"
#include "kernel_policies.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace minimd {

const Device& Launch::space() const {
  if (!space_) throw Error("minimd: this kernel runs on an instance, not in a kernel batch");
  return *space_;
}

void initial_integrate(const Launch& to, Vectors x, Vectors v, Vectors f, Count n, double dt) {
  const double half = 0.5 * dt;  // dt / 2m, mass 1
  to.parallel_for(
      "minimd::initial_integrate", 0, n.bound, KOKKOS_LAMBDA(int i) {
        if (i >= n.get()) return;
        for (int d = 0; d < 3; ++d) {
          v(i, d) += half * f(i, d);
          x(i, d) += dt * v(i, d);
        }
      });
}

void final_integrate(const Launch& to, Vectors v, Vectors f, Count n, double dt) {
  const double half = 0.5 * dt;
  to.parallel_for(
      "minimd::final_integrate", 0, n.bound, KOKKOS_LAMBDA(int i) {
        if (i >= n.get()) return;
        for (int d = 0; d < 3; ++d) v(i, d) += half * f(i, d);
      });
}

void integrate_across(const Device& space, Vectors x, Vectors v, Vectors f, Count n, double dt) {
  const double half = 0.5 * dt;
  Kokkos::parallel_for(
      "minimd::integrate_across", over(space, n), KOKKOS_LAMBDA(int i) {
        if (i >= n.get()) return;
        for (int d = 0; d < 3; ++d) {
          const double force = f(i, d);
          double velocity = v(i, d) + half * force;  // the step's end
          velocity += half * force;                  // the next step's start
          v(i, d) = velocity;
          x(i, d) += dt * velocity;
        }
      });
}

void scale(const Device& space, Vectors v, int n, double factor) {
  Kokkos::parallel_for(
      "minimd::scale", over(space, n), KOKKOS_LAMBDA(int i) {
        for (int d = 0; d < 3; ++d) v(i, d) *= factor;
      });
}

void subtract(const Device& space, Vectors v, int n, double vx, double vy, double vz) {
  Kokkos::parallel_for(
      "minimd::subtract", over(space, n), KOKKOS_LAMBDA(int i) {
        v(i, 0) -= vx;
        v(i, 1) -= vy;
        v(i, 2) -= vz;
      });
}

void momentum(const Device& space, Vectors v, int n, Payload into) {
  for (int d = 0; d < 3; ++d)
    Kokkos::parallel_reduce(
        "minimd::momentum", over(space, n), KOKKOS_LAMBDA(int i, double& sum) { sum += v(i, d); },
        Kokkos::Sum<double, Memory>(Kokkos::subview(into, d)));
}

void kinetic(const Device& space, Vectors v, int n, Payload into) {
  Kokkos::parallel_reduce(
      "minimd::kinetic", over(space, n),
      KOKKOS_LAMBDA(int i, double& sum) {
        sum += v(i, 0) * v(i, 0) + v(i, 1) * v(i, 1) + v(i, 2) * v(i, 2);
      },
      Kokkos::Sum<double, Memory>(Kokkos::subview(into, 0)));
}

namespace {
// A side's shift along the dimension crossed, and the largest coordinate a shifted one may
// take: an atom a hair below the lower face, shifted up by the box length, can round to the
// length itself (outside the box); it goes to the last double below it.
struct Shift {
  double by = 0, top = 0;
  explicit Shift(double shift) : by(shift), top(shift > 0 ? std::nextafter(shift, 0.0) : 0.0) {}
  KOKKOS_INLINE_FUNCTION double apply(double c) const {
    const double shifted = c + by;
    return by > 0 && shifted > top ? top : shifted;
  }
};

// Atom i's position, shifted along d, and velocity: record k of `out` (6 doubles), the
// records starting at element `offset`.
KOKKOS_INLINE_FUNCTION void pack_atom(const Vectors& x, const Vectors& v, int i, int d,
                                      const Shift& shift, const Payload& out, std::int64_t k,
                                      int offset = 0) {
  for (int e = 0; e < 3; ++e) {
    out(offset + 6 * k + e) = e == d ? shift.apply(x(i, e)) : x(i, e) + 0.0;  // as a shift of 0
    out(offset + 6 * k + 3 + e) = v(i, e);
  }
}

// Atom i's position, shifted along d: record k of `out` (3 doubles) after `offset`.
KOKKOS_INLINE_FUNCTION void pack_position(const Vectors& x, int i, int d, double shift,
                                          const Payload& out, std::int64_t k, int offset = 0) {
  for (int e = 0; e < 3; ++e) out(offset + 3 * k + e) = x(i, e) + (e == d ? shift : 0.0);
}

// Selection puts each of atoms [0, n) in the windows of its coordinate d: [-inf, below)
// (0), [above, inf) (1) and, with `staying`, [below, above) (2); with below > above (a unit
// thinner than two cutoffs) the first two overlap; NaN and +inf fall in none (counted into
// counters(lost) with `staying`). place(window, atom, k) is called with k the atom's number
// in its window, in index order; the counts go to the slots of `tally`. Two kernels over
// tiles of atoms (tile_of): the first counts each tile's atoms by window, the second has each
// tile sum the counts of the tiles before it and scan its own (a team of threads per
// tile; a thread per run of a tile's atoms and one team scan of the runs was slower: its
// reads do not coalesce), and its last tile writes the counts. Kokkos'
// parallel_scan over all atoms took two passes of ~20 us each at 157k atoms on an H200, one after
// another for every unit; these run at the memory's pace and side by side. With a device count, the
// tiles cover its bound and skip the atoms past the count.
// A tile is a team's: at most kTile atoms, and kTiles tiles or more where a tile keeps
// kMinTile atoms. With 2048-atom tiles a unit of 16k atoms (131k atoms at ODF 8) had 10
// teams, and its selections ran 30-60 us each on an H200 where 95 tiles took 23 us over
// eight times the atoms (docs/performance.md).
constexpr int kTile = 2048, kMinTile = 256, kTiles = 64;
int tile_of(int bound) {
  int tile = kMinTile;
  while (tile < kTile && tile * kTiles < bound) tile *= 2;
  return tile;
}
int tiles_of(int bound) {
  const int tile = tile_of(bound);
  return std::max(1, (bound + tile - 1) / tile);
}

// An atom's windows as one integer: a bit in each of three 21-bit fields, so that sums of
// up to a tile's atoms add field by field.
constexpr int kField = 21;
KOKKOS_INLINE_FUNCTION std::int64_t field(std::int64_t packed, int window) {
  return (packed >> (kField * window)) & ((std::int64_t(1) << kField) - 1);
}

template <bool staying>
struct Windows {
  Vectors x;
  int d;
  double below, above, inf;
  KOKKOS_INLINE_FUNCTION std::int64_t operator()(int i) const {
    const double c = x(i, d);
    std::int64_t packed = 0;
    if (c >= -inf && c < below) packed |= 1;
    if (c >= above && c < inf) packed |= std::int64_t(1) << kField;
    if (staying && c >= below && c < above) packed |= std::int64_t(1) << (2 * kField);
    return packed;
  }
};

template <bool staying, class Place>
void scan_windows(const Device& space, Vectors x, Count n, int d, double below, double above,
                  Counters counters, Indices tiles, const Tally& tally, const Place& place) {
  using Team = Kokkos::TeamPolicy<Device>::member_type;
  const int tile = tile_of(n.bound), count_tiles = tiles_of(n.bound);
  if (tiles.size() < static_cast<std::size_t>(3 * count_tiles))
    throw Error("minimd: the selection's tile counts need " + std::to_string(3 * count_tiles) +
                " ints, not " + std::to_string(tiles.size()));
  const Windows<staying> windows{x, d, below, above, std::numeric_limits<double>::infinity()};
  const int bound = n.bound;
  const auto tile_range = KOKKOS_LAMBDA(int t) {
    const int begin = t * tile;
    const int end = Kokkos::min(Kokkos::min(begin + tile, bound), Kokkos::min(n.get(), bound));
    return Kokkos::pair<int, int>(begin, Kokkos::max(begin, end));
  };
  Kokkos::parallel_for(
      "minimd::select_count", Kokkos::TeamPolicy<Device>(space, count_tiles, Kokkos::AUTO),
      KOKKOS_LAMBDA(const Team& team) {
        const int t = team.league_rank();
        const auto r = tile_range(t);
        std::int64_t sum = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, r.first, r.second),
            [&](int i, std::int64_t& partial) { partial += windows(i); }, sum);
        Kokkos::single(Kokkos::PerTeam(team), [&] {
          for (int w = 0; w < 3; ++w) tiles(3 * t + w) = static_cast<int>(field(sum, w));
        });
      });
  Kokkos::parallel_for(
      "minimd::select_place", light(Kokkos::TeamPolicy<Device>(space, count_tiles, Kokkos::AUTO)),
      KOKKOS_LAMBDA(const Team& team) {
        const int t = team.league_rank();
        // Where this tile's atoms go in each window: the counts of the tiles before it.
        std::int64_t before[3];
        for (int w = 0; w < 3; ++w) {
          std::int64_t sum = 0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, t),
              [&](int u, std::int64_t& partial) { partial += tiles(3 * u + w); }, sum);
          before[w] = sum;
        }
        const auto r = tile_range(t);
        Kokkos::parallel_scan(Kokkos::TeamThreadRange(team, r.first, r.second),
                              [&](int i, std::int64_t& prefix, bool last) {
                                const std::int64_t mine = windows(i);
                                if (last && mine != 0)
                                  for (int w = 0; w < (staying ? 3 : 2); ++w)
                                    if (field(mine, w) != 0)
                                      place(w, i, before[w] + field(prefix, w));
                                prefix += mine;
                              });
        if (t != count_tiles - 1) return;
        Kokkos::single(Kokkos::PerTeam(team), [&] {
          std::int64_t total[3];
          for (int w = 0; w < 3; ++w) total[w] = before[w] + tiles(3 * t + w);
          counters(tally.lo) = static_cast<int>(total[0]);
          counters(tally.hi) = static_cast<int>(total[1]);
          if (tally.headers) place.header(total[0], total[1]);
          if (staying) {  // not constexpr: nvcc lambdas may not first-capture there
            counters(tally.stay) = static_cast<int>(total[2]);
            const std::int64_t placed = total[0] + total[1] + total[2];
            const int atoms = Kokkos::min(n.get(), bound);
            if (placed != atoms)
              Kokkos::atomic_add(&counters(lost), atoms - static_cast<int>(placed));
          }
        });
      });
}

// Each side's count into element 0 of its buffer (the step program's messages).
KOKKOS_INLINE_FUNCTION void write_counts(const Payload (&outs)[2], std::int64_t lo,
                                         std::int64_t hi) {
  if (outs[0].size() > 0) outs[0](0) = static_cast<double>(lo);
  if (outs[1].size() > 0) outs[1](0) = static_cast<double>(hi);
}

// Migration: a leaving atom is listed, and packed while its side's buffer has room; a
// staying one is moved to the next free row of the spare arrays. `offset`: the records'
// first element in the buffers (1 where element 0 holds the count).
struct PlaceMigrant {
  Vectors x, v;
  int d;
  Indices lists[2];
  Payload outs[2];
  int offset;
  std::int64_t rooms[2];
  Shift shifts[2];
  Vectors x_stay, v_stay;
  KOKKOS_INLINE_FUNCTION void operator()(int window, int i, std::int64_t k) const {
    if (window == 2) {
      for (int e = 0; e < 3; ++e) {
        x_stay(k, e) = x(i, e);
        v_stay(k, e) = v(i, e);
      }
      return;
    }
    lists[window](k) = i;
    if (k < rooms[window]) pack_atom(x, v, i, d, shifts[window], outs[window], k, offset);
  }
  KOKKOS_INLINE_FUNCTION void header(std::int64_t lo, std::int64_t hi) const {
    write_counts(outs, lo, hi);
  }
};

// Borders: an atom near a face is listed, and its position packed while there is room
// (windows 0 and 1 only: scan_windows<false>).
struct PlaceBorder {
  Vectors x;
  int d;
  Indices lists[2];
  Payload outs[2];
  int offset;
  std::int64_t rooms[2];
  double shifts[2];
  KOKKOS_INLINE_FUNCTION void operator()(int window, int i, std::int64_t k) const {
    lists[window](k) = i;
    if (k < rooms[window]) pack_position(x, i, d, shifts[window], outs[window], k, offset);
  }
  KOKKOS_INLINE_FUNCTION void header(std::int64_t lo, std::int64_t hi) const {
    write_counts(outs, lo, hi);
  }
};

// Records of `per` doubles that fit `out` after its first `offset` elements.
std::int64_t room(const Payload& out, int offset, int per) {
  return out.size() > static_cast<std::size_t>(offset)
             ? static_cast<std::int64_t>((out.size() - offset) / per)
             : 0;
}
}  // namespace

// Up to kTile * kTiles atoms no bound has more than kTiles tiles; beyond, tiles_of grows
// with the bound.
int select_tiles(int n) { return 3 * std::max(kTiles, tiles_of(n)); }

void select_migrants(const Device& space, Vectors x, Vectors v, Count n, int d, double below,
                     double above, const Indices (&lists)[2], const Payload (&outs)[2],
                     const double (&shifts)[2], Vectors x_stay, Vectors v_stay, Counters counters,
                     Indices tiles, const Tally& tally) {
  const int offset = tally.headers ? 1 : 0;
  const PlaceMigrant place{x,
                           v,
                           d,
                           {lists[0], lists[1]},
                           {outs[0], outs[1]},
                           offset,
                           {room(outs[0], offset, 6), room(outs[1], offset, 6)},
                           {Shift(shifts[0]), Shift(shifts[1])},
                           x_stay,
                           v_stay};
  scan_windows<true>(space, x, n, d, below, above, counters, tiles, tally, place);
}

void select_borders(const Device& space, Vectors x, Count n, int d, double below, double above,
                    const Indices (&lists)[2], const Payload (&outs)[2], const double (&shifts)[2],
                    Counters counters, Indices tiles, const Tally& tally) {
  const int offset = tally.headers ? 1 : 0;
  const PlaceBorder place{x,
                          d,
                          {lists[0], lists[1]},
                          {outs[0], outs[1]},
                          offset,
                          {room(outs[0], offset, 3), room(outs[1], offset, 3)},
                          {shifts[0], shifts[1]}};
  scan_windows<false>(space, x, n, d, below, above, counters, tiles, tally, place);
}

void wrap(const Device& space, Vectors x, Count n, int d, double length) {
  Kokkos::parallel_for(
      "minimd::wrap", over(space, n), KOKKOS_LAMBDA(int i) {
        if (i >= n.get()) return;
        double c = x(i, d);
        if (c < 0) c += length;
        if (c >= length) c -= length;
        x(i, d) = c;
      });
}

void pack_atoms(const Device& space, Vectors x, Vectors v, const Indices (&lists)[2],
                const int (&counts)[2], int d, const double (&shifts)[2],
                const Payload (&outs)[2]) {
  const Indices list0 = lists[0], list1 = lists[1];
  const Payload out0 = outs[0], out1 = outs[1];
  const int count0 = counts[0];
  const Shift shift0(shifts[0]), shift1(shifts[1]);
  Kokkos::parallel_for(
      "minimd::pack_atoms_both", over(space, counts[0] + counts[1]), KOKKOS_LAMBDA(int j) {
        const bool first = j < count0;
        const int k = first ? j : j - count0;
        pack_atom(x, v, first ? list0(k) : list1(k), d, first ? shift0 : shift1,
                  first ? out0 : out1, k);
      });
}

void gather_atoms(const Device& space, Vectors x, Vectors v, Indices list, Count count,
                  Vectors x_out, Vectors v_out) {
  Kokkos::parallel_for(
      "minimd::gather_atoms", over(space, count), KOKKOS_LAMBDA(int k) {
        if (k >= count.get()) return;
        const int i = list(k);
        for (int e = 0; e < 3; ++e) {
          x_out(k, e) = x(i, e);
          v_out(k, e) = v(i, e);
        }
      });
}

void unpack_atoms(const Device& space, const Payload (&ins)[2], const Count (&counts)[2], Vectors x,
                  Vectors v, Count first) {
  const Payload in0 = ins[0], in1 = ins[1];
  const Count count0 = counts[0], count1 = counts[1];
  Kokkos::parallel_for(
      "minimd::unpack_atoms_both", over(space, count0.bound + count1.bound), KOKKOS_LAMBDA(int j) {
        const int c0 = count0.get();
        const bool from0 = j < c0;
        const int k = from0 ? j : j - c0;
        if (!from0 && k >= count1.get()) return;
        const Payload& in = from0 ? in0 : in1;
        const int row = first.get() + j;
        for (int e = 0; e < 3; ++e) {
          x(row, e) = in(6 * k + e);
          v(row, e) = in(6 * k + 3 + e);
        }
      });
}

void count_outside(const Device& space, Vectors x, Count n, Box box, Counters counters) {
  Kokkos::parallel_for(
      "minimd::count_outside", over(space, n), KOKKOS_LAMBDA(int i) {
        if (i >= n.get()) return;
        bool inside = true;
        for (int d = 0; d < 3; ++d) inside = inside && x(i, d) >= box.lo[d] && x(i, d) < box.hi[d];
        if (!inside) Kokkos::atomic_inc(&counters(lost));
      });
}

namespace {

// The six counts of unpack_and_pack_positions as slots of one Counters (a small functor:
// Kokkos launches one of 512 bytes or more through constant memory, which a step program
// cannot record).
struct PhaseCounts {
  Counters counters;
  int slot[6], bound[6];  // ins 0-1, firsts 2-3, outs 4-5
  KOKKOS_INLINE_FUNCTION int get(int n) const { return slot[n] < 0 ? bound[n] : counters(slot[n]); }
};

PhaseCounts phase_counts(const Count (&in_counts)[2], const Count (&firsts)[2],
                         const Count (&out_counts)[2]) {
  PhaseCounts c;
  const Count* all[6] = {&in_counts[0], &in_counts[1],  &firsts[0],
                         &firsts[1],    &out_counts[0], &out_counts[1]};
  for (int n = 0; n < 6; ++n) {
    c.slot[n] = all[n]->slot, c.bound[n] = all[n]->bound;
    if (all[n]->slot < 0) continue;
    if (c.counters.data() != nullptr && c.counters.data() != all[n]->counters.data())
      throw Error("minimd: unpack_and_pack_positions takes the counts of one unit");
    c.counters = all[n]->counters;
  }
  return c;
}

}  // namespace

void unpack_and_pack_positions(const Launch& to, const Payload (&ins)[2],
                               const Count (&in_counts)[2], const Count (&firsts)[2], Vectors x,
                               const Indices (&lists)[2], const Count (&out_counts)[2], int d,
                               const double (&shifts)[2], const Payload (&outs)[2]) {
  const PhaseCounts c = phase_counts(in_counts, firsts, out_counts);
  const Payload in0 = ins[0], in1 = ins[1], out0 = outs[0], out1 = outs[1];
  const Indices list0 = lists[0], list1 = lists[1];
  const double shift0 = shifts[0], shift1 = shifts[1];
  // The packs come first: run in order (a host backend), they read before the rows are
  // written, so what they take from the arrivals is what the test sees.
  const int packs = c.bound[4] + c.bound[5];
  to.parallel_for(
      "minimd::unpack_and_pack_positions", 0, packs + c.bound[0] + c.bound[1],
      KOKKOS_LAMBDA(int j) {
        if (j >= packs) {  // a ghost row that arrived
          const int side = j - packs < c.bound[0] ? 0 : 1;
          const int k = j - packs - (side == 0 ? 0 : c.bound[0]);
          if (k >= c.get(side)) return;
          const Payload& in = side == 0 ? in0 : in1;
          const int row = c.get(2 + side) + k;
          for (int e = 0; e < 3; ++e) x(row, e) = in(3 * k + e);
          return;
        }
        const int side = j < c.bound[4] ? 0 : 1;
        const int k = j - (side == 0 ? 0 : c.bound[4]);
        if (k >= c.get(4 + side)) return;
        const int i = side == 0 ? list0(k) : list1(k);
        const Payload& out = side == 0 ? out0 : out1;
        const double by = side == 0 ? shift0 : shift1;
        for (int from = 0; from < 2; ++from) {  // a row this kernel writes
          const int first = c.get(2 + from);
          if (i >= first && i < first + c.get(from)) {
            const Payload& in = from == 0 ? in0 : in1;
            for (int e = 0; e < 3; ++e)
              out(3 * k + e) = in(3 * (i - first) + e) + (e == d ? by : 0.0);
            return;
          }
        }
        pack_position(x, i, d, by, out, k);
      });
}

void copy_positions(const Launch& to, Vectors x, Indices list, Count count, int d, double shift,
                    Count first) {
  to.parallel_for(
      "minimd::copy_positions", 0, count.bound, KOKKOS_LAMBDA(int k) {
        if (k >= count.get()) return;
        const int i = list(k), row = first.get() + k;
        for (int e = 0; e < 3; ++e) x(row, e) = x(i, e) + (e == d ? shift : 0.0);
      });
}

void pack_rows(const Device& space, Vectors f, int first, int count, Payload out) {
  Kokkos::parallel_for(
      "minimd::pack_rows", over(space, count), KOKKOS_LAMBDA(int k) {
        for (int e = 0; e < 3; ++e) out(3 * k + e) = f(first + k, e);
      });
}

void add_forces(const Device& space, Payload in, Indices list, int count, Vectors f) {
  Kokkos::parallel_for(
      "minimd::add_forces", over(space, count), KOKKOS_LAMBDA(int k) {
        const int i = list(k);
        for (int e = 0; e < 3; ++e) f(i, e) += in(3 * k + e);
      });
}

void add_ghost_forces(const Device& space, Vectors f, int first, Indices list, int count) {
  Kokkos::parallel_for(
      "minimd::add_ghost_forces", over(space, count), KOKKOS_LAMBDA(int k) {
        const int i = list(k);
        for (int e = 0; e < 3; ++e) f(i, e) += f(first + k, e);
      });
}

}  // namespace minimd
