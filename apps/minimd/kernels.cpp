// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace minimd {
namespace {
using Range = Kokkos::RangePolicy<Device>;
Range over(const Device& space, int n) { return Range(space, 0, n); }
// Up to a count's bound; the kernel skips items at or past the count itself.
Range over(const Device& space, const Count& n) { return Range(space, 0, n.bound); }
// For kernels that carry many views: Kokkos passes a functor of over 512 bytes through
// constant memory unless hinted, which a step program's recording cannot replay.
template <class Policy>
auto light(const Policy& policy) {
  return Kokkos::Experimental::require(policy,
                                       Kokkos::Experimental::WorkItemProperty::HintLightWeight);
}
}  // namespace

void initial_integrate(const Device& space, Vectors x, Vectors v, Vectors f, Count n, double dt) {
  const double half = 0.5 * dt;  // dt / 2m, mass 1
  Kokkos::parallel_for(
      "minimd::initial_integrate", over(space, n), KOKKOS_LAMBDA(int i) {
        if (i >= n.get()) return;
        for (int d = 0; d < 3; ++d) {
          v(i, d) += half * f(i, d);
          x(i, d) += dt * v(i, d);
        }
      });
}

void final_integrate(const Device& space, Vectors v, Vectors f, Count n, double dt) {
  const double half = 0.5 * dt;
  Kokkos::parallel_for(
      "minimd::final_integrate", over(space, n), KOKKOS_LAMBDA(int i) {
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
// tiles of kTile atoms: the first counts each tile's atoms by window, the second has each
// tile sum the counts of the tiles before it and scan its own (a team of threads per
// tile; a thread per run of a tile's atoms and one team scan of the runs was slower: its
// reads do not coalesce), and its last tile writes the counts. Kokkos'
// parallel_scan over all atoms took two passes of ~20 us each at 157k atoms on an H200, one after
// another for every unit; these run at the memory's pace and side by side. With a device count, the
// tiles cover its bound and skip the atoms past the count.
constexpr int kTile = 2048;
int tiles_of(int bound) { return std::max(1, (bound + kTile - 1) / kTile); }

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
  const int count_tiles = tiles_of(n.bound);
  if (tiles.size() < static_cast<std::size_t>(3 * count_tiles))
    throw std::runtime_error("minimd: the selection's tile counts need " +
                             std::to_string(3 * count_tiles) + " ints, not " +
                             std::to_string(tiles.size()));
  const Windows<staying> windows{x, d, below, above, std::numeric_limits<double>::infinity()};
  const int bound = n.bound;
  const auto tile_range = KOKKOS_LAMBDA(int t) {
    const int begin = t * kTile;
    const int end = Kokkos::min(Kokkos::min(begin + kTile, bound), Kokkos::min(n.get(), bound));
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

int select_tiles(int n) { return 3 * tiles_of(n); }

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

void pack_positions(const Device& space, Vectors x, Indices list, Count count, int d, double shift,
                    Payload out) {
  Kokkos::parallel_for(
      "minimd::pack_positions", over(space, count), KOKKOS_LAMBDA(int k) {
        if (k < count.get()) pack_position(x, list(k), d, shift, out, k);
      });
}

void pack_positions(const Device& space, Vectors x, const Indices (&lists)[2],
                    const int (&counts)[2], int d, const double (&shifts)[2],
                    const Payload (&outs)[2]) {
  const Indices list0 = lists[0], list1 = lists[1];
  const Payload out0 = outs[0], out1 = outs[1];
  const int count0 = counts[0];
  const double shift0 = shifts[0], shift1 = shifts[1];
  Kokkos::parallel_for(
      "minimd::pack_positions_both", over(space, counts[0] + counts[1]), KOKKOS_LAMBDA(int j) {
        const bool first = j < count0;
        const int k = first ? j : j - count0;
        pack_position(x, first ? list0(k) : list1(k), d, first ? shift0 : shift1,
                      first ? out0 : out1, k);
      });
}

void unpack_rows(const Device& space, Payload in, Count count, Vectors x, Count first) {
  Kokkos::parallel_for(
      "minimd::unpack_rows", over(space, count), KOKKOS_LAMBDA(int k) {
        if (k >= count.get()) return;
        const int row = first.get() + k;
        for (int e = 0; e < 3; ++e) x(row, e) = in(3 * k + e);
      });
}

void unpack_rows(const Device& space, const Payload (&ins)[2], const int (&counts)[2],
                 const int (&firsts)[2], Vectors x) {
  const Payload in0 = ins[0], in1 = ins[1];
  const int count0 = counts[0], first0 = firsts[0], first1 = firsts[1];
  Kokkos::parallel_for(
      "minimd::unpack_rows_both", over(space, counts[0] + counts[1]), KOKKOS_LAMBDA(int j) {
        const bool from0 = j < count0;
        const int k = from0 ? j : j - count0;
        const Payload& in = from0 ? in0 : in1;
        const int row = (from0 ? first0 : first1) + k;
        for (int e = 0; e < 3; ++e) x(row, e) = in(3 * k + e);
      });
}

void copy_positions(const Device& space, Vectors x, Indices list, Count count, int d, double shift,
                    Count first) {
  Kokkos::parallel_for(
      "minimd::copy_positions", over(space, count), KOKKOS_LAMBDA(int k) {
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
void run_force(const char* name, const Device& space, const Count& first, const Count& last,
               const Functor& functor, bool energy, Payload ev) {
  const int begin = first.slot < 0 ? first.bound : 0;
  const int end = std::max(begin, last.bound);
  auto launch = [&](const auto& forces) {
    if (energy)
      Kokkos::parallel_reduce(name, Kokkos::RangePolicy<Device, Energy>(space, begin, end), forces,
                              Kokkos::Sum<double, Memory>(Kokkos::subview(ev, 0)),
                              Kokkos::Sum<double, Memory>(Kokkos::subview(ev, 1)));
    else
      Kokkos::parallel_for(name, Range(space, begin, end), forces);
  };
  if (first.slot < 0 && last.slot < 0)
    launch(functor);
  else
    launch(Between<Functor>{functor, first, last});
}
}  // namespace

void force_full(const Device& space, Vectors x, Vectors f, Count first, Count last, int nlocal,
                NeighborList neighbors, Indices count, const Potential& p, bool energy,
                Payload ev) {
  run_force("minimd::force_full", space, first, last,
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
