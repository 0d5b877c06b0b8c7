// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "test_access.hpp"
#include "test_runtime.hpp"

#include <gtest/gtest.h>
#include <jacobi3d/block.hpp>
#include <jacobi3d/error.hpp>
#include <jacobi3d/options.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

// Kernels outside the TEST bodies: CUDA takes no device lambda in a private member.
void perturb(const jacobi::Field& a) {
  Kokkos::parallel_for(
      "perturb", a.extent(0), KOKKOS_LAMBDA(std::int64_t i) { a(i) += 0.001 * (i % 97); });
}
// A received face of face f's own values.
void fill_face(const jacobi::Field& in, int f) {
  Kokkos::parallel_for(
      "face", in.extent(0), KOKKOS_LAMBDA(std::int64_t k) { in(k) = 10.0 + f + 0.01 * k; });
}
void fill_two(const jacobi::Field& a, const jacobi::Field& b) {
  Kokkos::parallel_for(
      "fill", a.extent(0), KOKKOS_LAMBDA(std::int64_t i) {
        a(i) = 0.5 * static_cast<double>(i % 13);
        b(i) = 0.25 * static_cast<double>(i % 7);
      });
}

TEST(JacobiOptions, ParsesFlags) {
  const auto o = jacobi::parse_options({"-x", "48", "-y", "40", "-z", "36", "-i", "30", "-w", "0",
                                        "--odf", "8", "--verify"});
  EXPECT_EQ(o.x, 48);
  EXPECT_EQ(o.y, 40);
  EXPECT_EQ(o.z, 36);
  EXPECT_EQ(o.iterations, 30);
  EXPECT_EQ(o.warmup, 0);
  EXPECT_EQ(o.odf, 8);
  EXPECT_TRUE(o.verify);
  EXPECT_TRUE(jacobi::parse_options({"--help"}).help);
  EXPECT_TRUE(jacobi::parse_options({"--sync"}).sync);
  EXPECT_FALSE(o.sync);
  EXPECT_EQ(jacobi::parse_options({"--path", "unit", "--batches", "faces"}).batches,
            jacobi::Batches::faces);
  EXPECT_EQ(jacobi::parse_options({"--path", "task", "--batches", "none"}).batches,
            jacobi::Batches::none);
  EXPECT_EQ(jacobi::parse_options({"--path", "unit", "--overlap", "--batches", "none"}).batches,
            jacobi::Batches::none);
}

TEST(JacobiOptions, RejectsBadInput) {
  using V = std::vector<std::string>;
  for (const V& bad :
       {V{"--odf", "0"}, V{"-x", "0"}, V{"-x", "-4"}, V{"-y", "ten"}, V{"-z", "4x"}, V{"-z", ""},
        V{"-i", "-1"}, V{"-w", "-1"}, V{"--bogus"}, V{"-x"}, V{"-x", "99999999999999999999999"},
        // --batches: of the task path, and of the unit path's kernels launched one by one
        V{"--batches", "none"}, V{"--path", "unit", "--fusion", "C", "--batches", "all"},
        V{"--path", "unit", "--graphs", "--batches", "all"},
        V{"--path", "unit", "--sync", "--batches", "faces"}})
    EXPECT_THROW(jacobi::parse_options(bad), std::invalid_argument) << bad[0];
}

TEST(JacobiReference, DependsOnEveryIterationAndAxis) {
  const jacobi::Grid g{6, 5, 4};
  const auto c0 = jacobi::serial_reference_checksum(g, 0);
  const auto c1 = jacobi::serial_reference_checksum(g, 1);
  const auto c2 = jacobi::serial_reference_checksum(g, 2);
  EXPECT_NE(c0, c1);
  EXPECT_NE(c1, c2);
  EXPECT_NE(c2, jacobi::serial_reference_checksum({5, 6, 4}, 2));  // axes are not symmetric
  // With no iteration every unknown is 0.
  std::uint64_t zeros = 0;
  for (std::int64_t i = 0; i < g.x * g.y * g.z; ++i) zeros += jacobi::point_hash(i, 0.0);
  EXPECT_EQ(c0, zeros);
}

// The GPU kernel's 16-byte pair path gives the same bits as the scalar march, also
// where blocks are split in chunks and pairs straddle the ghost layer.
TEST(JacobiKernels, PairAccessesMatchScalarMarch) {
  for (const std::int64_t nz : {2, 6, 10}) {
    const jacobi::BlockShape s{{9, 5, nz}};
    const jacobi::Grid g{9, 5, nz};
    const std::int64_t origin[3] = {0, 0, 0};
    const jacobi::Space space;
    jacobi::Field a("a", s.padded_size()), b1("b1", s.padded_size()), b2("b2", s.padded_size());
    jacobi::init_field(a, s, g, origin);
    // Interior values that differ everywhere, so any misplaced neighbour shows.
    perturb(a);
    jacobi::init_field(b1, s, g, origin);
    jacobi::init_field(b2, s, g, origin);
    Kokkos::fence();
    jacobi::update_scalar(space, a, b1, s, 4);
    jacobi::update_pairs(space, a, b2, s, 4);
    Kokkos::fence();
    auto h1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b1);
    auto h2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b2);
    for (std::int64_t i = 0; i < s.padded_size(); ++i)
      ASSERT_EQ(h1(i), h2(i)) << "nz=" << nz << " padded index " << i;  // ghosts untouched too
  }
  const jacobi::BlockShape odd{{4, 4, 5}};
  jacobi::Field a("a", odd.padded_size()), b("b", odd.padded_size());
  EXPECT_THROW(jacobi::update_pairs(jacobi::Space(), a, b, odd), std::invalid_argument);
}

// Fusion C's kernel gives the same bits as unpack, update and pack done apart: in the
// new field, and in every send buffer; it reads ghosts from the receive buffers only.
TEST(JacobiKernels, FusedUpdateMatchesUnpackUpdatePack) {
  const jacobi::BlockShape s{{7, 6, 5}};
  const jacobi::Grid g{7, 6, 5};
  const std::int64_t origin[3] = {0, 0, 0};
  const jacobi::Space space;
  jacobi::Field a1("a1", s.padded_size()), a2("a2", s.padded_size());
  jacobi::Field b1("b1", s.padded_size()), b2("b2", s.padded_size());
  for (const auto& f : {a1, a2, b1, b2}) jacobi::init_field(f, s, g, origin);
  perturb(a1);
  perturb(a2);
  // Faces 0, 3 and 4 have neighbours (buffers); the others are global boundary.
  jacobi::Field receive[6], send1[6], send2[6];
  for (const int f : {0, 3, 4}) {
    receive[f] = jacobi::Field("in", s.face_size(f));
    send1[f] = jacobi::Field("out1", s.face_size(f));
    send2[f] = jacobi::Field("out2", s.face_size(f));
    fill_face(receive[f], f);
  }
  Kokkos::fence();
  for (int f = 0; f < 6; ++f)
    if (receive[f].data()) jacobi::unpack_face(space, a1, s, f, receive[f]);
  jacobi::update_scalar(space, a1, b1, s, 3);
  jacobi::pack_faces(space, b1, s, send1);
  jacobi::fused_update(space, a2, b2, s, receive, send2, 3);
  Kokkos::fence();
  auto h1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b1);
  auto h2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b2);
  for (std::int64_t i = 0; i < s.padded_size(); ++i)
    ASSERT_EQ(h1(i), h2(i)) << "padded index " << i;
  for (const int f : {0, 3, 4}) {
    auto o1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, send1[f]);
    auto o2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, send2[f]);
    for (std::int64_t k = 0; k < s.face_size(f); ++k)
      ASSERT_EQ(o1(k), o2(k)) << "face " << f << " point " << k;
  }
  // The fused kernel left a2's ghost layer alone: the faces came from the buffers.
  auto g2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a2);
  EXPECT_NE(g2(s.at(0, 1, 1)), 10.0);
}

// --overlap's two kernels together give fusion C's bits, for blocks with any set of
// neighbouring faces, also blocks one or two points thin; the inner box reads no
// ghost of a face with a buffer (those ghosts hold NaN here, so a read would show).
TEST(JacobiKernels, InnerAndBoundaryUpdatesMatchFusedUpdate) {
  using Faces = std::vector<int>;
  const jacobi::Space space;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const jacobi::BlockShape s :
       {jacobi::BlockShape{{7, 6, 5}}, jacobi::BlockShape{{6, 5, 8}}, jacobi::BlockShape{{1, 6, 4}},
        jacobi::BlockShape{{2, 3, 6}}, jacobi::BlockShape{{5, 1, 2}},
        jacobi::BlockShape{{4, 4, 1}}}) {
    for (const Faces& with :
         {Faces{}, Faces{0, 1, 2, 3, 4, 5}, Faces{1, 4}, Faces{0, 3, 5}, Faces{2}}) {
      const jacobi::Grid g{s.n[0], s.n[1], s.n[2]};
      const std::int64_t origin[3] = {0, 0, 0};
      jacobi::Field a("a", s.padded_size()), b1("b1", s.padded_size()), b2("b2", s.padded_size());
      for (const auto& f : {a, b1, b2}) jacobi::init_field(f, s, g, origin);
      perturb(a);
      jacobi::Field receive[6], send1[6], send2[6];
      for (const int f : with) {
        receive[f] = jacobi::Field("in", s.face_size(f));
        send1[f] = jacobi::Field("out1", s.face_size(f));
        send2[f] = jacobi::Field("out2", s.face_size(f));
        fill_face(receive[f], f);
        jacobi::Field ghosts("ghosts", s.face_size(f));
        Kokkos::deep_copy(ghosts, nan);
        jacobi::unpack_face(space, a, s, f, ghosts);
      }
      Kokkos::fence();
      jacobi::fused_update(space, a, b1, s, receive, send1);
      jacobi::update_inner(space, a, b2, s, receive, send2);
      jacobi::update_boundary(space, a, b2, s, receive, send2);
      Kokkos::fence();
      const std::string where = "shape " + std::to_string(s.n[0]) + "x" + std::to_string(s.n[1]) +
                                "x" + std::to_string(s.n[2]) + ", " + std::to_string(with.size()) +
                                " faces";
      auto h1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b1);
      auto h2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b2);
      for (std::int64_t i = 0; i < s.padded_size(); ++i)
        ASSERT_EQ(h1(i), h2(i)) << where << ", padded index " << i;
      for (std::int64_t x = 1; x <= s.n[0]; ++x)  // and no interior value is a NaN
        for (std::int64_t y = 1; y <= s.n[1]; ++y)
          for (std::int64_t z = 1; z <= s.n[2]; ++z)
            ASSERT_FALSE(std::isnan(h2(s.at(x, y, z)))) << where;
      for (const int f : with) {
        auto o1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, send1[f]);
        auto o2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, send2[f]);
        for (std::int64_t k = 0; k < s.face_size(f); ++k)
          ASSERT_EQ(o1(k), o2(k)) << where << ", face " << f << " point " << k;
      }
    }
  }
}

// The residual's sum of squares covers the interior and nothing else, with either
// method (Kokkos Kernels' dot through a scratch vector, here also one plane at a time,
// or a Kokkos reduction).
TEST(JacobiKernels, DifferenceSquaresSumsTheInterior) {
  const jacobi::BlockShape s{{5, 4, 3}};
  jacobi::Field a("a", s.padded_size()), b("b", s.padded_size());
  fill_two(a, b);
  Kokkos::fence();
  double expected = 0;
  for (std::int64_t x = 1; x <= s.n[0]; ++x)
    for (std::int64_t y = 1; y <= s.n[1]; ++y)
      for (std::int64_t z = 1; z <= s.n[2]; ++z) {
        const std::int64_t i = s.at(x, y, z);
        const double d = 0.5 * static_cast<double>(i % 13) - 0.25 * static_cast<double>(i % 7);
        expected += d * d;
      }
  ASSERT_GT(expected, 0.0);
  EXPECT_NEAR(jacobi::difference_squares(jacobi::Space(), a, b, s), expected, 1e-12 * expected);
  EXPECT_NEAR(jacobi::difference_squares(jacobi::Space(), a, b, s, 20), expected, 1e-12 * expected);
  EXPECT_NE(std::string(jacobi::residual_method()).find("Kokkos"), std::string::npos);
}

// A step graph replayed gives what the same step gives launched directly.
TEST(JacobiKernels, StepGraphReplaysTheStep) {
  const jacobi::BlockShape s{{6, 5, 4}};
  const jacobi::Grid g{6, 5, 4};
  const std::int64_t origin[3] = {0, 0, 0};
  const jacobi::Space space;
  for (const auto fusion : {jacobi::Fusion::none, jacobi::Fusion::B, jacobi::Fusion::C}) {
    jacobi::Field a1("a1", s.padded_size()), b1("b1", s.padded_size());
    jacobi::Field a2("a2", s.padded_size()), b2("b2", s.padded_size());
    for (const auto& f : {a1, b1, a2, b2}) jacobi::init_field(f, s, g, origin);
    jacobi::Field receive[6], send1[6], send2[6];
    for (const int f : {1, 2}) {
      receive[f] = jacobi::Field("in", s.face_size(f));
      send1[f] = jacobi::Field("out1", s.face_size(f));
      send2[f] = jacobi::Field("out2", s.face_size(f));
      Kokkos::deep_copy(receive[f], 0.5 + f);
    }
    Kokkos::fence();
    // Two steps each way: a -> b -> a.
    auto graph_ab = jacobi::step_graph(fusion, a2, b2, s, receive, send2);
    auto graph_ba = jacobi::step_graph(fusion, b2, a2, s, receive, send2);
    Kokkos::fence();
    jacobi::step(space, fusion, a1, b1, s, receive, send1);
    jacobi::step(space, fusion, b1, a1, s, receive, send1);
    graph_ab.submit(space);
    graph_ba.submit(space);
    space.fence();
    auto h1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a1);
    auto h2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a2);
    for (std::int64_t i = 0; i < s.padded_size(); ++i)
      ASSERT_EQ(h1(i), h2(i)) << "fusion " << static_cast<int>(fusion) << " padded index " << i;
    EXPECT_NE(h1(s.at(3, 3, 2)), 0.0);  // the steps did run
    for (const int f : {1, 2}) {
      auto o1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, send1[f]);
      auto o2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, send2[f]);
      for (std::int64_t k = 0; k < s.face_size(f); ++k) ASSERT_EQ(o1(k), o2(k));
    }
  }
}

// The overdecomposed solver, run inside this process's runtime, reproduces the serial
// reference bit for bit for several unit counts, including uneven splits.
class JacobiDecomposition
    : public testing::TestWithParam<
          std::tuple<int, jacobi::Completion, kodo::CommMode, jacobi::Fusion, bool, bool>> {};

TEST_P(JacobiDecomposition, MatchesSerialReference) {
  auto& rt = test_runtime();
  const jacobi::Grid grid{13, 11, 9};
  const auto [per_rank, completion, comm, fusion, graphs, overlap] = GetParam();
  const auto units = kodo::split_grid({grid.x, grid.y, grid.z}, per_rank * rt.size());
  auto blocks =
      kodo::Collection<jacobi::JacobiBlock>::create(rt, units,
                                                    jacobi::BlockConfig{grid, completion, comm,
                                                                        fusion, graphs, overlap});
  blocks.broadcast_local<&jacobi::JacobiBlock::iterate>(std::int64_t{3});
  rt.run();
  blocks.broadcast_local<&jacobi::JacobiBlock::iterate>(std::int64_t{4});
  blocks.broadcast_local<&jacobi::JacobiBlock::compute_checksum>();
  rt.run();
  const auto summary = blocks.reduced<jacobi::Summary>();
  const jacobi::SerialResult serial = jacobi::serial_reference(grid, 7);
  EXPECT_EQ(summary.checksum, serial.checksum);
  EXPECT_GT(serial.residual, 0.0);
  EXPECT_NEAR(summary.residual(), serial.residual, 1e-12 * serial.residual);
}

INSTANTIATE_TEST_SUITE_P(UnitsPerRank, JacobiDecomposition,
                         testing::Combine(testing::Values(1, 2, 3, 5),
                                          testing::Values(jacobi::Completion::engine,
                                                          jacobi::Completion::sync),
                                          testing::Values(kodo::CommMode::device,
                                                          kodo::CommMode::host_staged),
                                          testing::Values(jacobi::Fusion::none, jacobi::Fusion::A,
                                                          jacobi::Fusion::B, jacobi::Fusion::C),
                                          testing::Bool(), testing::Values(false)));

// With overlap (fusion none, no graphs): 1 to 5 units per rank, so blocks with one to
// six neighbouring faces, and blocks two points thin along a cut axis.
INSTANTIATE_TEST_SUITE_P(Overlap, JacobiDecomposition,
                         testing::Combine(testing::Values(1, 2, 3, 5),
                                          testing::Values(jacobi::Completion::engine,
                                                          jacobi::Completion::sync),
                                          testing::Values(kodo::CommMode::device,
                                                          kodo::CommMode::host_staged),
                                          testing::Values(jacobi::Fusion::none),
                                          testing::Values(false), testing::Values(true)));

// The unit path's packs, unpacks and update (with overlap, its inner box and boundary) go
// out as kernel batches (BlockConfig::batches): each kernel exactly once, several blocks'
// kernels in one launch, the serial reference's checksum; with none, every kernel on its own.
TEST(JacobiUnitPath, LaunchesTheBlocksKernelsTogether) {
  auto& rt = test_runtime();
  const jacobi::Grid grid{13, 11, 9};
  constexpr std::int64_t kIterations = 5;
  const auto units = kodo::split_grid({grid.x, grid.y, grid.z}, 5 * rt.size());
  const auto& launcher = kodo::detail::TestAccess::batches(rt);
  for (const bool overlap : {false, true}) {
    for (const auto batches :
         {jacobi::Batches::all, jacobi::Batches::faces, jacobi::Batches::none}) {
      jacobi::BlockConfig config{grid};
      config.overlap = overlap;
      config.batches = batches;
      auto blocks = kodo::Collection<jacobi::JacobiBlock>::create(rt, units, config);
      // Kernels a block batches an iteration: a pack and an unpack a neighbour, the update.
      std::size_t per_iteration = 0, local = 0;
      blocks.for_each_local([&](const jacobi::JacobiBlock& b) {
        ++local;
        const auto place = jacobi::place_block(grid, units, b.index());
        for (bool n : place.has_neighbour)
          per_iteration += batches == jacobi::Batches::none ? 0 : 2 * n;
        per_iteration += batches == jacobi::Batches::all ? 1 : 0;
      });
      const std::size_t kernels_before = launcher.kernels();
      const std::size_t launches_before = launcher.launches();
      blocks.broadcast_local<&jacobi::JacobiBlock::iterate>(kIterations);
      blocks.broadcast_local<&jacobi::JacobiBlock::compute_checksum>();
      rt.run();
      const std::size_t kernels = launcher.kernels() - kernels_before;
      const std::size_t launches = launcher.launches() - launches_before;
      const std::string what = (overlap ? "overlap, batches " : "batches ") +
                               std::to_string(static_cast<int>(batches));
      if (batches == jacobi::Batches::none || !overlap) {
        EXPECT_EQ(kernels, per_iteration * kIterations) << what;
      } else {  // the inner box and the boundary's kernels, and the first faces' packs
        EXPECT_GE(kernels, 2 * local * kIterations) << what;
      }
      if (batches != jacobi::Batches::none && local > 1) {
        EXPECT_LT(launches, kernels) << what;
      }
      EXPECT_EQ(blocks.reduced<jacobi::Summary>().checksum,
                jacobi::serial_reference(grid, kIterations).checksum)
          << what;
    }
  }
}

// The rank program (kodo::StepProgram over the blocks' plan_step): the serial reference
// for 1 to 5 units per rank, every fusion, both transfer modes, steps asked for in pieces.
class JacobiRankProgram
    : public testing::TestWithParam<std::tuple<int, kodo::CommMode, jacobi::Fusion, bool>> {};

TEST_P(JacobiRankProgram, MatchesSerialReference) {
  auto& rt = test_runtime();
  const jacobi::Grid grid{13, 11, 9};
  const auto [per_rank, comm, fusion, overlap] = GetParam();
  const auto units = kodo::split_grid({grid.x, grid.y, grid.z}, per_rank * rt.size());
  jacobi::BlockConfig config{grid, jacobi::Completion::engine, comm, fusion, false, overlap};
  config.rank_program = true;
  auto blocks = kodo::Collection<jacobi::JacobiBlock>::create(rt, units, config);
  kodo::StepProgram<jacobi::JacobiBlock> program(blocks, {.phases = 2, .comm = comm});
  for (const std::int64_t piece : {3, 4}) {
    program.advance(piece);
    rt.run();
    blocks.for_each_local([&](jacobi::JacobiBlock& b) { b.ran(piece); });
  }
  blocks.broadcast_local<&jacobi::JacobiBlock::compute_checksum>();
  rt.run();
  const auto summary = blocks.reduced<jacobi::Summary>();
  const jacobi::SerialResult serial = jacobi::serial_reference(grid, 7);
  EXPECT_EQ(summary.checksum, serial.checksum);
  EXPECT_NEAR(summary.residual(), serial.residual, 1e-12 * serial.residual);
}

INSTANTIATE_TEST_SUITE_P(UnitsPerRank, JacobiRankProgram,
                         testing::Combine(testing::Values(1, 2, 3, 5),
                                          testing::Values(kodo::CommMode::device,
                                                          kodo::CommMode::host_staged),
                                          testing::Values(jacobi::Fusion::none, jacobi::Fusion::A,
                                                          jacobi::Fusion::B, jacobi::Fusion::C),
                                          testing::Values(false)));
// Overlap: the inner box as work_without_receives.
INSTANTIATE_TEST_SUITE_P(Overlap, JacobiRankProgram,
                         testing::Combine(testing::Values(1, 2, 3, 5),
                                          testing::Values(kodo::CommMode::device,
                                                          kodo::CommMode::host_staged),
                                          testing::Values(jacobi::Fusion::none),
                                          testing::Values(true)));

TEST(JacobiBlockConfig, OverlapRefusesFusionAndGraphs) {
  auto& rt = test_runtime();
  const jacobi::Grid grid{8, 8, 8};
  for (const auto& [fusion, graphs] :
       {std::pair{jacobi::Fusion::C, false}, std::pair{jacobi::Fusion::none, true}})
    EXPECT_THROW(kodo::Collection<jacobi::JacobiBlock>::create(
                     rt, kodo::Extent3{rt.size(), 1, 1},  // a unit on every rank
                     jacobi::BlockConfig{grid, jacobi::Completion::engine, kodo::CommMode::device,
                                         fusion, graphs, true}),
                 std::invalid_argument);
}

// jacobi3d's own problems are jacobi::Error, not kodo::Error (which comes only from kodo):
// here, restoring the blocks from a checkpoint of step 0 as if it were of step 3.
TEST(JacobiRestore, ASavedBlockOfAnotherStepIsAJacobiError) {
  auto& rt = test_runtime();
  auto blocks = kodo::Collection<jacobi::JacobiBlock>::create(rt, kodo::Extent3{rt.size(), 1, 1},
                                                              jacobi::BlockConfig{{8, 8, 8}});
  rt.run();  // the blocks' set-up messages (their channels), no iteration
  // A directory of this job alone: jobs of other rank counts may run at the same time.
  int job = getpid();
  MPI_Bcast(&job, 1, MPI_INT, 0, rt.comm());
  const std::string dir = "jacobi_test_restore_" + std::to_string(job);
  kodo::write_checkpoint(rt, dir, {"jacobi3d", {}}, blocks);
  const auto checkpoint = kodo::Checkpoint::open(rt, dir, "jacobi3d");
  const kodo::SavedCollection saved = checkpoint.collection(blocks);
  blocks.for_each_local([&](jacobi::JacobiBlock& b) {
    const std::string at = std::to_string(b.index().x) + "," + std::to_string(b.index().y) + "," +
                           std::to_string(b.index().z);
    try {
      b.restore(saved, 3);
      ADD_FAILURE() << "block " << at << " of step 0 was restored as of step 3";
    } catch (const jacobi::Error& e) {
      EXPECT_EQ(std::string(e.what()),
                "jacobi3d: saved block " + at + " is at step 0, the checkpoint at step 3");
    } catch (const kodo::Error& e) {
      ADD_FAILURE() << "a kodo::Error for jacobi3d's own problem: " << e.what();
    }
  });
  MPI_Barrier(rt.comm());
  if (rt.rank() == 0) std::filesystem::remove_all(dir);
}

}  // namespace

namespace {

// One block may exceed 2^31 points: its index arithmetic is 64-bit throughout.
TEST(JacobiShape, IndicesOfBlocksBeyondTwoToThe31PointsDoNotOverflow) {
  const jacobi::BlockShape big{{1500, 1400, 1300}};  // 2.73e9 interior points
  const std::int64_t sy = 1302, sx = 1402 * sy;
  EXPECT_EQ(big.interior_size(), std::int64_t{1500} * 1400 * 1300);
  EXPECT_GT(big.interior_size(), std::int64_t{1} << 31);
  EXPECT_EQ(big.padded_size(), std::int64_t{1502} * 1402 * 1302);
  EXPECT_EQ(big.at(1500, 1400, 1300), 1500 * sx + 1400 * sy + 1300);
  // The last point of the +x face (the x = 1500 layer).
  const std::int64_t last = big.face_size(1) - 1;
  EXPECT_EQ(big.face_point(1, last, 1500), big.at(1500, 1400, 1300));
  EXPECT_EQ(big.face_point(5, big.face_size(5) - 1, 1301), big.at(1500, 1400, 1301));
}

}  // namespace
