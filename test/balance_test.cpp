// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Balancers (balance.hpp) as pure functions, and rebalance() on units that state graded
// loads: balanced in one call, left alone by the next.
#include "expect_error.hpp"
#include "test_runtime.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

namespace {

// `units` units with loads 1, 2, ..., in blocks over `ranks`.
kodo::BalanceInput graded(int units, int ranks) {
  kodo::BalanceInput in;
  in.ranks = ranks;
  for (int u = 0; u < units; ++u) {
    in.loads.push_back(u + 1.0);
    in.owners.push_back(u * ranks / units);
    in.bytes.push_back(100);
  }
  return in;
}

double imbalance_of(const kodo::BalanceInput& in, const std::vector<int>& owners) {
  return kodo::imbalance(kodo::rank_loads(in.loads, owners, in.ranks));
}

std::int64_t moves(const std::vector<int>& a, const std::vector<int>& b) {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

}  // namespace

TEST(Balancers, GreedyEvensGradedLoads) {
  const auto in = graded(32, 4);
  EXPECT_GT(imbalance_of(in, in.owners), 0.5);
  const auto owners = kodo::greedy_balance(in);
  EXPECT_LE(imbalance_of(in, owners), 0.02);
  EXPECT_EQ(owners, kodo::greedy_balance(in));  // the same input, the same map
}

TEST(Balancers, RefineMovesFewUnitsToWithinTheTolerance) {
  const auto in = graded(32, 4);
  const auto owners = kodo::RefineBalance{0.05}(in);
  EXPECT_LE(imbalance_of(in, owners), 0.05);
  EXPECT_LT(moves(in.owners, owners), moves(in.owners, kodo::greedy_balance(in)));
  // Balanced loads stay where they are.
  kodo::BalanceInput even = in;
  even.owners = owners;
  EXPECT_EQ(kodo::RefineBalance{0.05}(even), owners);
}

TEST(Balancers, RefineSwapsWhereMovesCannotHelp) {
  // Two heavy units on rank 0, two light ones on rank 1: no move alone helps.
  kodo::BalanceInput in;
  in.ranks = 2;
  in.loads = {3, 3, 1, 1};
  in.owners = {0, 0, 1, 1};
  in.bytes = {1, 1, 1, 1};
  const auto owners = kodo::refine_balance(in);
  EXPECT_EQ(imbalance_of(in, owners), 0);
  EXPECT_EQ(moves(in.owners, owners), 2);
}

TEST(Balancers, RotateMovesEveryUnitToTheNextRank) {
  const auto in = graded(6, 3);
  const auto owners = kodo::rotate_balance(in);
  for (std::size_t u = 0; u < owners.size(); ++u) EXPECT_EQ(owners[u], (in.owners[u] + 1) % 3);
  EXPECT_EQ(kodo::rotate_balance(graded(3, 1)), (std::vector<int>{0, 0, 0}));
}

TEST(Balancers, NamedAndCheckedInput) {
  const auto in = graded(8, 2);
  EXPECT_EQ(kodo::balancer_named("greedy")(in), kodo::greedy_balance(in));
  EXPECT_EQ(kodo::balancer_named("refine")(in), kodo::refine_balance(in));
  EXPECT_EQ(kodo::balancer_named("rotate")(in), kodo::rotate_balance(in));
  EXPECT_ERROR(kodo::balancer_named("best"),
               "unknown balancer 'best' (expected greedy, refine or rotate)");
  auto bad = in;
  bad.loads[3] = -1;
  EXPECT_ERROR(kodo::greedy_balance(bad), "unit 3's load is -1");
  bad.loads[3] = std::nan("");
  EXPECT_ERROR(kodo::refine_balance(bad), "loads are finite and not negative");
  bad = in;
  bad.owners[0] = 2;
  EXPECT_ERROR(kodo::rotate_balance(bad), "unit 0 is held by rank 2, outside the 2 rank(s)");
  EXPECT_EQ(kodo::imbalance({}), 0);
  EXPECT_EQ(kodo::imbalance({0, 0}), 0);
  EXPECT_DOUBLE_EQ(kodo::imbalance({3, 1}), 0.5);
}

namespace {
// A unit whose load is its index + 1/2, stated (as a GPU code states its cells).
struct Weighted : kodo::WorkUnit<Weighted> {
  explicit Weighted(const kodo::UnitInit<Weighted>& init) : WorkUnit(init) {
    set_load(static_cast<double>(init.shape.linear(init.index)) + 0.5);
  }
  void ping() { ++pings; }
  template <class State>
  void state(State& s) {
    s("pings", pings);
  }
  int pings = 0;
};
}  // namespace

TEST(Rebalance, GradedLoadsBalancedOnceThenLeftAlone) {
  kodo::Runtime& runtime = test_runtime();
  const int ranks = runtime.size();
  auto units = kodo::Collection<Weighted>::create(runtime, {8 * ranks, 1, 1});
  units.broadcast_local<&Weighted::ping>();
  const kodo::BalanceReport first = kodo::rebalance(units, kodo::greedy_balance);
  if (ranks == 1) {
    EXPECT_FALSE(first.applied);
    EXPECT_NE(first.why.find("within the tolerance"), std::string::npos) << first.why;
    return;
  }
  EXPECT_GE(first.before, 0.4);  // 1.5 on 2 ranks, more on 4
  EXPECT_TRUE(first.applied) << first.why;
  EXPECT_LE(first.after, 0.10);
  EXPECT_GT(first.moved, 0);
  EXPECT_EQ(first.migration.moved, first.moved);
  for (std::size_t l = 0; l < first.owners.size(); ++l)
    EXPECT_EQ(units.owner(units.shape().delinear(static_cast<std::int64_t>(l))), first.owners[l]);
  units.for_each_local([](const Weighted& w) { EXPECT_EQ(w.pings, 1); });
  // The stated loads went with the units: the same loads, already balanced.
  const kodo::BalanceReport second = kodo::rebalance(units, kodo::refine_balance);
  EXPECT_FALSE(second.applied);
  EXPECT_EQ(second.moved, 0);
  EXPECT_NE(second.why.find("within the tolerance"), std::string::npos) << second.why;
  EXPECT_NEAR(second.before, first.after, 1e-12);
  // always: rotate moves every unit even so.
  const kodo::BalanceReport third = kodo::rebalance(units, kodo::rotate_balance, {.always = true});
  EXPECT_TRUE(third.applied);
  EXPECT_EQ(third.moved, units.size());
}

namespace {
// 200 ms of host time for unit (0,0,0), 0.5 ms for the others: wall time, so a rank
// descheduled while it spins measures more (tens of ms under a loaded sanitizer run, as
// CI saw), which the margin leaves far below unit (0,0,0)'s.
void spin(const kodo::Index3& index) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::microseconds(index.x == 0 ? 200000 : 500);
  while (std::chrono::steady_clock::now() < until) {
  }
}

// A unit whose entry method takes longer the higher its index (measured, not stated).
struct Busy : kodo::WorkUnit<Busy> {
  explicit Busy(const kodo::UnitInit<Busy>& init) : WorkUnit(init) {}
  void work() { spin(index()); }
  template <class State>
  void state(State& s) {
    s("nothing", nothing);
  }
  int nothing = 0;
};
}  // namespace

TEST(Rebalance, MeasuresHostTimeWhereAsked) {
  kodo::Runtime& runtime = test_runtime();
  auto units = kodo::Collection<Busy>::create(runtime, {2 * runtime.size(), 1, 1});
  units.broadcast_local<&Busy::work>();
  auto unmeasured = kodo::rebalance(units, kodo::greedy_balance);  // turns measuring on
  for (const double load : unmeasured.input.loads) EXPECT_EQ(load, 0);
  kodo::measure_loads(units);
  units.broadcast_local<&Busy::work>();
  const auto measured = kodo::rebalance(units, kodo::greedy_balance);
  const auto& loads = measured.input.loads;
  EXPECT_GE(loads[0], 0.2);  // unit (0,0,0) spun for 200 ms, the others for 0.5
  for (std::size_t u = 1; u < loads.size(); ++u) EXPECT_LT(loads[u], loads[0]);
}

namespace {
// The same, as a coroutine whose spinning comes after an await: measured in its resume.
struct BusyTask : kodo::WorkUnit<BusyTask> {
  explicit BusyTask(const kodo::UnitInit<BusyTask>& init)
      : WorkUnit(init), stream_(streams().compute(0)) {}
  kodo::Task work() {
    co_await when_done(stream_);
    spin(index());
  }
  template <class State>
  void state(State& s) {
    s("nothing", nothing);
  }
  kodo::Stream& stream_;
  int nothing = 0;
};
}  // namespace

TEST(Rebalance, MeasuresTheResumesOfTasks) {
  kodo::Runtime& runtime = test_runtime();
  auto units = kodo::Collection<BusyTask>::create(runtime, {2 * runtime.size(), 1, 1});
  kodo::measure_loads(units);
  units.broadcast_local<&BusyTask::work>();
  const auto measured = kodo::rebalance(units, kodo::greedy_balance);
  const auto& loads = measured.input.loads;
  EXPECT_GE(loads[0], 0.2);  // spun after its await, in a resume
  for (std::size_t u = 1; u < loads.size(); ++u) EXPECT_LT(loads[u], loads[0]);
}

namespace {
// A unit whose entry method only launches work on its stream, 40 times more for unit
// (0,0,0): its host time is a launch's, its device time (measure_device_load) the work's.
struct Launcher : kodo::WorkUnit<Launcher> {
  explicit Launcher(const kodo::UnitInit<Launcher>& init)
      : WorkUnit(init), stream_(streams().compute(local_slot())) {
    measure_device_load(stream_);
  }
  void work() {
    const std::int64_t rounds = (kodo::host_build ? 50 : 5000) * (index().x == 0 ? 40 : 1);
    const auto v = values_;
    Kokkos::parallel_for(
        "spin", Kokkos::RangePolicy<kodo::ExecutionSpace>(stream_.space(), 0, v.extent(0)),
        KOKKOS_LAMBDA(std::int64_t i) {
          double x = v(i);
          for (std::int64_t k = 0; k < rounds; ++k) x = x * 0.999999 + 1e-7;
          v(i) = x;
        });
  }
  template <class State>
  void state(State& s) {
    s("values", values_);
  }
  kodo::Stream& stream_;
  Kokkos::View<double*> values_{"values", 1 << 14};
};
}  // namespace

TEST(Rebalance, MeasuresDeviceTimeOnTheStreamAUnitNames) {
  kodo::Runtime& runtime = test_runtime();
  auto units = kodo::Collection<Launcher>::create(runtime, {2 * runtime.size(), 1, 1});
  kodo::measure_loads(units);
  for (int call = 0; call < 3; ++call) units.broadcast_local<&Launcher::work>();
  const auto measured = kodo::rebalance(units, kodo::greedy_balance);
  const auto& loads = measured.input.loads;
  // On a GPU the host time of each call is a launch, alike for every unit; the device
  // time follows the work. (The host backend runs the work in the call: the same.) Ranks
  // sharing a GPU take turns on it in time slices, which a unit's device time then holds
  // too: the loads are gathered, but not compared.
  const bool own_device = !runtime.placement().shares_device;
  for (std::size_t u = 0; u < loads.size(); ++u) {
    EXPECT_TRUE(std::isfinite(loads[u]) && loads[u] > 0) << u << ": " << loads[u];
    if (u > 0 && own_device) {
      EXPECT_GT(loads[0], 4 * loads[u]) << u;
    }
  }
  // The loads move with the units and go on being measured where they arrive.
  units.broadcast_local<&Launcher::work>();
  const auto again = kodo::rebalance(units, kodo::greedy_balance);
  EXPECT_EQ(again.input.loads.size(), loads.size());
  for (std::size_t u = 1; u < again.input.loads.size() && own_device; ++u)
    EXPECT_GT(again.input.loads[0], 4 * again.input.loads[u]) << u;
}

// What rebalance gathers from other ranks is checked before use (issue 54): a rank that
// sends the wrong number of loads, a unit it does not hold or a load that is not a
// number is named on every other rank, and nothing is written outside the table. The
// liar (rank 1) makes the gathering's MPI calls itself, with the bytes it chooses.
TEST(Rebalance, LoadsFromOtherRanksAreCheckedBeforeUse) {
  kodo::Runtime& runtime = test_runtime();
  const int ranks = runtime.size();
  if (ranks < 2) GTEST_SKIP() << "needs a second rank to lie";
  auto units = kodo::Collection<Weighted>::create(runtime, {4 * ranks, 1, 1});
  auto& store = kodo::detail::MigrationAccess::store(units);
  struct Entry {  // as gather_loads sends it
    std::int64_t linear;
    double load;
    std::uint64_t bytes;
  };
  std::vector<Entry> mine;
  for (std::int64_t s = 0; s < store.local_count(); ++s)
    mine.push_back({store.linear_of(s), 1.0, 8});
  std::int64_t not_its_own = -1;  // a unit rank 0 holds
  for (std::int64_t l = 0; l < units.size() && not_its_own < 0; ++l)
    if (units.owner(units.shape().delinear(l)) == 0) not_its_own = l;
  const std::vector<std::uint64_t> bytes(static_cast<std::size_t>(store.local_count()), 8);
  auto lie = [&](std::vector<Entry> sent, bool whole) {
    // The liar's half of gather_loads: the counts, then (when they are right) the entries.
    int count = static_cast<int>(sent.size() * sizeof(Entry));
    std::vector<int> counts(static_cast<std::size_t>(ranks)), offsets(counts.size());
    MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, runtime.comm());
    if (!whole) return;
    for (std::size_t r = 1; r < counts.size(); ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
    std::vector<Entry> all(static_cast<std::size_t>(units.size()) + 1);
    MPI_Allgatherv(sent.data(), count, MPI_BYTE, all.data(), counts.data(), offsets.data(),
                   MPI_BYTE, runtime.comm());
  };
  auto gather = [&] { kodo::detail::gather_loads(runtime, store, bytes); };
  // One entry more than its units: refused after the counts.
  std::vector<Entry> more = mine;
  more.push_back(mine.front());
  if (runtime.rank() == 1)
    lie(more, false);
  else
    EXPECT_ERROR(gather(), "rank 1 sent " + std::to_string(more.size() * sizeof(Entry)) +
                               " bytes of loads for collection " + std::to_string(units.id()));
  // The right count, one entry for a unit of rank 0.
  std::vector<Entry> other = mine;
  other.front().linear = not_its_own;
  if (runtime.rank() == 1)
    lie(other, true);
  else
    EXPECT_ERROR(gather(), "rank 1 sent the load of unit " + std::to_string(not_its_own));
  // A unit far outside the collection.
  other.front().linear = std::int64_t{1} << 40;
  if (runtime.rank() == 1)
    lie(other, true);
  else
    EXPECT_ERROR(gather(), "which is not one of its units or comes twice");
  // A load that is not a number.
  std::vector<Entry> nan = mine;
  nan.front().load = std::nan("");
  if (runtime.rank() == 1)
    lie(nan, true);
  else
    EXPECT_ERROR(gather(), "a load is finite and not negative");
  // Honest again: every rank gathers every unit's load.
  const kodo::BalanceInput in = kodo::detail::gather_loads(runtime, store, bytes);
  ASSERT_EQ(in.loads.size(), static_cast<std::size_t>(units.size()));
  for (std::size_t l = 0; l < in.loads.size(); ++l)
    EXPECT_DOUBLE_EQ(in.loads[l], static_cast<double>(l) + 0.5);
}
