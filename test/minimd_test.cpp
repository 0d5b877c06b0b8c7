// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// MiniMD's interior-first order: the atoms it puts first have no ghost in their neighbour
// lists, so the app may run their force before the ghosts are updated, and the force in
// two parts equals the force in one. And the kernels given counts the device reads (the
// step program's) do what they do given the same counts on the host, and no more. And
// select's windows and the packs and unpacks of both sides at once (reneighboring). And
// the neighbour lists in quads.
#include "test_runtime.hpp"

#include <gtest/gtest.h>
#include <minimd/error.hpp>
#include <minimd/kernels.hpp>
#include <minimd/options.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace {

using minimd::Indices;
using minimd::Vectors;

constexpr double kCut = 2.8;  // the neighbour-list cutoff (force cutoff 2.5 + skin 0.3)

// An FCC lattice of cells^3 cells at density 0.8442, each atom moved by a fixed pattern
// of up to 0.2, in a periodic box [0, length)^3; then the periodic images within kCut
// of the box, as the app's ghosts.
struct Atoms {
  double length = 0;
  int nlocal = 0;
  std::vector<double> xyz;  // own atoms, then images
};

Atoms lattice(int cells) {
  Atoms a;
  const double spacing = std::cbrt(4.0 / 0.8442);
  a.length = cells * spacing;
  const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
  int n = 0;
  for (int k = 0; k < cells; ++k)
    for (int j = 0; j < cells; ++j)
      for (int i = 0; i < cells; ++i)
        for (const auto& b : basis) {
          const int cell[3] = {i, j, k};
          for (int d = 0; d < 3; ++d) {
            const double c = (cell[d] + b[d]) * spacing + 0.2 * std::sin(1.7 * n + 2.3 * d);
            a.xyz.push_back(std::fmod(c + a.length, a.length));
          }
          ++n;
        }
  a.nlocal = n;
  for (int atom = 0; atom < n; ++atom)
    for (int s = 0; s < 27; ++s) {
      const int shift[3] = {s % 3 - 1, s / 3 % 3 - 1, s / 9 - 1};
      if (shift[0] == 0 && shift[1] == 0 && shift[2] == 0) continue;
      double p[3];
      bool near = true;
      for (int d = 0; d < 3; ++d) {
        p[d] = a.xyz[3 * atom + d] + shift[d] * a.length;
        near = near && p[d] >= -kCut && p[d] < a.length + kCut;
      }
      if (near) a.xyz.insert(a.xyz.end(), p, p + 3);
    }
  return a;
}

// The atoms' positions (own atoms, then images) in a device view.
Vectors positions(const Atoms& a) {
  const int n = static_cast<int>(a.xyz.size() / 3);
  Vectors x("x", n);
  auto hx = Kokkos::create_mirror_view(x);
  for (int i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) hx(i, d) = a.xyz[3 * i + d];
  Kokkos::deep_copy(x, hx);
  return x;
}

// Bins half a list cutoff wide over the box and its ghost region (the app's default).
minimd::BinGrid half_cutoff_bins(const Atoms& a) {
  minimd::BinGrid grid{};
  for (int d = 0; d < 3; ++d) {
    grid.origin[d] = -kCut;
    grid.inverse_size[d] = 2.0 / kCut;
    grid.count[d] = static_cast<int>(std::ceil((a.length + 2 * kCut) * grid.inverse_size[d]));
  }
  return grid;
}

TEST(MinimdInteriorFirst, InnerAtomsFirstWithoutGhostNeighbours) {
  const minimd::Device space;
  const Atoms a = lattice(8);
  const int nlocal = a.nlocal, nall = static_cast<int>(a.xyz.size() / 3);
  const Vectors x = positions(a);
  Vectors v("v", nall), xs("x_sorted", nall), vs("v_sorted", nall);
  const minimd::BinGrid grid = half_cutoff_bins(a);
  const minimd::Box box{{0, 0, 0}, {a.length, a.length, a.length}};
  const double margin = 1.000001 * kCut;
  Indices bin_of("bin_of", nall), start("start", 2 * grid.total() + 1),
      fill("fill", 2 * grid.total()), order("order", nall);
  minimd::Counters counters("counters", minimd::counter_slots);
  minimd::order_interior_first(space, x, nlocal, grid, box, margin, bin_of, start, fill, order,
                               counters);
  minimd::gather_atoms(space, x, v, order, nlocal, xs, vs);
  Kokkos::deep_copy(space, Kokkos::subview(xs, std::make_pair(nlocal, nall), Kokkos::ALL),
                    Kokkos::subview(x, std::make_pair(nlocal, nall), Kokkos::ALL));
  auto ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), order);
  auto hc = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), counters);
  const int interior = static_cast<int>(hc(minimd::interior));
  ASSERT_GT(interior, 0);
  ASSERT_LT(interior, nlocal);

  // A permutation of the own atoms; the first group lies at least `margin` inside the
  // box, the second does not; each group in bin order.
  std::vector<int> seen(nlocal, 0);
  for (int i = 0; i < nlocal; ++i) {
    ASSERT_GE(ho(i), 0);
    ASSERT_LT(ho(i), nlocal);
    ++seen[ho(i)];
  }
  for (int atom = 0; atom < nlocal; ++atom) EXPECT_EQ(seen[atom], 1) << "atom " << atom;
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), xs);
  auto bin = [&](int i) {
    int b[3];
    for (int d = 0; d < 3; ++d)
      b[d] = static_cast<int>((hs(i, d) - grid.origin[d]) * grid.inverse_size[d]);
    return (b[2] * grid.count[1] + b[1]) * grid.count[0] + b[0];
  };
  for (int i = 0; i < nlocal; ++i) {
    bool inside = true;
    for (int d = 0; d < 3; ++d)
      inside = inside && hs(i, d) >= margin && hs(i, d) < a.length - margin;
    EXPECT_EQ(inside, i < interior) << "atom " << i;
    if (i > 0 && i != interior) {
      EXPECT_LE(bin(i - 1), bin(i)) << "atom " << i;
    }
  }

  // Full lists over own atoms and images: no image in the first group's lists.
  const auto stencil = minimd::make_stencil(grid, kCut);
  minimd::bin_atoms(space, xs, nall, grid, bin_of, start, fill, order);
  minimd::NeighborList lists("lists", nlocal, 128);
  Indices count("count", nlocal);
  minimd::build_neighbors(space, xs, nlocal, grid, stencil, bin_of, start, order, kCut,
                          minimd::ListKind::full, lists, count, counters);
  const auto hl = lists.to_host();
  auto hn = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), count);
  int with_images = 0;
  for (int i = 0; i < nlocal; ++i) {
    ASSERT_LE(hn(i), 128);
    bool image = false;
    for (int k = 0; k < hn(i); ++k) image = image || hl(i, k) >= nlocal;
    if (i < interior) {
      EXPECT_FALSE(image) << "atom " << i;
    }
    with_images += image;
  }
  EXPECT_GT(with_images, 0);

  // The force in two parts, as the app runs it, equals the force in one, though the
  // first part runs with the images' positions not yet valid (NaN here).
  const minimd::Potential p{2.5 * 2.5, 1.0, 1.0};
  minimd::Payload ev("ev", 2);
  Vectors f_one("f_one", nall), f_two("f_two", nall), stale("x_stale", nall);
  minimd::force(space, xs, f_one, nlocal, nall, lists, count, minimd::ListKind::full, p, false, ev);
  Kokkos::deep_copy(stale, xs);
  Kokkos::deep_copy(Kokkos::subview(stale, std::make_pair(nlocal, nall), Kokkos::ALL),
                    std::nan(""));
  minimd::force_full(space, stale, f_two, 0, interior, nlocal, lists, count, p, false, ev);
  minimd::force_full(space, xs, f_two, interior, nlocal, nlocal, lists, count, p, false, ev);
  auto h1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), f_one);
  auto h2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), f_two);
  for (int i = 0; i < nlocal; ++i)
    for (int d = 0; d < 3; ++d) EXPECT_EQ(h1(i, d), h2(i, d)) << "atom " << i;

  // The same two parts with the ends read by the device, launched over every row: the
  // same forces, and the rows past nlocal untouched.
  Indices sizes("sizes", 2);
  auto hs_sizes = Kokkos::create_mirror_view(sizes);
  hs_sizes(0) = interior;
  hs_sizes(1) = nlocal;
  Kokkos::deep_copy(sizes, hs_sizes);
  const minimd::Count inner(sizes, 0, nall), own(sizes, 1, nall);
  Vectors f_device("f_device", nall);
  Kokkos::deep_copy(f_device, 7.0);
  minimd::force_full(space, stale, f_device, 0, inner, nlocal, lists, count, p, false, ev);
  minimd::force_full(space, xs, f_device, inner, own, nlocal, lists, count, p, false, ev);
  auto h3 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), f_device);
  for (int i = 0; i < nall; ++i)
    for (int d = 0; d < 3; ++d) {
      if (i < nlocal) {
        EXPECT_EQ(h1(i, d), h3(i, d)) << "atom " << i;
      } else {
        EXPECT_EQ(h3(i, d), 7.0) << "row " << i;
      }
    }
}

// The lists in quads against a search of every pair: each atom's neighbours within kCut,
// full and half, the unfilled slots of its last quad holding the atom itself; a list
// longer than its room keeps its first neighbours and counts them all (and the longest),
// and the force then sums exactly the pairs kept.
TEST(MinimdLists, QuadsHoldEveryNeighbourAndOnlyWhatFits) {
  const minimd::Device space;
  const Atoms a = lattice(5);
  const int nlocal = a.nlocal, nall = static_cast<int>(a.xyz.size() / 3);
  const Vectors x = positions(a);
  const auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  const minimd::BinGrid grid = half_cutoff_bins(a);
  const auto stencil = minimd::make_stencil(grid, kCut);
  Indices bin_of("bin_of", nall), start("start", grid.total() + 1), fill("fill", grid.total()),
      order("order", nall), count("count", nlocal);
  minimd::Counters counters("counters", minimd::counter_slots);
  minimd::bin_atoms(space, x, nall, grid, bin_of, start, fill, order);
  auto distance_sq = [&](int i, int j) {
    double r = 0;
    for (int d = 0; d < 3; ++d) r += (hx(i, d) - hx(j, d)) * (hx(i, d) - hx(j, d));
    return r;
  };

  for (const auto kind : {minimd::ListKind::full, minimd::ListKind::half}) {
    SCOPED_TRACE(kind == minimd::ListKind::full ? "full" : "half");
    minimd::NeighborList lists("lists", nlocal, 128);
    minimd::build_neighbors(space, x, nlocal, grid, stencil, bin_of, start, order, kCut, kind,
                            lists, count, counters);
    const auto hl = lists.to_host();
    auto hn = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), count);
    for (int i = 0; i < nlocal; ++i) {
      std::vector<int> expected, listed;
      for (int j = 0; j < nall; ++j)
        if (j != i && distance_sq(i, j) <= kCut * kCut &&
            (kind == minimd::ListKind::full || j >= nlocal || j > i))
          expected.push_back(j);
      ASSERT_EQ(hn(i), static_cast<int>(expected.size())) << "atom " << i;
      for (int k = 0; k < hn(i); ++k) listed.push_back(hl(i, k));
      std::sort(listed.begin(), listed.end());
      EXPECT_EQ(listed, expected) << "atom " << i;
      for (int k = hn(i); k % 4 != 0; ++k) EXPECT_EQ(hl(i, k), i) << "atom " << i << " slot " << k;
    }
  }

  // Room for 10 (rounded up to 12): the first 12 of each list kept, all counted.
  minimd::NeighborList full("full", nlocal, 128), short_lists("short", nlocal, 10);
  EXPECT_EQ(short_lists.capacity(), 12);
  EXPECT_EQ(short_lists.atoms(), nlocal);
  Indices short_count("short_count", nlocal);
  minimd::build_neighbors(space, x, nlocal, grid, stencil, bin_of, start, order, kCut,
                          minimd::ListKind::full, full, count, counters);
  minimd::build_neighbors(space, x, nlocal, grid, stencil, bin_of, start, order, kCut,
                          minimd::ListKind::full, short_lists, short_count, counters);
  const auto hf = full.to_host(), hs = short_lists.to_host();
  auto hn = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), count);
  auto hsn = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), short_count);
  auto hc = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), counters);
  int longest = 0;
  for (int i = 0; i < nlocal; ++i) {
    ASSERT_EQ(hsn(i), hn(i)) << "atom " << i;
    ASSERT_GT(hn(i), 12) << "atom " << i;
    longest = std::max(longest, hn(i));
    for (int k = 0; k < 12; ++k) EXPECT_EQ(hs(i, k), hf(i, k)) << "atom " << i << " slot " << k;
  }
  EXPECT_EQ(hc(minimd::most_neighbors), longest);
  const minimd::Potential p{2.5 * 2.5, 1.0, 1.0};
  minimd::Payload ev("ev", 2);
  Vectors f("f", nall);
  minimd::force(space, x, f, nlocal, nall, short_lists, short_count, minimd::ListKind::full, p,
                false, ev);
  auto hforce = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), f);
  for (int i = 0; i < nlocal; ++i)
    for (int d = 0; d < 3; ++d) {
      double sum = 0;
      for (int k = 0; k < 12; ++k) {
        const int j = hs(i, k);
        const double rsq = distance_sq(i, j);
        if (rsq >= p.cutoff_sq) continue;
        const double sr2 = 1.0 / rsq, sr6 = sr2 * sr2 * sr2;
        sum += (hx(i, d) - hx(j, d)) * 48.0 * sr6 * (sr6 - 0.5) * sr2;
      }
      EXPECT_NEAR(hforce(i, d), sum, 1e-12 * (1.0 + std::abs(sum))) << "atom " << i;
    }
}

TEST(MinimdCounts, DeviceCountsBoundTheWork) {
  const minimd::Device space;
  constexpr int rows = 10;
  Indices sizes("sizes", 2);  // first row 2, count 3
  Kokkos::deep_copy(Kokkos::subview(sizes, 0), 2);
  Kokkos::deep_copy(Kokkos::subview(sizes, 1), 3);
  const minimd::Count first(sizes, 0, 0), count(sizes, 1, 8);

  // Rows [2, 5) from the payload; the others as they were.
  minimd::Payload in("in", 3 * 8);
  auto h_in = Kokkos::create_mirror_view(in);
  for (int k = 0; k < 3 * 8; ++k) h_in(k) = k + 1;
  Kokkos::deep_copy(in, h_in);
  Vectors x("x", rows);
  minimd::unpack_and_pack_positions(space, {in, {}}, {count, 0}, {first, 0}, x, {}, {0, 0}, 0,
                                    {0, 0}, {});
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  for (int i = 0; i < rows; ++i)
    for (int e = 0; e < 3; ++e)
      EXPECT_EQ(hx(i, e), i >= 2 && i < 5 ? 3 * (i - 2) + e + 1 : 0.0) << "row " << i;

  // Images of listed rows at rows [2, 5): list entries 0..2 only.
  Indices list("list", 8);
  Kokkos::deep_copy(list, 9);
  Kokkos::deep_copy(Kokkos::subview(list, std::make_pair(0, 3)), 8);
  Kokkos::deep_copy(Kokkos::subview(x, 8, Kokkos::ALL), 1.5);
  minimd::copy_positions(space, x, list, count, 0, 10.0, first);
  hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  for (int i = 2; i < 5; ++i) {
    EXPECT_EQ(hx(i, 0), 11.5) << "row " << i;
    EXPECT_EQ(hx(i, 1), 1.5) << "row " << i;
  }
  EXPECT_EQ(hx(5, 0), 0.0);

  // Integration of the first 3 atoms of 10.
  Vectors v("v", rows), f("f", rows);
  Kokkos::deep_copy(v, 1.0);
  Kokkos::deep_copy(f, 2.0);
  minimd::final_integrate(space, v, f, minimd::Count(sizes, 1, rows), 0.5);
  auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  for (int i = 0; i < rows; ++i) EXPECT_EQ(hv(i, 0), i < 3 ? 1.5 : 1.0) << "atom " << i;
}

// A step program's phase in one kernel: the rows that arrive written, and both sides'
// positions packed, those of rows the kernel writes taken from what arrived, exactly as
// unpacking first and packing after would give; device counts below the rooms (unequal
// sides) bound both.
TEST(MinimdCounts, OnePhaseUnpacksAndPacksAsInTurn) {
  const minimd::Device space;
  constexpr int rows = 12;    // own 0-5, ghosts arriving at rows 6-7 (side 0) and 9-11 (side 1)
  Indices sizes("sizes", 6);  // arriving 2 and 3 (rooms 3 and 4), firsts 6 and 9, packed 3 and 2
  auto hs = Kokkos::create_mirror(sizes);
  hs(0) = 2, hs(1) = 3, hs(2) = 6, hs(3) = 9, hs(4) = 3, hs(5) = 2;
  Kokkos::deep_copy(sizes, hs);
  const minimd::Count in_counts[2] = {{sizes, 0, 3}, {sizes, 1, 4}};
  const minimd::Count firsts[2] = {{sizes, 2, 0}, {sizes, 3, 0}};
  const minimd::Count out_counts[2] = {{sizes, 4, 4}, {sizes, 5, 5}};
  const minimd::Payload ins[2] = {minimd::Payload("in0", 3 * 3), minimd::Payload("in1", 3 * 4)};
  for (int side = 0; side < 2; ++side) {
    auto h = Kokkos::create_mirror(ins[side]);
    for (int k = 0; k < static_cast<int>(h.extent(0)); ++k) h(k) = 100 * (side + 1) + 0.25 * k;
    Kokkos::deep_copy(ins[side], h);
  }
  // (create_mirror, not create_mirror_view: on the host backend a view's mirror is itself,
  // and what is expected must not change with what the kernel writes.)
  Vectors x("x", rows);
  auto hx = Kokkos::create_mirror(x);
  for (int i = 0; i < rows; ++i)
    for (int e = 0; e < 3; ++e) hx(i, e) = i < 6 ? 10 * i + e + 0.5 : -1.0;  // -1: stale
  Kokkos::deep_copy(x, hx);
  // Side 0 packs an own atom and an arriving row of each side; side 1 two own atoms and
  // row 8 (between the two arriving ranges: never written, read as it is).
  Indices list0("list0", 4), list1("list1", 5);
  auto l0 = Kokkos::create_mirror(list0);
  auto l1 = Kokkos::create_mirror(list1);
  l0(0) = 3, l0(1) = 7, l0(2) = 10, l0(3) = 0;
  l1(0) = 5, l1(1) = 8, l1(2) = 0, l1(3) = 0, l1(4) = 0;
  Kokkos::deep_copy(list0, l0);
  Kokkos::deep_copy(list1, l1);
  const Indices lists[2] = {list0, list1};
  const double shifts[2] = {7.0, -7.0};
  const minimd::Payload outs[2] = {minimd::Payload("out0", 3 * 4), minimd::Payload("out1", 3 * 5)};
  Kokkos::deep_copy(outs[0], -9.0);
  Kokkos::deep_copy(outs[1], -9.0);
  minimd::unpack_and_pack_positions(space, ins, in_counts, firsts, x, lists, out_counts, 1, shifts,
                                    outs);

  // What unpacking, then packing, gives, on the host, from the arrivals' own values.
  auto expected = Kokkos::create_mirror(x);
  Kokkos::deep_copy(expected, hx);
  const int arrived[2] = {2, 3}, first[2] = {6, 9};
  for (int side = 0; side < 2; ++side)
    for (int k = 0; k < arrived[side]; ++k)
      for (int e = 0; e < 3; ++e)
        expected(first[side] + k, e) = 100 * (side + 1) + 0.25 * (3 * k + e);
  auto got = Kokkos::create_mirror(x);
  Kokkos::deep_copy(got, x);
  for (int i = 0; i < rows; ++i)
    for (int e = 0; e < 3; ++e) EXPECT_EQ(got(i, e), expected(i, e)) << "row " << i;
  EXPECT_EQ(got(7, 2), 100.0 + 0.25 * 5);  // side 0's last row
  EXPECT_EQ(got(8, 0), -1.0);              // the room beyond side 0's count is left alone
  EXPECT_EQ(got(11, 2), 200.0 + 0.25 * 8);
  const int packed[2] = {3, 2};
  for (int side = 0; side < 2; ++side) {
    auto h = Kokkos::create_mirror(outs[side]);
    Kokkos::deep_copy(h, outs[side]);
    auto list = side == 0 ? l0 : l1;
    for (int k = 0; k < static_cast<int>(list.extent(0)); ++k)
      for (int e = 0; e < 3; ++e) {
        const double want = k < packed[side] ? expected(list(k), e) + (e == 1 ? shifts[side] : 0.0)
                                             : -9.0;
        EXPECT_EQ(h(3 * k + e), want) << "side " << side << ", entry " << k << ", " << e;
      }
  }

  // Counts from two units' counters are refused.
  Indices other("other", 6);
  const minimd::Count mixed[2] = {{other, 0, 3}, {sizes, 1, 4}};
  EXPECT_THROW(minimd::unpack_and_pack_positions(space, ins, mixed, firsts, x, lists, out_counts, 1,
                                                 shifts, outs),
               minimd::Error);
}

// The reneighboring program's counts stay on the device: a message's count travels in its
// element 0; counts are cut to the room of the buffer and of the unit's rows, and a cut
// sets the overflow slot (the host then runs the step again).
TEST(MinimdCounts, ProgramCountsAreCutToTheirRoom) {
  const minimd::Device space;
  using minimd::Counter;
  minimd::Counters counters("counters", minimd::counter_slots);
  auto slots = [&] { return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), counters); };
  auto message = [](int count, int records, int per) {
    minimd::Payload m("m", 1 + per * records);
    Kokkos::deep_copy(Kokkos::subview(m, 0), static_cast<double>(count));
    return m;
  };
  // Arrivals: 5 stay, 2 + 1 arrive into 9 rows: all fit.
  Kokkos::deep_copy(Kokkos::subview(counters, static_cast<int>(Counter::staying)), 5);
  minimd::count_arrivals(space, {message(2, 2, 6), message(1, 4, 6)}, 1, 9, counters);
  auto h = slots();
  EXPECT_EQ(h(Counter::arrived + 2), 2);
  EXPECT_EQ(h(Counter::arrived + 3), 1);
  EXPECT_EQ(h(Counter::own), 8);
  EXPECT_EQ(h(Counter::overflow), 0);
  // A count beyond its message's room (3 in room for 2), then beyond the rows (7).
  minimd::count_arrivals(space, {message(3, 2, 6), message(1, 4, 6)}, 1, 9, counters);
  h = slots();
  EXPECT_EQ(h(Counter::arrived + 2), 2);
  EXPECT_EQ(h(Counter::own), 8);
  EXPECT_EQ(h(Counter::overflow), 1);
  Kokkos::deep_copy(Kokkos::subview(counters, static_cast<int>(Counter::overflow)), 0);
  minimd::count_arrivals(space, {message(2, 2, 6), message(1, 4, 6)}, 0, 7, counters);
  h = slots();
  EXPECT_EQ(h(Counter::arrived + 0), 2);
  EXPECT_EQ(h(Counter::arrived + 1), 0);
  EXPECT_EQ(h(Counter::own), 7);
  EXPECT_EQ(h(Counter::overflow), 1);
  // A count that is not a number arrives as none, cut.
  Kokkos::deep_copy(Kokkos::subview(counters, static_cast<int>(Counter::overflow)), 0);
  minimd::count_arrivals(space, {message(0, 2, 6), message(0, 4, 6)}, 0, 9, counters);
  auto nan = message(0, 2, 6);
  Kokkos::deep_copy(Kokkos::subview(nan, 0), std::nan(""));
  minimd::count_arrivals(space, {nan, message(0, 4, 6)}, 0, 9, counters);
  h = slots();
  EXPECT_EQ(h(Counter::arrived + 0), 0);
  EXPECT_EQ(h(Counter::overflow), 1);

  // Ghost rows along y after 10 rows: 3 from below, 2 from above, each within its room.
  Kokkos::deep_copy(Kokkos::subview(counters, static_cast<int>(Counter::overflow)), 0);
  Kokkos::deep_copy(Kokkos::subview(counters, static_cast<int>(Counter::all_atoms)), 10);
  minimd::count_ghosts(space, {message(3, 4, 3), message(2, 4, 3)}, {4, 4}, 1, 20, counters);
  h = slots();
  EXPECT_EQ(h(Counter::ghost_first + 2), 10);
  EXPECT_EQ(h(Counter::ghost_count + 2), 3);
  EXPECT_EQ(h(Counter::ghost_first + 3), 13);
  EXPECT_EQ(h(Counter::ghost_count + 3), 2);
  EXPECT_EQ(h(Counter::all_atoms), 15);
  EXPECT_EQ(h(Counter::overflow), 0);
  // Images along z: from below, the atoms listed toward above (4), and the other way (1);
  // the rows end at 18, so the second side gets none.
  Kokkos::deep_copy(Kokkos::subview(counters, static_cast<int>(Counter::border_count + 4)), 1);
  Kokkos::deep_copy(Kokkos::subview(counters, static_cast<int>(Counter::border_count + 5)), 4);
  minimd::count_ghosts(space, {}, {6, 6}, 2, 18, counters);
  h = slots();
  EXPECT_EQ(h(Counter::ghost_count + 4), 3);  // 4 cut to the 3 rows left
  EXPECT_EQ(h(Counter::ghost_first + 5), 18);
  EXPECT_EQ(h(Counter::ghost_count + 5), 0);
  EXPECT_EQ(h(Counter::all_atoms), 18);
  EXPECT_EQ(h(Counter::overflow), 1);
  // A selection that writes its counts into the messages too: the count read from a slot
  // (4 of the 6 rows), the records after element 0, as far as there is room (1 toward
  // side 1), the counts into the slots named.
  Vectors x("x", 6);
  auto hx = Kokkos::create_mirror_view(x);
  const double ys[6] = {0.5, 9.5, 0.7, 9.8, 0.1, 0.2};
  for (int i = 0; i < 6; ++i) hx(i, 0) = hx(i, 2) = 5, hx(i, 1) = ys[i];
  Kokkos::deep_copy(x, hx);
  Kokkos::deep_copy(Kokkos::subview(counters, static_cast<int>(Counter::own)), 4);
  const Indices lists[2] = {Indices("lo", 6), Indices("hi", 6)};
  const minimd::Payload outs[2] = {message(-1, 3, 3), message(-1, 1, 3)};
  const double shifts[2] = {10.0, 0.0};
  const minimd::Tally tally{Counter::border_count + 2, Counter::border_count + 3, 0, true};
  minimd::select_borders(space, x, minimd::Count(counters, Counter::own, 6), 1, 1.0, 9.0, lists,
                         outs, shifts, counters, Indices("tiles", minimd::select_tiles(6)), tally);
  h = slots();
  EXPECT_EQ(h(Counter::border_count + 2), 2);  // rows 0 and 2 (4 and 5 are past the count)
  EXPECT_EQ(h(Counter::border_count + 3), 2);  // rows 1 and 3
  auto o0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), outs[0]);
  auto o1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), outs[1]);
  EXPECT_EQ(o0(0), 2.0);
  EXPECT_EQ(o0(1 + 1), 10.5);
  EXPECT_EQ(o0(1 + 3 + 1), 10.7);
  EXPECT_EQ(o1(0), 2.0);  // the count as selected, beyond the room of 1
  EXPECT_EQ(o1(1 + 1), 9.5);
  // A width check and a copied count.
  Kokkos::deep_copy(counters, 0);
  Kokkos::deep_copy(Kokkos::subview(counters, static_cast<int>(Counter::most_neighbors)), 40);
  minimd::check_count(space, counters, Counter::most_neighbors, 40);
  EXPECT_EQ(slots()(Counter::overflow), 0);
  minimd::check_count(space, counters, Counter::most_neighbors, 39);
  EXPECT_EQ(slots()(Counter::overflow), 1);
  minimd::copy_count(space, counters, Counter::most_neighbors, Counter::all_atoms);
  EXPECT_EQ(slots()(Counter::all_atoms), 40);
}

}  // namespace

namespace {
std::vector<int> listed(const Indices& list, std::int64_t count) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), list);
  return std::vector<int>(h.data(), h.data() + count);
}
}  // namespace

// The selection scans list each window in index order, with its count: below, above and
// (migration) the rest, which move to the spare rows; the windows may overlap (a unit
// thinner than two cutoffs); NaN and +inf fall in none; no atoms give counts of 0. Each
// side's atoms are packed as they are listed where its buffer has room, and only then.
TEST(MinimdSelect, ListsEveryWindowInOrderAndPacksWhereThereIsRoom) {
  const minimd::Device space;
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> ys = {5, -1, 12, 0.5, std::nan(""), 11, -inf, inf, 3, 10};
  const int n = static_cast<int>(ys.size());
  Vectors x("x", n), v("v", n);
  auto hx = Kokkos::create_mirror_view(x);
  auto hv = Kokkos::create_mirror_view(v);
  for (int i = 0; i < n; ++i) {
    hx(i, 0) = i;
    hx(i, 1) = ys[i];
    hx(i, 2) = 2 * i;
    for (int e = 0; e < 3; ++e) hv(i, e) = 100 * i + e;
  }
  Kokkos::deep_copy(x, hx);
  Kokkos::deep_copy(v, hv);
  const Indices lists[2] = {Indices("lo", n), Indices("hi", n)};
  minimd::Counters counters("counters", minimd::counter_slots);
  auto count = [&](int slot) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), counters);
    return h(slot);
  };
  const double shifts[2] = {0.0, -20.0};

  // Migration: room for all 3 atoms toward side 0, for 2 of the 3 toward side 1.
  const minimd::Payload migrants[2] = {minimd::Payload("m0", 6 * 3), minimd::Payload("m1", 6 * 2)};
  Vectors x_stay("x_stay", n), v_stay("v_stay", n);
  const Indices tiles("tiles", minimd::select_tiles(n));
  minimd::select_migrants(space, x, v, n, 1, 1.0, 10.0, lists, migrants, shifts, x_stay, v_stay,
                          counters, tiles);
  EXPECT_EQ(count(minimd::to_lo), 3);
  EXPECT_EQ(listed(lists[0], 3), (std::vector<int>{1, 3, 6}));
  EXPECT_EQ(count(minimd::to_hi), 3);
  EXPECT_EQ(listed(lists[1], 3), (std::vector<int>{2, 5, 9}));
  EXPECT_EQ(count(minimd::staying), 2);  // NaN (4) and +inf (7) are in no window
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x_stay);
  auto hsv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v_stay);
  for (int r = 0; r < 2; ++r)
    for (int e = 0; e < 3; ++e) {
      EXPECT_EQ(hs(r, e), hx(r == 0 ? 0 : 8, e)) << "stayer " << r;
      EXPECT_EQ(hsv(r, e), hv(r == 0 ? 0 : 8, e)) << "stayer " << r;
    }
  auto m0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), migrants[0]);
  auto m1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), migrants[1]);
  const int lo[3] = {1, 3, 6}, hi[2] = {2, 5};
  for (int k = 0; k < 3; ++k)
    for (int e = 0; e < 3; ++e) {
      EXPECT_EQ(m0(6 * k + e), hx(lo[k], e)) << "toward 0, atom " << k;
      EXPECT_EQ(m0(6 * k + 3 + e), hv(lo[k], e)) << "toward 0, atom " << k;
    }
  for (int k = 0; k < 2; ++k)
    for (int e = 0; e < 3; ++e) {
      EXPECT_EQ(m1(6 * k + e), hx(hi[k], e) + (e == 1 ? -20.0 : 0.0)) << "toward 1, atom " << k;
      EXPECT_EQ(m1(6 * k + 3 + e), hv(hi[k], e)) << "toward 1, atom " << k;
    }

  // Borders of a thin unit: below 6 and at or above 4 overlap. No room toward side 0.
  const minimd::Payload borders[2] = {minimd::Payload(), minimd::Payload("b1", 3 * 4)};
  minimd::select_borders(space, x, n, 1, 6.0, 4.0, lists, borders, shifts, counters, tiles);
  EXPECT_EQ(count(minimd::to_lo), 5);
  EXPECT_EQ(listed(lists[0], 5), (std::vector<int>{0, 1, 3, 6, 8}));
  EXPECT_EQ(count(minimd::to_hi), 4);
  EXPECT_EQ(listed(lists[1], 4), (std::vector<int>{0, 2, 5, 9}));
  auto b1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), borders[1]);
  const int up[4] = {0, 2, 5, 9};
  for (int k = 0; k < 4; ++k)
    for (int e = 0; e < 3; ++e)
      EXPECT_EQ(b1(3 * k + e), hx(up[k], e) + (e == 1 ? -20.0 : 0.0)) << "border " << k;

  Kokkos::deep_copy(counters, 7);
  minimd::select_migrants(space, x, v, 0, 1, 1.0, 10.0, lists, migrants, shifts, x_stay, v_stay,
                          counters, tiles);
  EXPECT_EQ(count(minimd::to_lo), 0);
  EXPECT_EQ(count(minimd::to_hi), 0);
  EXPECT_EQ(count(minimd::staying), 0);
  EXPECT_EQ(count(minimd::lost), 7);  // the other slots are left alone
}

// Both sides' packs and unpacks in one kernel each: side 0's rows, then side 1's, each
// shifted by its own shift along d (a coordinate shifted up to the box length itself goes
// just below it); a count of 0 on either side.
TEST(MinimdSelect, BothSidesPackAndUnpack) {
  const minimd::Device space;
  constexpr int n = 6;
  Vectors x("x", n), v("v", n);
  auto hx = Kokkos::create_mirror_view(x);
  auto hv = Kokkos::create_mirror_view(v);
  for (int i = 0; i < n; ++i)
    for (int e = 0; e < 3; ++e) {
      hx(i, e) = 10 * i + e;
      hv(i, e) = -(10 * i + e);
    }
  hx(4, 2) = -20.0;   // below the lower face: goes up by the box length, to 80
  hx(1, 2) = -1e-17;  // shifted up, rounds to 100 itself
  Kokkos::deep_copy(x, hx);
  Kokkos::deep_copy(v, hv);
  Indices list0("list0", 2), list1("list1", 3);
  auto l0 = Kokkos::create_mirror_view(list0);
  auto l1 = Kokkos::create_mirror_view(list1);
  l0(0) = 4, l0(1) = 1, l1(0) = 0, l1(1) = 5, l1(2) = 2;
  Kokkos::deep_copy(list0, l0);
  Kokkos::deep_copy(list1, l1);
  const Indices lists[2] = {list0, list1};
  const double shifts[2] = {100.0, -100.0};

  minimd::Payload atoms[2] = {minimd::Payload("a0", 6 * 2), minimd::Payload("a1", 6 * 3)};
  const int counts[2] = {2, 3};
  minimd::pack_atoms(space, x, v, lists, counts, 2, shifts, atoms);
  Vectors x2("x2", n + 1), v2("v2", n + 1);
  minimd::unpack_atoms(space, atoms, {counts[0], counts[1]}, x2, v2, 1);
  auto hx2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x2);
  auto hv2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v2);
  const int order[5] = {4, 1, 0, 5, 2};
  for (int r = 0; r < 5; ++r)
    for (int e = 0; e < 3; ++e) {
      const double shift = e == 2 ? shifts[r < 2 ? 0 : 1] : 0.0;
      const double expected = r == 1 && e == 2 ? std::nextafter(100.0, 0.0)
                                               : hx(order[r], e) + shift;
      EXPECT_EQ(hx2(1 + r, e), expected) << "row " << 1 + r << ", " << e;
      EXPECT_EQ(hv2(1 + r, e), -(10 * order[r] + e)) << "row " << 1 + r;
    }
  EXPECT_EQ(hx2(1, 2), 80.0);
  EXPECT_EQ(hx2(0, 0), 0.0);

  minimd::Payload positions[2] = {minimd::Payload("p0", 3 * 2), minimd::Payload("p1", 3 * 3)};
  const int none_first[2] = {0, 3};
  minimd::unpack_and_pack_positions(space, {}, {0, 0}, {0, 0}, x, lists,
                                    {none_first[0], none_first[1]}, 0, shifts, positions);
  Vectors x3("x3", 8);
  minimd::unpack_and_pack_positions(space, positions, {none_first[0], none_first[1]}, {0, 4}, x3,
                                    {}, {0, 0}, 0, {0, 0}, {});
  auto hx3 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x3);
  for (int r = 0; r < 3; ++r)
    for (int e = 0; e < 3; ++e)
      EXPECT_EQ(hx3(4 + r, e), hx(l1(r), e) + (e == 0 ? -100.0 : 0.0)) << "row " << 4 + r;
  for (int r = 0; r < 4; ++r) EXPECT_EQ(hx3(r, 0), 0.0) << "row " << r;
  EXPECT_EQ(hx3(7, 0), 0.0);
}

namespace {
// Selections over many tiles (the scan's unit of work: 256 atoms at 5000 atoms, 512 at
// 20000, 2048 at 300000) and a device count that ends inside one: every window in index
// order, its count, the stayers moved in order. The scratch for n atoms serves any count
// up to n.
void select_in_tiles(int n, int count, int scratch_for) {
  const minimd::Device space;
  Vectors x("x", n), v("v", n);
  auto hx = Kokkos::create_mirror_view(x);
  auto hv = Kokkos::create_mirror_view(v);
  std::vector<int> lo, hi, stay;
  for (int i = 0; i < n; ++i) {
    const double y = static_cast<double>(std::int64_t{i} * 7919 % 1000) / 100.0;  // 0 .. 9.99
    hx(i, 0) = hx(i, 2) = 1, hx(i, 1) = y;
    hv(i, 0) = hv(i, 1) = hv(i, 2) = i;
    if (i >= count) continue;
    (y < 2.5 ? lo : y >= 8.0 ? hi : stay).push_back(i);
  }
  Kokkos::deep_copy(x, hx);
  Kokkos::deep_copy(v, hv);
  minimd::Counters counters("counters", minimd::counter_slots);
  Kokkos::deep_copy(Kokkos::subview(counters, static_cast<int>(minimd::own)), count);
  const Indices lists[2] = {Indices("lo", n), Indices("hi", n)};
  const minimd::Payload outs[2] = {minimd::Payload("o0", 1 + 6 * n), minimd::Payload("o1", 1)};
  const double shifts[2] = {0.0, 0.0};
  Vectors x_stay("x_stay", n), v_stay("v_stay", n);
  const Indices tiles("tiles", minimd::select_tiles(scratch_for));
  minimd::select_migrants(space, x, v, minimd::Count(counters, minimd::own, n), 1, 2.5, 8.0, lists,
                          outs, shifts, x_stay, v_stay, counters, tiles,
                          {minimd::to_lo, minimd::to_hi, minimd::staying, true});
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), counters);
  ASSERT_EQ(h(minimd::to_lo), static_cast<int>(lo.size()));
  ASSERT_EQ(h(minimd::to_hi), static_cast<int>(hi.size()));
  ASSERT_EQ(h(minimd::staying), static_cast<int>(stay.size()));
  EXPECT_EQ(h(minimd::lost), 0);
  EXPECT_EQ(listed(lists[0], static_cast<std::int64_t>(lo.size())), lo);
  EXPECT_EQ(listed(lists[1], static_cast<std::int64_t>(hi.size())), hi);
  auto o0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), outs[0]);
  auto o1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), outs[1]);
  EXPECT_EQ(o0(0), static_cast<double>(lo.size()));
  EXPECT_EQ(o1(0), static_cast<double>(hi.size()));  // no room, the count still told
  for (std::size_t k = 0; k < lo.size(); k += 97) EXPECT_EQ(o0(1 + 6 * k + 3), lo[k]) << k;
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v_stay);
  for (std::size_t k = 0; k < stay.size(); ++k) ASSERT_EQ(hs(k, 0), stay[k]) << "stayer " << k;
}
TEST(MinimdSelect, ManyTilesKeepIndexOrder) {
  for (const int n : {5000, 20000, 300000}) {
    SCOPED_TRACE(n);
    select_in_tiles(n, n - n / 9, n);
  }
  SCOPED_TRACE("a bound below the scratch's");
  select_in_tiles(16000, 15000, 20000);  // 63 tiles of 256 where 20000 atoms make 40 of 512
}
}  // namespace

// Lists as the device suits them unless asked: full on GPU backends, half (miniMD's) on
// host backends; --half_neigh chooses either on both.
TEST(MinimdOptions, ListKindFollowsTheBackendUnlessGiven) {
  EXPECT_FALSE(minimd::parse_options({}, true).half_neighbor);
  EXPECT_TRUE(minimd::parse_options({}, false).half_neighbor);
  EXPECT_FALSE(minimd::parse_options({}, true).half_neighbor_given);
  for (const bool gpu : {false, true}) {
    const auto half = minimd::parse_options({"--half_neigh", "1"}, gpu);
    EXPECT_TRUE(half.half_neighbor);
    EXPECT_TRUE(half.half_neighbor_given);
    EXPECT_FALSE(minimd::parse_options({"--half_neigh", "0"}, gpu).half_neighbor);
  }
  // The step program (full lists) is allowed by the GPU default, refused with half lists.
  EXPECT_NO_THROW(minimd::parse_options({"--step-program", "1"}, true));
  EXPECT_THROW(minimd::parse_options({"--step-program", "1"}, false), std::invalid_argument);
}
