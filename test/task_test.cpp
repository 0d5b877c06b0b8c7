// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Coroutine units (task.hpp): a loop written as an MPI rank's (halos from both neighbours
// awaited together, a reduced residual deciding the next pass), device work awaited,
// tasks awaiting tasks and their exceptions, reduction targets told the round, and a job
// that goes quiet while a task waits. Every test runs on any number of ranks (1, 2 and 4
// under ctest).

#include "expect_error.hpp"
#include "test_runtime.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

namespace {

using HostValue = Kokkos::View<double[1], Kokkos::HostSpace>;

// A periodic ring of values; a pass sets each to (left + 2 value + right) / 4 until the
// largest change of a pass is below the tolerance. The loop an MPI rank would run, with
// the MPI calls' places taken by co_await.
class RingCell : public kodo::WorkUnit<RingCell> {
 public:
  explicit RingCell(const kodo::UnitInit<RingCell>& init)
      : WorkUnit(init),
        left_(open_channel(streams().communication(0), neighbour(-1))),
        right_(open_channel(streams().communication(0), neighbour(1))),
        value_(static_cast<double>(linear() % 4)) {}

  kodo::Task solve(double tolerance, int most_passes) {
    double residual = 1;
    while (residual >= tolerance && passes < most_passes) {
      to_left_(0) = value_;
      to_right_(0) = value_;
      left_.send(to_left_, kodo::data_ready);
      right_.send(to_right_, kodo::data_ready);
      const auto [from_left, from_right] =
          co_await kodo::when_all(kodo::receive(left_, in_left_), kodo::receive(right_, in_right_));
      EXPECT_EQ(from_left, 1u);
      EXPECT_EQ(from_right, 1u);
      const double next = (in_left_(0) + 2 * value_ + in_right_(0)) / 4;
      const double change = std::fabs(next - value_);
      value_ = next;
      const kodo::Reduced<double> reduced = co_await all_reduce(change, kodo::Max{});
      rounds.push_back(reduced.round);
      residual = reduced.value;
      ++passes;
    }
    final_residual = residual;
  }

  double value() const { return value_; }
  std::int64_t linear() const { return collection().shape().linear(index()); }
  int passes = 0;
  double final_residual = -1;
  std::vector<std::uint64_t> rounds;

 private:
  kodo::Index3 neighbour(std::int64_t side) const {
    const std::int64_t n = collection().size();
    return collection().shape().delinear((linear() + side + n) % n);
  }
  kodo::Channel left_, right_;  // six units: the two neighbours differ
  double value_;
  HostValue to_left_{"to_left"}, to_right_{"to_right"}, in_left_{"in_left"}, in_right_{"in_right"};
};

// The same ring, serially.
std::vector<double> serial_ring(std::int64_t n, double tolerance, int most_passes, int& passes) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<double>(i % 4);
  double residual = 1;
  for (passes = 0; residual >= tolerance && passes < most_passes; ++passes) {
    std::vector<double> next(v.size());
    residual = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      next[i] = (v[(i + v.size() - 1) % v.size()] + 2 * v[i] + v[(i + 1) % v.size()]) / 4;
      residual = std::fmax(residual, std::fabs(next[i] - v[i]));
    }
    v = next;
  }
  return v;
}

TEST(Tasks, ARingLoopGivesTheSerialValuesAndRounds) {
  auto& rt = test_runtime();
  auto cells = kodo::Collection<RingCell>::create(rt, {6, 1, 1});
  const double tolerance = 1e-6;
  int passes = 0;
  const std::vector<double> expected = serial_ring(6, tolerance, 500, passes);
  ASSERT_GT(passes, 5);
  ASSERT_LT(passes, 500);
  cells.broadcast_local<&RingCell::solve>(tolerance, 500);
  rt.run();
  std::vector<std::uint64_t> rounds(static_cast<std::size_t>(passes));
  for (std::size_t k = 0; k < rounds.size(); ++k) rounds[k] = k;
  cells.for_each_local([&](const RingCell& c) {
    EXPECT_EQ(c.passes, passes) << "unit " << c.linear();
    EXPECT_EQ(c.value(), expected[static_cast<std::size_t>(c.linear())]) << "unit " << c.linear();
    EXPECT_LT(c.final_residual, tolerance);
    EXPECT_EQ(c.rounds, rounds);
  });
  // The main program sees the last round too.
  EXPECT_LT(cells.reduced<double>(), tolerance);
}

// A line of units, each with 0 to 2 neighbours (a run-time number): a task awaits all of
// its neighbours' values at once with when_all over a std::vector, and an empty one.
class LineCell : public kodo::WorkUnit<LineCell> {
 public:
  explicit LineCell(const kodo::UnitInit<LineCell>& init) : WorkUnit(init) {
    const std::int64_t n = collection().size();
    for (const std::int64_t side : {-1, 1})
      if (linear() + side >= 0 && linear() + side < n) {
        channels_.push_back(open_channel(streams().communication(0),
                                         collection().shape().delinear(linear() + side)));
        out_.emplace_back("out");
        in_.emplace_back("in");
      }
  }
  kodo::Task exchange() {
    using Receive = decltype(kodo::receive(channels_[0], in_[0]));
    co_await kodo::when_all(std::vector<Receive>{});  // none: done at once
    for (std::size_t i = 0; i < channels_.size(); ++i) {
      out_[i](0) = static_cast<double>(linear());
      channels_[i].send(out_[i], kodo::data_ready);
    }
    std::vector<Receive> receives;
    for (std::size_t i = 0; i < channels_.size(); ++i)
      receives.push_back(kodo::receive(channels_[i], in_[i]));
    counts = co_await kodo::when_all(std::move(receives));
    for (const auto& v : in_) neighbours_sum += v(0);
  }
  std::int64_t linear() const { return collection().shape().linear(index()); }
  std::vector<std::size_t> counts;
  double neighbours_sum = 0;
  std::size_t neighbours() const { return channels_.size(); }

 private:
  std::vector<kodo::Channel> channels_;
  std::vector<HostValue> out_, in_;
};

TEST(Tasks, WhenAllAwaitsARunTimeNumberOfOperations) {
  auto& rt = test_runtime();
  const std::int64_t n = 2 * rt.size() + 1;
  auto cells = kodo::Collection<LineCell>::create(rt, {n, 1, 1});
  cells.broadcast_local<&LineCell::exchange>();
  rt.run();
  cells.for_each_local([&](const LineCell& c) {
    const std::int64_t i = c.linear();
    EXPECT_EQ(c.neighbours(), static_cast<std::size_t>((i > 0) + (i + 1 < n)));
    EXPECT_EQ(c.counts, std::vector<std::size_t>(c.neighbours(), 1));
    EXPECT_EQ(c.neighbours_sum, static_cast<double>((i > 0 ? i - 1 : 0) + (i + 1 < n ? i + 1 : 0)));
  });
}

// Sends awaited with the receives, as MPI_Waitall on MPI_Isend and MPI_Irecv requests: once
// the await is over a unit writes its send views again, and what its neighbours received
// is each round's value, never the overwritten one.
class WaitallCell : public kodo::WorkUnit<WaitallCell> {
 public:
  static constexpr int kRounds = 6;
  explicit WaitallCell(const kodo::UnitInit<WaitallCell>& init) : WorkUnit(init) {
    const std::int64_t n = collection().size();
    for (const std::int64_t side : {-1, 1})
      if (linear() + side >= 0 && linear() + side < n) {
        neighbours_.push_back(linear() + side);
        channels_.push_back(open_channel(streams().communication(0),
                                         collection().shape().delinear(linear() + side)));
        out_.emplace_back("out");
        in_.emplace_back("in");
      }
  }
  static double value(std::int64_t unit, int round) { return 100.0 * round + unit; }
  kodo::Task exchange() {
    for (int round = 0; round < kRounds; ++round) {
      using Send = decltype(kodo::send(channels_[0], out_[0]));
      using Receive = decltype(kodo::receive(channels_[0], in_[0]));
      std::vector<Send> sends;
      std::vector<Receive> receives;
      for (std::size_t i = 0; i < channels_.size(); ++i) {
        out_[i](0) = value(linear(), round);
        sends.push_back(kodo::send(channels_[i], out_[i]));
        receives.push_back(kodo::receive(channels_[i], in_[i]));
      }
      co_await kodo::when_all(kodo::when_all(std::move(sends)),
                              kodo::when_all(std::move(receives)));
      for (std::size_t i = 0; i < channels_.size(); ++i) {
        out_[i](0) = -1;  // sent: free to write
        wrong += in_[i](0) != value(neighbours_[i], round);
      }
    }
  }
  std::int64_t linear() const { return collection().shape().linear(index()); }
  int wrong = 0;

 private:
  std::vector<std::int64_t> neighbours_;
  std::vector<kodo::Channel> channels_;
  std::vector<HostValue> out_, in_;
};

TEST(Tasks, SendsAwaitedWithReceivesMayBeWrittenAgainOnceDone) {
  auto& rt = test_runtime();
  auto cells = kodo::Collection<WaitallCell>::create(rt, {3 * rt.size(), 1, 1});
  cells.broadcast_local<&WaitallCell::exchange>();
  rt.run();
  cells.for_each_local([&](const WaitallCell& c) {
    EXPECT_EQ(c.wrong, 0) << "unit " << c.linear();
  });
}

// Device work awaited, tasks awaiting tasks (one of them twice), an exception caught
// across them, when_all of operations without a result, a runtime-length all_reduce, and
// a reduction target told its round.
class Worker : public kodo::WorkUnit<Worker> {
 public:
  explicit Worker(const kodo::UnitInit<Worker>& init) : WorkUnit(init) {}
  std::int64_t me() const { return collection().shape().linear(index()); }

  kodo::Task fill(int value) {
    auto& stream = streams().compute(static_cast<std::size_t>(me()));
    Kokkos::View<int*> data("data", 64);
    Kokkos::parallel_for(
        "fill", Kokkos::RangePolicy<kodo::ExecutionSpace>(stream.space(), 0, 64),
        KOKKOS_LAMBDA(int i) { data(i) = value + i; });
    co_await when_done(stream);
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, data);
    for (int i = 0; i < 64; ++i) sum += host(i);
  }
  kodo::Task fails() {
    co_await fill(1);
    throw std::runtime_error("a child task's failure");
  }
  kodo::Task parent() {
    try {
      co_await fails();
    } catch (const std::runtime_error& e) {
      caught = e.what();
    }
    kodo::Task second = fill(2);  // the parent goes on after the child's exception
    co_await second;
    co_await second;  // ended already: goes on at once
    // Operations without a result give std::monostate; a runtime-length reduction.
    const auto both =
        co_await kodo::when_all(when_done(streams().compute(0)), when_done(streams().compute(1)));
    static_assert(std::is_same_v<decltype(both), const std::tuple<std::monostate, std::monostate>>);
    const kodo::Reduced<std::vector<std::int64_t>> reduced =
        co_await all_reduce(std::vector<std::int64_t>{me(), 1}, kodo::Sum{});
    totals = reduced.value;
    ++finished;
  }

  void rounds() {
    for (int k = 0; k < 3; ++k) contribute<&Worker::got>(me() + k, kodo::Sum{});
  }
  void got(std::int64_t value, std::uint64_t round) { seen.emplace_back(round, value); }

  std::int64_t sum = 0;
  std::vector<std::int64_t> totals;
  std::string caught;
  int finished = 0;
  std::vector<std::pair<std::uint64_t, std::int64_t>> seen;
};

TEST(Tasks, DeviceWorkAndTasksAwaitedAnExceptionCaughtInTheParent) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Worker>::create(rt, {3, 1, 1});
  units.broadcast_local<&Worker::parent>();
  rt.run();
  // fill(1) and fill(2): 64 * value + 0 + 1 + ... + 63 each.
  units.for_each_local([](const Worker& w) {
    EXPECT_EQ(w.caught, "a child task's failure");
    EXPECT_EQ(w.finished, 1);
    EXPECT_EQ(w.sum, 64 * 1 + 64 * 2 + 2 * (63 * 64 / 2));
    EXPECT_EQ(w.totals, (std::vector<std::int64_t>{0 + 1 + 2, 3}));
  });
}

TEST(Tasks, AReductionTargetMayTakeTheRound) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Worker>::create(rt, {4, 1, 1});
  units.broadcast_local<&Worker::rounds>();
  rt.run();
  const std::int64_t n = units.size(), base = n * (n - 1) / 2;
  using Seen = std::vector<std::pair<std::uint64_t, std::int64_t>>;
  units.for_each_local([&](const Worker& w) {
    EXPECT_EQ(w.seen, (Seen{{0, base}, {1, base + n}, {2, base + 2 * n}}));
  });
}

// A task waiting for what nobody sends: the quiet job is an error naming it and its line;
// once the send comes, the task goes on.
class Waiter : public kodo::WorkUnit<Waiter> {
 public:
  explicit Waiter(const kodo::UnitInit<Waiter>& init)
      : WorkUnit(init), link_(open_channel(streams().communication(0), {1 - init.index.x, 0, 0})) {}
  kodo::Task wait_for_peer() {
    if (index().x != 1) co_return;
    line = __LINE__ + 1;
    arrived = co_await kodo::receive(link_, in_);
    value = in_(0);
  }
  void send_now() {
    if (index().x != 0) return;
    out_(0) = 42;
    link_.send(out_, kodo::data_ready);
  }
  int line = 0;
  std::size_t arrived = 0;
  double value = 0;

 private:
  kodo::Channel link_;
  HostValue in_{"in"}, out_{"out"};
};

TEST(Tasks, AQuietJobWithAWaitingTaskIsAnErrorNamingIt) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Waiter>::create(rt, {2, 1, 1});
  units.broadcast_local<&Waiter::wait_for_peer>();
  const std::string error = error_of([&] { rt.run(); });
  EXPECT_NE(error.find("the job went quiet with 1 task(s) waiting"), std::string::npos) << error;
  units.for_each_local([&](const Waiter& w) {
    if (w.index().x != 1) return;
    const std::string expected = "unit (1,0,0) of collection " + std::to_string(units.id()) +
                                 ": its task awaits a receive posted on a channel (kodo::receive) "
                                 "at " +
                                 std::string(__FILE__) + ":" + std::to_string(w.line);
    EXPECT_NE(error.find(expected), std::string::npos) << error;
  });
  units.broadcast_local<&Waiter::send_now>();
  rt.run();
  units.for_each_local([](const Waiter& w) {
    if (w.index().x != 1) return;
    EXPECT_EQ(w.arrived, 1u);
    EXPECT_EQ(w.value, 42);
  });
}

}  // namespace
