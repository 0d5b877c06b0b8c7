// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/kodo.hpp>
#include <kodo/tasking/units/detail/collection_base.hpp>

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace {

TEST(SplitGrid, MinimisesCutSurface) {
  EXPECT_EQ(kodo::split_grid({64, 64, 64}, 8), (kodo::Extent3{2, 2, 2}));
  EXPECT_EQ(kodo::split_grid({64, 64, 64}, 1), (kodo::Extent3{1, 1, 1}));
  // A long x axis is cut first.
  EXPECT_EQ(kodo::split_grid({256, 16, 16}, 4), (kodo::Extent3{4, 1, 1}));
  // 48 x 40 x 36 into 16: 4 x 2 x 2 cuts less than 2 x 4 x 2 or 2 x 2 x 4.
  EXPECT_EQ(kodo::split_grid({48, 40, 36}, 16), (kodo::Extent3{4, 2, 2}));
  const auto e = kodo::split_grid({48, 40, 36}, 12);
  EXPECT_EQ(e.size(), 12);
}

TEST(SplitGrid, WeighsCutsByTheirCosts) {
  // A z cut that costs 4 times the others: 4 x 2 x 1 (4 planes) beats 2 x 2 x 2 (2 + 4).
  EXPECT_EQ(kodo::split_grid({192, 192, 192}, 8, {1, 1, 4}), (kodo::Extent3{4, 2, 1}));
  EXPECT_EQ(kodo::split_grid({192, 192, 192}, 16, {1, 1, 4}), (kodo::Extent3{4, 4, 1}));
  // At twice the cost, the two tie and the tie keeps z whole.
  EXPECT_EQ(kodo::split_grid({192, 192, 192}, 8, {1, 1, 2}), (kodo::Extent3{4, 2, 1}));
  // Below that, the least area wins as without costs.
  EXPECT_EQ(kodo::split_grid({192, 192, 192}, 8, {1, 1, 1.5}), (kodo::Extent3{2, 2, 2}));
  // Costs on x push its cuts to y.
  EXPECT_EQ(kodo::split_grid({64, 64, 64}, 4, {8, 1, 8}), (kodo::Extent3{1, 4, 1}));
  // A grid with one dimension long enough still cuts z when nothing else fits.
  EXPECT_EQ(kodo::split_grid({1, 1, 8}, 4, {1, 1, 100}), (kodo::Extent3{1, 1, 4}));
}

TEST(SplitGrid, RefusesCostsThatAreNotPositiveNumbers) {
  for (const double bad : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity()}) {
    try {
      kodo::split_grid({8, 8, 8}, 8, {1, bad, 1});
      ADD_FAILURE() << "cost " << bad << " accepted";
    } catch (const kodo::Error& e) {
      EXPECT_NE(std::string(e.what()).find("positive finite"), std::string::npos) << e.what();
    }
  }
}

TEST(SplitGrid, RespectsSmallDimensions) {
  // 7 units need a dimension of at least 7.
  EXPECT_EQ(kodo::split_grid({2, 3, 7}, 7), (kodo::Extent3{1, 1, 7}));
  EXPECT_EQ(kodo::split_grid({1, 1, 5}, 5), (kodo::Extent3{1, 1, 5}));
}

TEST(SplitGrid, RejectsImpossibleCuts) {
  EXPECT_THROW(kodo::split_grid({4, 4, 4}, 0), kodo::Error);
  EXPECT_THROW(kodo::split_grid({4, 4, 4}, -2), kodo::Error);
  EXPECT_THROW(kodo::split_grid({0, 4, 4}, 1), kodo::Error);
  EXPECT_THROW(kodo::split_grid({2, 2, 2}, 9), kodo::Error);  // more units than points
  EXPECT_THROW(kodo::split_grid({2, 2, 2}, 7), kodo::Error);  // 7 fits no dimension
  const std::int64_t huge = std::int64_t{1} << 40;
  EXPECT_THROW(kodo::split_grid({huge, huge, huge}, 8), kodo::Error);  // 2^120 points
  try {
    kodo::split_grid({2, 2, 2}, 9);
  } catch (const kodo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("more units than grid points"), std::string::npos);
  }
}

TEST(UnitsForOdf, MultipliesWithinTheLimitAndRefusesTheRest) {
  EXPECT_EQ(kodo::units_for_odf(8, 4), 32);
  EXPECT_EQ(kodo::units_for_odf(kodo::kMostOdfUnits, 1), kodo::kMostOdfUnits);
  EXPECT_EQ(kodo::units_for_odf(kodo::kMostOdfUnits / 3, 3), kodo::kMostOdfUnits / 3 * 3);
  auto refused = [](std::int64_t odf, int ranks, const std::string& says) {
    try {
      kodo::units_for_odf(odf, ranks);
      ADD_FAILURE() << odf << " on " << ranks << " rank(s) was accepted";
    } catch (const kodo::Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused(0, 4, "gives no unit");
  refused(-8, 4, "of -8 on 4 rank(s)");
  refused(8, 0, "gives no unit");
  refused(kodo::kMostOdfUnits / 2 + 1, 2, "more than 2^30 units");
  refused(std::int64_t{1} << 62, 4, "more than 2^30 units");  // no overflow on the way
}

TEST(BlockRange, CoversEveryPointOnce) {
  for (std::int64_t n : {1, 7, 40, 41}) {
    for (std::int64_t parts = 1; parts <= n && parts <= 9; ++parts) {
      std::int64_t next = 0, smallest = n, largest = 0;
      for (std::int64_t p = 0; p < parts; ++p) {
        const auto r = kodo::block_range(n, parts, p);
        EXPECT_EQ(r.begin, next);
        next += r.size;
        smallest = std::min(smallest, r.size);
        largest = std::max(largest, r.size);
      }
      EXPECT_EQ(next, n);
      EXPECT_LE(largest - smallest, 1);
    }
  }
}

TEST(UnitMap, BlocksByDefault) {
  for (std::int64_t units : {1, 3, 4, 12, 13, 64}) {
    for (int ranks : {1, 2, 3, 4, 7}) {
      const kodo::detail::UnitMap map(units, ranks);
      EXPECT_TRUE(map.blocks());
      EXPECT_EQ(map.epoch(), 0u);
      std::int64_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        for (const std::int64_t i : map.units_of(r)) {
          EXPECT_EQ(i, next++) << units << " units on " << ranks << " ranks";
          EXPECT_EQ(map.owner(i), r) << units << " units on " << ranks << " ranks, unit " << i;
        }
        EXPECT_EQ(static_cast<std::int64_t>(map.units_of(r).size()), map.count(r));
        // Holders come first in the reduction tree's order: with blocks, ranks in order.
        EXPECT_EQ(map.count(r) > 0, r < map.holders());
        EXPECT_EQ(map.position(r), r);
        EXPECT_EQ(map.rank_at(r), r);
      }
      EXPECT_EQ(next, units);
    }
  }
}

TEST(UnitMap, AnyOwnersOrderHoldersFirst) {
  // Ranks 1 and 3 hold units, 0 and 2 none: the tree's order is 1, 3, 0, 2.
  const kodo::detail::UnitMap map({3, 1, 3, 3, 1}, 4, 7);
  EXPECT_FALSE(map.blocks());
  EXPECT_EQ(map.epoch(), 7u);
  EXPECT_EQ(map.owner(0), 3);
  EXPECT_EQ(map.owner(1), 1);
  EXPECT_EQ(map.units_of(3), (std::vector<std::int64_t>{0, 2, 3}));
  EXPECT_EQ(map.units_of(1), (std::vector<std::int64_t>{1, 4}));
  EXPECT_TRUE(map.units_of(0).empty());
  EXPECT_EQ(map.count(3), 3);
  EXPECT_EQ(map.holders(), 2);
  const std::vector<int> order{1, 3, 0, 2};
  for (int p = 0; p < 4; ++p) {
    EXPECT_EQ(map.rank_at(p), order[static_cast<std::size_t>(p)]);
    EXPECT_EQ(map.position(order[static_cast<std::size_t>(p)]), p);
  }
}

TEST(UnitMap, RefusesOwnersOutsideTheJob) {
  EXPECT_THROW(kodo::detail::UnitMap({0, 2}, 2, 1), kodo::Error);
  EXPECT_THROW(kodo::detail::UnitMap({-1}, 2, 1), kodo::Error);
}

TEST(Extent3, LinearisesWithZFastest) {
  const kodo::Extent3 e{3, 4, 5};
  EXPECT_EQ(e.linear({0, 0, 1}), 1);
  EXPECT_EQ(e.linear({0, 1, 0}), 5);
  EXPECT_EQ(e.linear({1, 0, 0}), 20);
  for (std::int64_t l = 0; l < e.size(); ++l) EXPECT_EQ(e.linear(e.delinear(l)), l);
  EXPECT_FALSE(e.contains({3, 0, 0}));
  EXPECT_FALSE(e.contains({0, -1, 0}));
  EXPECT_TRUE(e.contains({2, 3, 4}));
}

// The order an MPI code numbers its ranks in (rank = x + X * (y + Y * z)).
TEST(Extent3, LinearisesWithXFastestOnRequest) {
  const kodo::Extent3 e{3, 4, 5};
  EXPECT_EQ(e.linear_x_fastest({1, 0, 0}), 1);
  EXPECT_EQ(e.linear_x_fastest({0, 1, 0}), 3);
  EXPECT_EQ(e.linear_x_fastest({0, 0, 1}), 12);
  EXPECT_EQ(e.linear_x_fastest({2, 3, 4}), 59);
  for (std::int64_t l = 0; l < e.size(); ++l) {
    const kodo::Index3 i = e.delinear_x_fastest(l);
    EXPECT_TRUE(e.contains(i));
    EXPECT_EQ(e.linear_x_fastest(i), l);
  }
  EXPECT_EQ(e.delinear_x_fastest(13), (kodo::Index3{1, 0, 1}));
}

}  // namespace

namespace {

// GPU choice per rank of a node: ranks that see the same GPUs share them out in rank
// order; ranks the launcher bound to a GPU of their own take it.
TEST(Placement, RanksThatSeeTheSameGpusShareThemOutInOrder) {
  std::string problem;
  const std::vector<std::uint64_t> unbound{7, 7, 7, 7};
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(kodo::detail::assign_device(unbound, r, 4, false, problem), r);
  EXPECT_TRUE(problem.empty());
}

TEST(Placement, RanksBoundToTheirOwnGpuTakeIt) {
  std::string problem;
  const std::vector<std::uint64_t> bound{11, 12, 13, 14};  // srun --gpus-per-task=1
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(kodo::detail::assign_device(bound, r, 1, false, problem), 0);
  EXPECT_TRUE(problem.empty());
  const std::vector<std::uint64_t> pairs{5, 5, 6, 6};  // two GPUs per pair of ranks
  EXPECT_EQ(kodo::detail::assign_device(pairs, 2, 2, false, problem), 0);
  EXPECT_EQ(kodo::detail::assign_device(pairs, 3, 2, false, problem), 1);
  EXPECT_TRUE(problem.empty());
}

TEST(Placement, MoreRanksThanTheGpusTheySeeIsAnErrorUnlessShared) {
  std::string problem;
  const std::vector<std::uint64_t> crowded{3, 3, 3};
  EXPECT_EQ(kodo::detail::assign_device(crowded, 2, 2, false, problem), -1);
  EXPECT_NE(problem.find("3 ranks of this node see the same 2 GPU(s)"), std::string::npos)
      << problem;
  problem.clear();
  EXPECT_EQ(kodo::detail::assign_device(crowded, 2, 2, true, problem), 0);
  EXPECT_TRUE(problem.empty());
}

}  // namespace
