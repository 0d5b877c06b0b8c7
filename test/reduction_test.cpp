// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Reductions a program uses directly: results for the main program of every rank
// (on_reduced, reduced), std::array and std::vector values, device views contributed on
// a stream, named reductions watched apart, and asking for a result of the wrong type. Every test
// runs on any number of ranks (1, 2 and 4 under ctest).

#include "expect_error.hpp"
#include "test_runtime.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace {

using Int64s = std::vector<std::int64_t>;
using Triple = std::array<double, 3>;

class Summed : public kodo::WorkUnit<Summed> {
 public:
  explicit Summed(const kodo::UnitInit<Summed>& init) : WorkUnit(init) {}
  std::int64_t me() const { return collection().shape().linear(index()); }

  // Rounds for the main program only: (me + 1) * (k + 1) in the k-th.
  void three_rounds() {
    for (std::int64_t k = 0; k < 3; ++k) contribute((me() + 1) * (k + 1), kodo::Sum{});
  }
  void targeted_round() { contribute<&Summed::got>(me(), kodo::Max{}); }
  void got(std::int64_t v) { scalars.push_back(v); }

  void arrays() {
    const double x = static_cast<double>(me());
    contribute<&Summed::got_array>(Triple{x, -x, 1.0}, kodo::Sum{});
    contribute<&Summed::got_array>(Triple{x, -x, 2.0 + x}, kodo::Min{});
    contribute<&Summed::got_array>(Triple{x, -x, 2.0 + x}, kodo::Max{});
  }
  void got_array(const Triple& v) { triples.push_back(v); }

  // Element i is me * (i + 1); then a round of empty vectors.
  void vectors(std::size_t length) {
    Int64s v(length);
    for (std::size_t i = 0; i < length; ++i) v[i] = me() * static_cast<std::int64_t>(i + 1);
    contribute<&Summed::got_vector>(v, kodo::Sum{});
    contribute<&Summed::got_vector>(v, kodo::Max{});
    contribute(Int64s{}, kodo::Sum{});
  }
  void got_vector(Int64s v) { vectors_got.push_back(std::move(v)); }

  // Views filled by a kernel on a stream, contributed without a fence: a rank-0 view
  // (Max of me / 2), a rank-1 view (Sum of me + i), and the same rank-1 view through
  // another stream ordered after the first, for the main program only (Min).
  void views() {
    auto& stream = streams().compute(static_cast<std::size_t>(me()));
    auto& other = streams().compute(static_cast<std::size_t>(me()) + 1);
    Kokkos::View<double> half("half");
    Kokkos::View<std::int64_t*> many("many", 4);
    const std::int64_t m = me();
    Kokkos::parallel_for(
        "fill", Kokkos::RangePolicy<kodo::ExecutionSpace>(stream.space(), 0, 4),
        KOKKOS_LAMBDA(int i) {
          many(i) = m + i;
          if (i == 0) half() = 0.5 * static_cast<double>(m);
        });
    contribute<&Summed::got_half>(stream, half, kodo::Max{});
    contribute<&Summed::got_vector>(stream, many, kodo::Sum{});
    other.wait_for(stream);
    contribute(other, many, kodo::Min{});
  }
  void got_half(double v) { halves.push_back(v); }

  std::vector<std::int64_t> scalars;
  std::vector<Triple> triples;
  std::vector<Int64s> vectors_got;
  std::vector<double> halves;
};

using Seen = std::vector<std::pair<std::uint64_t, std::int64_t>>;

TEST(ReductionResults, TheMainProgramGetsEachRoundOncePerRankInRoundOrder) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Summed>::create(rt, {3, 2, 2});
  const std::int64_t n = units.size(), total = n * (n + 1) / 2;
  Seen seen;
  units.on_reduced<std::int64_t>([&](std::uint64_t round, const std::int64_t& v) {
    seen.emplace_back(round, v);
  });
  EXPECT_ERROR(units.reduced<std::int64_t>(), "no reduction round of it has completed");
  units.broadcast_local<&Summed::three_rounds>();
  rt.run();
  EXPECT_EQ(seen, (Seen{{0, total}, {1, 2 * total}, {2, 3 * total}}));
  EXPECT_EQ(units.reduced<std::int64_t>(), 3 * total);
  EXPECT_ERROR(units.reduced<double>(), "reduced<double> for collection");
  EXPECT_ERROR(units.reduced<double>(), "round 2 has results of type long");
  // A round with a target reaches the units and then the main program; rounds go on
  // counting over runs.
  units.broadcast_local<&Summed::targeted_round>();
  rt.run();
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen.back(), (std::pair<std::uint64_t, std::int64_t>{3, n - 1}));
  units.for_each_local([&](Summed& u) { EXPECT_EQ(u.scalars, Int64s{n - 1}); });
}

TEST(ReductionResults, RanksWithoutUnitsGetTheResultToo) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Summed>::create(rt, {1, 1, 1});
  Seen seen;
  units.on_reduced<std::int64_t>([&](std::uint64_t round, const std::int64_t& v) {
    seen.emplace_back(round, v);
  });
  units.broadcast_local<&Summed::three_rounds>();
  rt.run();
  EXPECT_EQ(seen, (Seen{{0, 1}, {1, 2}, {2, 3}}));
  EXPECT_EQ(units.reduced<std::int64_t>(), 3);
}

TEST(ReductionResults, ArraysCombineElementByElement) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Summed>::create(rt, {3, 1, 2});
  const double n = static_cast<double>(units.size());
  units.broadcast_local<&Summed::arrays>();
  rt.run();
  const std::vector<Triple> expected{
      {n * (n - 1) / 2, -n * (n - 1) / 2, n}, {0, -(n - 1), 2}, {n - 1, 0, n + 1}};
  units.for_each_local([&](Summed& u) { EXPECT_EQ(u.triples, expected); });
  EXPECT_EQ(units.reduced<Triple>(), expected[2]);
  EXPECT_ERROR(units.reduced<double>(), "has results of type std::array<double, 3");
}

TEST(ReductionResults, VectorsOfOneLengthCombineElementByElement) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Summed>::create(rt, {2, 2, 1});
  const std::int64_t n = units.size();
  units.broadcast_local<&Summed::vectors>(std::size_t{5});
  rt.run();
  Int64s sums, maxima;
  for (std::int64_t i = 1; i <= 5; ++i) {
    sums.push_back(i * n * (n - 1) / 2);
    maxima.push_back(i * (n - 1));
  }
  units.for_each_local([&](Summed& u) { EXPECT_EQ(u.vectors_got, (std::vector{sums, maxima})); });
  EXPECT_EQ(units.reduced<Int64s>(), Int64s{});  // the round of empty vectors
  EXPECT_ERROR(units.reduced<std::int64_t>(), "has results of type std::vector<long");
}

TEST(ReductionResults, DeviceViewsAreContributedOnceTheirStreamIsDone) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Summed>::create(rt, {2, 3, 1});
  const std::int64_t n = units.size();
  units.broadcast_local<&Summed::views>();
  rt.run();
  Int64s sums;
  for (std::int64_t i = 0; i < 4; ++i) sums.push_back(n * (n - 1) / 2 + n * i);
  units.for_each_local([&](Summed& u) {
    EXPECT_EQ(u.halves, std::vector<double>{0.5 * static_cast<double>(n - 1)});
    EXPECT_EQ(u.vectors_got, std::vector<Int64s>{sums});
  });
  EXPECT_EQ(units.reduced<Int64s>(), (Int64s{0, 1, 2, 3}));
}

// Two named reductions of one result type, interleaved in each unit's rounds (a residual
// every pass, an energy every third), a third without a target and a round without a name
// of another type: the main program watches each apart, and a unit's target and its
// awaited rounds get their own reduction's results.
struct Residual : kodo::Reduction<double, kodo::Max> {};
struct Energy : kodo::Reduction<double, kodo::Sum> {};
struct Count : kodo::Reduction<std::int64_t, kodo::Sum> {};

class Named : public kodo::WorkUnit<Named> {
 public:
  explicit Named(const kodo::UnitInit<Named>& init) : WorkUnit(init) {}
  double me() const { return static_cast<double>(collection().shape().linear(index())); }

  kodo::Task passes(int count) {
    for (int pass = 0; pass < count; ++pass) {
      const kodo::Reduced<double> r = co_await all_reduce<Residual>(me() + pass);
      residuals.emplace_back(r.round, r.value);
      if (pass % 3 == 2) contribute<&Named::got_energy, Energy>(me() * pass);
    }
    contribute<Count>(std::int64_t{1});
    contribute(std::int64_t{2}, kodo::Sum{});  // a round without a name
  }
  void got_energy(double energy, std::uint64_t round) { energies.emplace_back(round, energy); }

  std::vector<std::pair<std::uint64_t, double>> residuals, energies;
};

TEST(ReductionResults, NamedReductionsOfOneTypeAreWatchedApart) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Named>::create(rt, {5, 1, 1});
  std::vector<std::pair<std::uint64_t, double>> residuals, energies;
  std::vector<std::pair<std::uint64_t, std::int64_t>> counts, unnamed;
  units.on_reduced<Residual>([&](std::uint64_t round, double v) {
    residuals.emplace_back(round, v);
  });
  units.on_reduced<Energy>([&](std::uint64_t round, double v) { energies.emplace_back(round, v); });
  units.on_reduced<Count>([&](std::uint64_t round, std::int64_t v) {
    counts.emplace_back(round, v);
  });
  // By result type: the round without a name only (another type than the named ones').
  units.on_reduced<std::int64_t>([&](std::uint64_t round, std::int64_t v) {
    unnamed.emplace_back(round, v);
  });
  units.broadcast_local<&Named::passes>(7);
  rt.run();
  // Rounds in each unit's order: passes 0, 1, 2 and the energy after pass 2, ... : a
  // residual of pass p is round p + p / 3; energies follow passes 2 and 5.
  const double n = static_cast<double>(units.size()), units_sum = n * (n - 1) / 2;
  std::vector<std::pair<std::uint64_t, double>> expected_residuals, expected_energies;
  for (int pass = 0; pass < 7; ++pass)
    expected_residuals.emplace_back(pass + pass / 3, n - 1 + pass);
  for (int pass : {2, 5}) expected_energies.emplace_back(pass + pass / 3 + 1, units_sum * pass);
  EXPECT_EQ(residuals, expected_residuals);
  EXPECT_EQ(energies, expected_energies);
  const auto n_units = static_cast<std::int64_t>(units.size());
  using Rounds = std::vector<std::pair<std::uint64_t, std::int64_t>>;
  EXPECT_EQ(counts, (Rounds{{9, n_units}}));
  EXPECT_EQ(unnamed, (Rounds{{10, 2 * n_units}}));
  units.for_each_local([&](const Named& u) {
    EXPECT_EQ(u.residuals, expected_residuals);
    EXPECT_EQ(u.energies, expected_energies);
  });
  EXPECT_EQ(units.reduced<Residual>(), n - 1 + 6);
  EXPECT_EQ(units.reduced<Energy>(), units_sum * 5);
  EXPECT_EQ(units.reduced<Count>(), n_units);
  EXPECT_EQ(units.reduced<std::int64_t>(), 2 * n_units);  // the last round without a name
}

TEST(ReductionResults, ANamedReductionWithoutRoundsHasNoResult) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Summed>::create(rt, {2, 1, 1});
  units.broadcast_local<&Summed::targeted_round>();
  rt.run();
  EXPECT_ERROR(units.reduced<Energy>(), "no reduction round of it has completed");
}

}  // namespace
