// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// minimd's device kernels: plain Kokkos, one function per step of the algorithm. Each
// runs asynchronously on the execution-space instance it is given.

#include <kodo/kodo.hpp>

#include <cstdint>
#include <string>

namespace minimd {

using Device = kodo::ExecutionSpace;
using Memory = Device::memory_space;
// Per-atom vectors (x, y, z), the unit's own atoms first, ghosts after. Each component
// is contiguous (LayoutLeft): a warp gathering one coordinate of 32 neighbours reads a
// third of the bytes it would read from rows of three, which makes the force 1.2x and
// the list build 1.3x faster on an H200 (perf/minimd_kernel_bench).
using Vectors = Kokkos::View<double* [3], Kokkos::LayoutLeft, Memory>;
using Indices = Kokkos::View<int*, Memory>;
// A unit's counts: written by kernels, read back by the host, and read by the kernels
// of its step programs (see Count).
using Counters = Kokkos::View<int*, Memory>;
// Neighbour lists in quads: four neighbours of one atom in 16 bytes, the slots of an
// atom's last quad past its count holding the atom itself. On GPUs the quads of a warp's 32
// atoms lie side by side (quad g of atom i at ((i / 32) groups + g) 32 + i % 32): the build
// stores four neighbours with one 16-byte store, where ints laid out atom-fastest took a
// scattered 4-byte store each (58% of its time), and the force loads four with one, a
// warp's 512 contiguous bytes. At 4M atoms on an H100 the build is 1.35x and the force
// 1.11x faster (perf/minimd_kernel_bench). On host backends an atom's quads are contiguous.
// Quads past the last one an atom fills are not initialised; readers stop at the count.
struct alignas(16) Quad {
  int j[4];
};
template <class Space>
class QuadLists {
 public:
  // Atoms whose quads lie side by side.
  static constexpr int side = kodo::host_build ? 1 : 32;
  QuadLists() = default;
  // Room for `atoms` atoms of up to `most` neighbours each (rounded up to whole quads).
  QuadLists(const std::string& label, int atoms, int most)
      : atoms_(atoms),
        groups_((most + 3) / 4),
        quads_(Kokkos::view_alloc(Kokkos::WithoutInitializing, label),
               static_cast<std::size_t>((atoms + side - 1) / side) * groups_ * side) {}
  KOKKOS_INLINE_FUNCTION int atoms() const { return atoms_; }
  // Neighbours an atom's list holds at most.
  KOKKOS_INLINE_FUNCTION int capacity() const { return 4 * groups_; }
  KOKKOS_INLINE_FUNCTION const Quad& quad(int i, int g) const { return quads_(at(i, g)); }
  KOKKOS_INLINE_FUNCTION void store(int i, int g, const Quad& q) const { quads_(at(i, g)) = q; }
  // Neighbour k of atom i.
  KOKKOS_INLINE_FUNCTION int operator()(int i, int k) const { return quad(i, k / 4).j[k % 4]; }
  // Where the quads are (a step program checks that its captured lists are current).
  const Quad* data() const { return quads_.data(); }
  // A copy in host memory (tests, checks).
  QuadLists<Kokkos::HostSpace> to_host() const {
    QuadLists<Kokkos::HostSpace> host;
    host.atoms_ = atoms_;
    host.groups_ = groups_;
    host.quads_ = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), quads_);
    return host;
  }

 private:
  template <class>
  friend class QuadLists;
  KOKKOS_INLINE_FUNCTION std::size_t at(int i, int g) const {
    return (static_cast<std::size_t>(i / side) * groups_ + g) * side + i % side;
  }
  int atoms_ = 0, groups_ = 0;
  Kokkos::View<Quad*, Space> quads_;
};
using NeighborList = QuadLists<Memory>;
// What travels between units: flat arrays of doubles.
using Payload = Kokkos::View<double*, Memory>;

// Slots of a unit's Counters.
enum Counter : int {
  lost,            // atoms that arrived outside the unit, or whose position is not finite
  overflow,        // 1: a reneighboring program met a count beyond a capacity
  interior,        // own atoms ordered first by order_interior_first
  to_lo,           // atoms selected for the lower neighbour
  to_hi,           // ... for the upper one
  staying,         // atoms that stay (migration)
  most_neighbors,  // the longest neighbour list built
  // What the step programs' kernels read (written at each reneighboring):
  own,                               // the unit's own atoms
  all_atoms,                         // own atoms and ghosts
  ghost_first,                       // + 2 d + side: first row of the ghosts from a side along d
  ghost_count = ghost_first + 6,     // + 2 d + side: their number
  border_count = ghost_count + 6,    // + 2 d + toward: atoms listed toward a side along d
  migrant_count = border_count + 6,  // + 2 d + toward: atoms that left toward a side
  arrived = migrant_count + 6,       // + 2 d + side: atoms that came from a side
  counter_slots = arrived + 6
};
// Where a selection scan's counts go: three slots, and with `headers` also element 0 of
// each side's buffer (a step program's messages carry their count, records after it).
struct Tally {
  int lo = to_lo, hi = to_hi, stay = staying;
  bool headers = false;
};
// How many atoms (or list entries) a kernel works on: known on the host (an int), or
// read by the device from sizes(slot) when the kernel runs, at most `bound`. The second
// serves a step program's work, which is recorded once and replayed while the counts
// change at each reneighboring.
struct Count {
  Count(int n) : bound(n) {}  // implicit: a host count reads as itself
  Count(Counters counters, int slot, int bound) : bound(bound), counters(counters), slot(slot) {}
  KOKKOS_INLINE_FUNCTION int get() const { return slot < 0 ? bound : counters(slot); }
  int bound = 0;
  Counters counters;
  int slot = -1;
};

// Where a kernel of a step goes: onto an execution-space instance, where it runs as
// launched, or into a kodo::KernelBatch, where it runs with the same kernel of the rank's
// other units (the rounds of a step program's plain step, atom_unit_programs.cpp). The
// kernels that take one run either way; a caller with an instance passes it as it is.
class Launch {
 public:
  Launch(const Device& space) : space_(&space) {}  // implicit: an instance is a launch
  Launch(kodo::KernelBatch& batch) : batch_(&batch) {}
  // functor(i) for i in [begin, end), as Kokkos::parallel_for with a RangePolicy would.
  template <class F>
  void parallel_for(const char* label, int begin, int end, const F& functor) const {
    if (batch_)
      batch_->parallel_for(label, begin, end, functor);
    else
      Kokkos::parallel_for(label, Kokkos::RangePolicy<Device>(*space_, begin, end), functor);
  }
  // The instance, for kernels that do not go in a batch (a reduction).
  const Device& space() const;

 private:
  const Device* space_ = nullptr;
  kodo::KernelBatch* batch_ = nullptr;
};

// A unit's subdomain: [lo, hi) along each dimension.
struct Box {
  double lo[3], hi[3];
};

// -- integration ------------------------------------------------------------------
void initial_integrate(const Launch& to, Vectors x, Vectors v, Vectors f, Count n, double dt);
void final_integrate(const Launch& to, Vectors v, Vectors f, Count n, double dt);
// final_integrate of one step and initial_integrate of the next in one pass (the forces
// are the same): the same operations in the same order, so the same bits, reading v and f
// once rather than twice (about 0.1 ms a step at 4M atoms on an H100).
void integrate_across(const Device& space, Vectors x, Vectors v, Vectors f, Count n, double dt);
void scale(const Device& space, Vectors v, int n, double factor);
void subtract(const Device& space, Vectors v, int n, double vx, double vy, double vz);
// into(0..2) = sum of v over n atoms
void momentum(const Device& space, Vectors v, int n, Payload into);
// into(0) = sum of |v|^2 over n atoms (mass 1)
void kinetic(const Device& space, Vectors v, int n, Payload into);

// -- selection and movement between units ---------------------------------------------
// Migration along d, in one scan over atoms [0, n): those below `below` leave toward the
// lower side (0), those at or above `above` toward the upper one (1), each side's listed in
// index order in lists[s] and, while outs[s] has room, packed there as pack_atoms would
// (shifted by shifts[s]); the others stay, moved in index order to rows [0, stay) of
// (x_stay, v_stay), which need room for n. Counts into the slots of `tally` (to_lo, to_hi
// and staying); an atom whose coordinate is NaN or +inf is in none of them, and counted
// into counters(lost).
// `tiles`: scratch of select_tiles(n.bound) ints (the counts of the tiles the atoms are
// selected in).
void select_migrants(const Device& space, Vectors x, Vectors v, Count n, int d, double below,
                     double above, const Indices (&lists)[2], const Payload (&outs)[2],
                     const double (&shifts)[2], Vectors x_stay, Vectors v_stay, Counters counters,
                     Indices tiles, const Tally& tally = {});
// Borders along d, in one scan: atoms [0, n) below `below` toward side 0, at or above
// `above` toward side 1 (with below > above, a unit thinner than two cutoffs, an atom can
// go both ways), listed in lists[s] and, while outs[s] has room, their positions packed
// there (3 doubles an atom, shifted by shifts[s] along d). Counts into the slots of
// `tally` (to_lo and to_hi).
void select_borders(const Device& space, Vectors x, Count n, int d, double below, double above,
                    const Indices (&lists)[2], const Payload (&outs)[2], const double (&shifts)[2],
                    Counters counters, Indices tiles, const Tally& tally = {});
// The scratch a selection over up to n atoms needs, in ints.
int select_tiles(int n);
// Wraps coordinate d of atoms [0, n) into [0, length) (a dimension of one unit).
void wrap(const Device& space, Vectors x, Count n, int d, double length);
// outs[s] = (x + shifts[s] e_d, v) of the first counts[s] atoms of lists[s], 6 doubles per
// atom (shift 0: no shift), for both sides s in one kernel: at ODF 8 a reneighboring step is
// bound by the host's launches.
void pack_atoms(const Device& space, Vectors x, Vectors v, const Indices (&lists)[2],
                const int (&counts)[2], int d, const double (&shifts)[2], const Payload (&outs)[2]);
// Moves the listed atoms to rows [0, count) of (x_out, v_out).
void gather_atoms(const Device& space, Vectors x, Vectors v, Indices list, Count count,
                  Vectors x_out, Vectors v_out);
// Rows [first, first + counts[0]) of (x, v) = the atoms packed in ins[0], and the
// counts[1] rows after them those of ins[1], in one kernel.
void unpack_atoms(const Device& space, const Payload (&ins)[2], const Count (&counts)[2], Vectors x,
                  Vectors v, Count first);
// Counts into counters(lost) the atoms of [0, n) outside `box` (or not finite).
void count_outside(const Device& space, Vectors x, Count n, Box box, Counters counters);
// A phase of the ghost exchange in one kernel: the ghosts that arrived along d - 1
// (ins[s], in_counts[s] rows from firsts[s]) written into x, and the positions toward both
// sides along d packed (outs[s]: 3 doubles for each of the first out_counts[s] atoms of
// lists[s], shifted by shifts[s] along d). A listed row the same kernel writes is read
// from what arrived: the same doubles. Either part may be empty (counts of bound 0), as on
// the unit path, which packs and unpacks apart. Every count must read from the same
// counters (a unit's) or be a host count.
void unpack_and_pack_positions(const Launch& to, const Payload (&ins)[2],
                               const Count (&in_counts)[2], const Count (&firsts)[2], Vectors x,
                               const Indices (&lists)[2], const Count (&out_counts)[2], int d,
                               const double (&shifts)[2], const Payload (&outs)[2]);
// Ghost rows [first, first + count) of x from the listed atoms of the same unit, shifted.
void copy_positions(const Launch& to, Vectors x, Indices list, Count count, int d, double shift,
                    Count first);
// Reverse communication: out = rows [first, first + count) of f.
void pack_rows(const Device& space, Vectors f, int first, int count, Payload out);
// f of the listed atoms += the packed forces.
void add_forces(const Device& space, Payload in, Indices list, int count, Vectors f);
// f of the listed atoms += f of rows [first, first + count) (ghosts of the same unit).
void add_ghost_forces(const Device& space, Vectors f, int first, Indices list, int count);

// -- binning and neighbour lists ----------------------------------------------------
// A grid of bins over a unit and its ghost region.
struct BinGrid {
  double origin[3];
  double inverse_size[3];
  int count[3];
  KOKKOS_INLINE_FUNCTION int total() const { return count[0] * count[1] * count[2]; }
};
// The bins that can hold atoms within `cutoff` of an atom in bin 0, as rows along x: row
// r holds the offsets (dx, stencil(r, 0), stencil(r, 1)) for dx from stencil(r, 2) to
// stencil(r, 3). A row's bins are consecutive in bin order, so their atoms are one range
// of bin_atoms: the list build reads two bounds a row rather than two a bin (about 25
// rows for 90 bins at the default bin size).
using Stencil = Kokkos::View<int* [4], Kokkos::LayoutRight, Memory>;

// visit(j) for every atom j but i in the stencil's bins around bin `bin` (bin_atoms of
// each bin b at [bin_start(b), bin_start(b + 1))), in stencil order, a row's bins as one
// range: the candidates of i's neighbour list, for the app's build and the bench's.
template <class Visit>
KOKKOS_FORCEINLINE_FUNCTION void for_each_candidate(const BinGrid& grid, const Stencil& stencil,
                                                    const Indices& bin_start,
                                                    const Indices& bin_atoms, int bin, int i,
                                                    Visit&& visit) {
  const int bx = bin % grid.count[0];
  const int by = (bin / grid.count[0]) % grid.count[1];
  const int bz = bin / (grid.count[0] * grid.count[1]);
  const int rows = static_cast<int>(stencil.extent(0));
  for (int r = 0; r < rows; ++r) {
    const int cy = by + stencil(r, 0), cz = bz + stencil(r, 1);
    if (cy < 0 || cz < 0 || cy >= grid.count[1] || cz >= grid.count[2]) continue;
    const int first = Kokkos::max(0, bx + stencil(r, 2));
    const int last = Kokkos::min(grid.count[0] - 1, bx + stencil(r, 3));
    if (first > last) continue;
    const int row = (cz * grid.count[1] + cy) * grid.count[0];
    for (int p = bin_start(row + first); p < bin_start(row + last + 1); ++p) {
      const int j = bin_atoms(p);
      if (j != i) visit(j);
    }
  }
}
Stencil make_stencil(const BinGrid& grid, double cutoff);

// Sorts atoms [0, n) into bins: bin_of(i), bin_start (total + 1), and bin_atoms (the atoms
// of bin b at [bin_start(b), bin_start(b + 1)), in index order so the result does not
// depend on thread timing). `fill` is scratch of `total` ints.
void bin_atoms(const Device& space, Vectors x, Count n, const BinGrid& grid, Indices bin_of,
               Indices bin_start, Indices fill, Indices bin_atoms);

// Orders atoms [0, n) as bin_atoms, but with the atoms at least `margin` inside `box` on
// every side (with margin > the list cutoff, no ghost can be in their lists) before all
// the others, each group in bin order; the first group's size goes into
// counters(interior). bin_start needs 2 total + 1 ints, fill 2 total.
void order_interior_first(const Device& space, Vectors x, Count n, const BinGrid& grid,
                          const Box& box, double margin, Indices bin_of, Indices bin_start,
                          Indices fill, Indices order, Counters counters);

enum class ListKind { full, half, half_newton };
// Neighbour lists of atoms [0, nlocal) over atoms [0, nall), within `cutoff`: full
// (every neighbour), half (local j > i, every ghost) or half_newton (local j > i, ghosts
// "above" i: each pair across units listed by one side only). At most
// neighbors.capacity() per atom; the longest list (kept or not) is counted into
// counters(most_neighbors).
void build_neighbors(const Device& space, Vectors x, Count nlocal, const BinGrid& grid,
                     Stencil stencil, Indices bin_of, Indices bin_start, Indices bin_atoms,
                     double cutoff, ListKind kind, NeighborList neighbors, Indices count,
                     Counters counters);

// -- the reneighboring program's own (atom_unit.hpp) ----------------------------------
// Its counts stay on the device: these kernels read and write slots of `counters`. A count
// beyond a capacity sets counters(overflow) and is cut to fit (the host then runs the step
// again unit by unit, with more room).

// Rows [0, own) of x, v and f saved (the step as it began, should it run again), and
// counters(lost) and (overflow) set to 0.
void save_atoms(const Device& space, Vectors x, Vectors v, Vectors f, Count own, Vectors x_saved,
                Vectors v_saved, Vectors f_saved, Counters counters);
// Migration's arrivals along d: counters(arrived + 2 d + s) = the count in element 0 of
// ins[s] (its records after it); counters(own) = counters(staying) + both, at most `rows`.
void count_arrivals(const Device& space, const Payload (&ins)[2], int d, int rows,
                    Counters counters);
// The ghost rows along d: (ghost_first + 2 d + s, ghost_count + 2 d + s) from
// counters(all_atoms) on, which grows by both sides' counts, each at most rooms[s], all
// at most to `rows`. The counts are in element 0 of ins[s]; with no ins, the ghosts are
// images of the unit's own atoms: those from side s are the ones listed toward the other.
void count_ghosts(const Device& space, const Payload (&ins)[2], const int (&rooms)[2], int d,
                  int rows, Counters counters);
// counters(to) = counters(from).
void copy_count(const Device& space, Counters counters, int from, int to);
// Sets counters(overflow) if counters(slot) > most.
void check_count(const Device& space, Counters counters, int slot, int most);
// Rows [0, n) of (x, v) = those of (x_from, v_from).
void copy_atoms(const Device& space, Vectors x_from, Vectors v_from, Count n, Vectors x, Vectors v);

// -- force --------------------------------------------------------------------------
struct Potential {
  double cutoff_sq, epsilon, sigma6;
};
// Lennard-Jones forces on atoms [0, nlocal) (and, for half lists, on ghosts [nlocal,
// nall), which half_newton lists require), zeroing f first. With `energy`, also
// ev(0) = potential energy and ev(1) = virial of the unit's pairs, each pair once.
void force(const Device& space, Vectors x, Vectors f, int nlocal, int nall, NeighborList neighbors,
           Indices count, ListKind kind, const Potential& p, bool energy, Payload ev);
// Full lists: the force on own atoms [first, last) only, so that atoms whose lists hold
// no ghost can run before the ghosts are updated. With `energy`, ev holds the sums over
// that range alone (with an instance only: a reduction is no batch's).
void force_full(const Launch& to, Vectors x, Vectors f, Count first, Count last, int nlocal,
                NeighborList neighbors, Indices count, const Potential& p, bool energy, Payload ev);

}  // namespace minimd
