// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Behaviour of collections, entry methods, reductions and termination. Every test runs
// on any number of ranks (1, 2 and 4 under ctest) and checks the units this rank holds.

#include "test_runtime.hpp"

#include <kodo/tasking/scheduling/detail/trace.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using kodo::Extent3;
using kodo::Index3;

// --- entry methods with arguments and views ---------------------------------------

struct Greeting {
  std::int64_t from = -1;
  double scale = 0;
  std::string text;
  std::vector<int> numbers;
  std::vector<double> payload;
};

class Greeter : public kodo::WorkUnit<Greeter> {
 public:
  explicit Greeter(const kodo::UnitInit<Greeter>& init) : WorkUnit(init) {}

  std::int64_t me() const { return collection().shape().linear(index()); }

  void greet_next() {
    const auto& shape = collection().shape();
    const std::int64_t n = shape.size();
    Kokkos::View<double*> data("greeting", me() + 1);
    Kokkos::parallel_for(
        "fill", Kokkos::RangePolicy<>(0, data.extent(0)),
        KOKKOS_LAMBDA(int i) { data(i) = 100.0 * i + 0.5; });
    Kokkos::fence();
    unit(shape.delinear((me() + 1) % n))
        .send<&Greeter::receive>(me(), 0.25, std::string("from ") + std::to_string(me()),
                                 std::vector<int>{1, 2, int(me())}, data);
    sent = data;
  }

  void receive(std::int64_t from, double scale, std::string text, std::vector<int> numbers,
               Kokkos::View<double*> data) {
    Greeting g{from, scale, std::move(text), std::move(numbers), {}};
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, data);
    g.payload.assign(h.data(), h.data() + h.size());
    received.push_back(std::move(g));
    received_views.push_back(data);
  }

  std::vector<Greeting> received;
  std::vector<Kokkos::View<double*>> received_views;
  Kokkos::View<double*> sent;
};

TEST(EntryMethods, CarryValuesAndViewsToLocalAndRemoteUnits) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Greeter>::create(rt, {3, 2, 2});
  units.broadcast_local<&Greeter::greet_next>();
  rt.run();
  const std::int64_t n = units.size();
  units.for_each_local([&](Greeter& g) {
    ASSERT_EQ(g.received.size(), 1u) << "unit " << g.me();
    const Greeting& m = g.received[0];
    const std::int64_t from = (g.me() + n - 1) % n;
    EXPECT_EQ(m.from, from);
    EXPECT_EQ(m.scale, 0.25);
    EXPECT_EQ(m.text, "from " + std::to_string(from));
    EXPECT_EQ(m.numbers, (std::vector<int>{1, 2, int(from)}));
    ASSERT_EQ(m.payload.size(), static_cast<std::size_t>(from + 1));
    for (std::size_t i = 0; i < m.payload.size(); ++i) EXPECT_EQ(m.payload[i], 100.0 * i + 0.5);
  });
  // A view handed to a unit of the same rank is the sender's own view; one that crossed
  // ranks is a copy.
  std::vector<const double*> sent_here;
  units.for_each_local([&](Greeter& g) { sent_here.push_back(g.sent.data()); });
  units.for_each_local([&](Greeter& g) {
    const std::int64_t from = (g.me() + n - 1) % n;
    const bool same_rank = units.owner(units.shape().delinear(from)) == rt.rank();
    const double* got = g.received_views[0].data();
    const bool is_senders = std::find(sent_here.begin(), sent_here.end(), got) != sent_here.end();
    EXPECT_EQ(is_senders, same_rank) << "unit " << g.me();
  });
}

TEST(EntryMethods, BroadcastFromOneRankReachesEveryUnitOnce) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Greeter>::create(rt, {5, 1, 1});
  if (rt.rank() == 0)
    units.broadcast<&Greeter::receive>(std::int64_t{7}, 1.0, std::string("all"), std::vector<int>{},
                                       Kokkos::View<double*>("none", 0));
  rt.run();
  units.for_each_local([](Greeter& g) {
    ASSERT_EQ(g.received.size(), 1u);
    EXPECT_EQ(g.received[0].from, 7);
  });
}

TEST(EntryMethods, SendOutsideTheCollectionIsAnError) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Greeter>::create(rt, {2, 2, 2});
  EXPECT_THROW(units[(Index3{2, 0, 0})], kodo::Error);
  EXPECT_THROW(units[(Index3{0, -1, 0})], kodo::Error);
  EXPECT_THROW(kodo::Collection<Greeter>::create(rt, {0, 2, 2}), kodo::Error);
  rt.run();
}

// An entry method inherited from a second base class, which sits at a non-zero offset
// inside the unit: the runtime must adjust the object address.
struct Tagged {
  std::int64_t tag = 42, got = 0;
  void hit(std::int64_t v) { got = v + tag; }
};
class Mixed : public kodo::WorkUnit<Mixed>, public Tagged {
 public:
  explicit Mixed(const kodo::UnitInit<Mixed>& init) : WorkUnit(init) {}
};

TEST(EntryMethods, InheritedFromASecondBaseClass) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Mixed>::create(rt, {2, 2, 1});
  if (rt.rank() == 0) units.broadcast<&Tagged::hit>(std::int64_t{1000});
  rt.run();
  units.for_each_local([](Mixed& m) { EXPECT_EQ(m.got, 1042); });
}

// --- arrival order and chains of messages -------------------------------------------

class Counter : public kodo::WorkUnit<Counter> {
 public:
  explicit Counter(const kodo::UnitInit<Counter>& init) : WorkUnit(init) {}

  void send_to_self(int count) {
    for (int i = 0; i < count; ++i) unit(index()).send<&Counter::record>(i);
  }
  void record(int value) { seen.push_back(value); }

  // Passes a token around the whole collection `laps` times.
  void token(std::int64_t hops_left) {
    ++tokens;
    if (hops_left == 0) return;
    const auto& s = collection().shape();
    unit(s.delinear((s.linear(index()) + 1) % s.size())).send<&Counter::token>(hops_left - 1);
  }

  std::vector<int> seen;
  int tokens = 0;
};

TEST(Scheduler, DispatchesInArrivalOrder) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Counter>::create(rt, {2, 2, 1});
  units.broadcast_local<&Counter::send_to_self>(200);
  rt.run();
  std::vector<int> expected(200);
  std::iota(expected.begin(), expected.end(), 0);
  units.for_each_local([&](Counter& c) { EXPECT_EQ(c.seen, expected); });
}

TEST(Termination, RunWaitsForChainsAcrossRanks) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Counter>::create(rt, {7, 1, 1});
  constexpr int laps = 5;
  if (rt.rank() == 0) units[(Index3{0, 0, 0})].send<&Counter::token>(std::int64_t{laps * 7 - 1});
  rt.run();
  long local = 0;
  units.for_each_local([&](Counter& c) {
    EXPECT_EQ(c.tokens, laps);
    local += c.tokens;
  });
  long total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_LONG, MPI_SUM, rt.comm());
  EXPECT_EQ(total, laps * 7);
}

TEST(Termination, RunWithNothingToDoReturns) {
  auto& rt = test_runtime();
  rt.run();
  rt.run();
  SUCCEED();
}

// --- reductions --------------------------------------------------------------------

class Reducing : public kodo::WorkUnit<Reducing> {
 public:
  explicit Reducing(const kodo::UnitInit<Reducing>& init) : WorkUnit(init) {}
  std::int64_t me() const { return collection().shape().linear(index()); }

  void contribute_three() {
    contribute<&Reducing::got_sum>(me(), kodo::Sum{});
    contribute<&Reducing::got_max>(me(), kodo::Max{});
    contribute<&Reducing::got_min_double>(0.5 * static_cast<double>(me()) + 1.0, kodo::Min{});
  }
  void contribute_if_even() {
    if (me() % 2 == 0) contribute<&Reducing::got_sum>(me(), kodo::Sum{});
  }
  void got_sum(std::int64_t v) { sums.push_back(v); }
  void got_max(std::int64_t v) { maxima.push_back(v); }
  void got_min_double(double v) { minima.push_back(v); }

  std::vector<std::int64_t> sums, maxima;
  std::vector<double> minima;
};

TEST(Reductions, SeveralRoundsInFlightDeliverToEveryUnit) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Reducing>::create(rt, {3, 3, 2});
  const std::int64_t n = units.size();
  units.broadcast_local<&Reducing::contribute_three>();
  units.broadcast_local<&Reducing::contribute_three>();
  rt.run();
  units.for_each_local([&](Reducing& u) {
    EXPECT_EQ(u.sums, (std::vector<std::int64_t>{n * (n - 1) / 2, n * (n - 1) / 2}));
    EXPECT_EQ(u.maxima, (std::vector<std::int64_t>{n - 1, n - 1}));
    EXPECT_EQ(u.minima, (std::vector<double>{1.0, 1.0}));
  });
}

TEST(Reductions, WorkWithFewerUnitsThanRanks) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Reducing>::create(rt, {1, 1, 1});
  units.broadcast_local<&Reducing::contribute_three>();
  rt.run();
  units.for_each_local([&](Reducing& u) { EXPECT_EQ(u.sums, (std::vector<std::int64_t>{0})); });
}

TEST(Reductions, MissingContributionsAreReportedNotAwaited) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Reducing>::create(rt, {4, 2, 1});
  units.broadcast_local<&Reducing::contribute_if_even>();
  try {
    rt.run();
    ADD_FAILURE() << "run() returned although half of the units never contributed";
  } catch (const kodo::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("never contributed"), std::string::npos) << what;
    // A rank with a round open names the units it still waits for.
    if (what.find("reduction round 0") != std::string::npos) {
      EXPECT_NE(what.find("missing: unit ("), std::string::npos) << what;
    }
  }
  units.for_each_local([](Reducing& u) { EXPECT_TRUE(u.sums.empty()); });
}

}  // namespace

namespace {

// Spans seconds into a run keep sub-microsecond timestamps in the written trace.
TEST(Trace, TimestampsLateInARunKeepSubMicrosecondPrecision) {
  const std::string prefix = testing::TempDir() + "kodo_trace_precision_" +
                             std::to_string(getpid());
  setenv("KODO_TRACE", prefix.c_str(), 1);
  kodo::detail::Trace trace;
  unsetenv("KODO_TRACE");
  const auto late = kodo::detail::Trace::Clock::now() + std::chrono::seconds(3);
  trace.span("first", 0, late, late + std::chrono::nanoseconds(1500));
  trace.span("second", 0, late + std::chrono::nanoseconds(250),
             late + std::chrono::microseconds(2));
  const std::string path = trace.write(0);
  ASSERT_FALSE(path.empty());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  // The value after `"key":` in the event named `name`.
  const auto field = [&](const std::string& name, const std::string& key) {
    const std::string all = text.str();
    const auto at = all.find("\"name\":\"" + name + "\"");
    EXPECT_NE(at, std::string::npos) << name;
    const auto value = all.find("\"" + key + "\":", at) + key.size() + 3;
    return std::strtod(all.c_str() + value, nullptr);
  };
  EXPECT_GT(field("first", "ts"), 2.9e6);
  EXPECT_NEAR(field("second", "ts") - field("first", "ts"), 0.25, 0.002);
  EXPECT_NEAR(field("first", "dur"), 1.5, 0.002);
}

}  // namespace
