// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The completion engine and streams. Sources completed by hand stand in for device
// streams so that out-of-order completion can be forced on the host backend.

#include "test_runtime.hpp"

#include <kodo/tasking/scheduling/detail/completion_engine.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace {

// A source whose work completes only when the test says so.
class ManualSource : public kodo::CompletionSource {
 public:
  std::uint64_t mark() override { return ++issued; }
  std::uint64_t reached() const override {
    ++reads;
    return done;
  }
  std::uint64_t issued = 0;
  mutable std::uint64_t done = 0;
  mutable int reads = 0;
};

TEST(CompletionEngine, CompletesOutOfOrderAcrossSourcesInOrderWithin) {
  kodo::CompletionEngine engine;
  ManualSource slow, fast;
  std::vector<std::string> ran;
  engine.when_done(slow, [&] { ran.push_back("slow1"); });
  engine.when_done(fast, [&] { ran.push_back("fast1"); });
  engine.when_done(slow, [&] { ran.push_back("slow2"); });
  engine.when_done(fast, [&] { ran.push_back("fast2"); });
  EXPECT_EQ(engine.pending(), 4u);
  EXPECT_EQ(engine.poll(), 0u);

  fast.done = 2;  // the later source finishes first: nothing waits behind `slow`
  EXPECT_EQ(engine.poll(), 2u);
  EXPECT_EQ(ran, (std::vector<std::string>{"fast1", "fast2"}));

  slow.done = 1;
  EXPECT_EQ(engine.poll(), 1u);
  slow.done = 2;
  EXPECT_EQ(engine.poll(), 1u);
  EXPECT_EQ(ran, (std::vector<std::string>{"fast1", "fast2", "slow1", "slow2"}));
  EXPECT_EQ(engine.pending(), 0u);
}

TEST(CompletionEngine, PollReadsOneCounterPerBusySource) {
  kodo::CompletionEngine engine;
  ManualSource a, b, idle;
  engine.when_done(idle, [] {});
  idle.done = 1;
  engine.poll();
  for (int i = 0; i < 256; ++i) engine.when_done(a, [] {});
  for (int i = 0; i < 256; ++i) engine.when_done(b, [] {});
  a.reads = b.reads = idle.reads = 0;
  EXPECT_EQ(engine.poll(), 0u);
  // 512 waiting continuations cost two reads; an idle source costs none.
  EXPECT_EQ(a.reads, 1);
  EXPECT_EQ(b.reads, 1);
  EXPECT_EQ(idle.reads, 0);
  a.done = 256;
  b.done = 256;
  EXPECT_EQ(engine.poll(), 512u);
}

TEST(CompletionEngine, ReadyCountsWhatAPollWouldRunUpToALimit) {
  kodo::CompletionEngine engine;
  ManualSource a, b;
  for (int i = 0; i < 3; ++i) engine.when_done(a, [] {});
  engine.when_done(b, [] {});
  EXPECT_EQ(engine.ready_count(8), 0u);
  a.done = 2;  // two of a's three
  EXPECT_EQ(engine.ready_count(8), 2u);
  EXPECT_EQ(engine.ready_count(1), 1u);
  b.done = 1;
  EXPECT_EQ(engine.ready_count(8), 3u);
  EXPECT_EQ(engine.ready_count(2), 2u);
  EXPECT_EQ(engine.poll(), 3u);  // as counted
  EXPECT_EQ(engine.ready_count(8), 0u);
}

TEST(CompletionEngine, ContinuationsMayWaitAgain) {
  kodo::CompletionEngine engine;
  ManualSource s, t;
  int stage = 0;
  engine.when_done(s, [&] {
    stage = 1;
    engine.when_done(t, [&] { stage = 2; });  // a new source, added mid-poll
    engine.when_done(s, [&] { stage = 3; });
  });
  s.done = 1;
  engine.poll();
  EXPECT_EQ(stage, 1);
  t.done = 1;
  engine.poll();
  EXPECT_EQ(stage, 2);
  s.done = 2;
  engine.poll();
  EXPECT_EQ(stage, 3);
}

TEST(CompletionEngine, HealthCheckAsksOnlyBusySources) {
  struct Broken : ManualSource {
    void check_health() const override { throw kodo::Error("kodo: device fault"); }
  };
  kodo::CompletionEngine engine;
  Broken broken;
  ManualSource fine;
  engine.when_done(fine, [] {});
  EXPECT_NO_THROW(engine.check_health());  // `broken` has nothing waiting
  engine.when_done(broken, [] {});
  EXPECT_THROW(engine.check_health(), kodo::Error);
}

// Kernels outside the TEST bodies: CUDA takes no device lambda in a private member.
void fill_with_indices(const kodo::ExecutionSpace& space, const Kokkos::View<int*>& v) {
  Kokkos::parallel_for(
      "fill", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, v.extent(0)),
      KOKKOS_LAMBDA(int i) { v(i) = i; });
}
int sum_of(const kodo::ExecutionSpace& space, const Kokkos::View<int*>& v) {
  int sum = 0;
  Kokkos::parallel_reduce(
      "sum", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, v.extent(0)),
      KOKKOS_LAMBDA(int i, int& acc) { acc += v(i); }, sum);
  space.fence();
  return sum;
}

TEST(Streams, HostStreamsCompleteTheirMarks) {
  auto& pool = test_runtime().streams();
  kodo::Stream& compute = pool.compute(0);
  kodo::Stream& comm = pool.communication(0);
  EXPECT_FALSE(compute.is_communication());
  EXPECT_TRUE(comm.is_communication());
  EXPECT_NE(&pool.compute(0), &pool.compute(1));
  EXPECT_EQ(&pool.compute(0), &pool.compute(pool.per_priority()));  // indices wrap

  Kokkos::View<int*> v("v", 100);
  fill_with_indices(compute.space(), v);
  const std::uint64_t m = compute.mark();
  comm.wait_for(compute);
  const int sum = sum_of(comm.space(), v);
  EXPECT_EQ(sum, 4950);
  compute.space().fence();
  EXPECT_GE(compute.reached(), m);
}

// A stream passes where Kokkos takes an execution-space instance: the kernel runs on it,
// and a mark made after it is reached once the kernel is done.
void fill_doubled(const kodo::Stream& stream, const Kokkos::View<int*>& v) {
  Kokkos::parallel_for(
      "fill", Kokkos::RangePolicy<kodo::ExecutionSpace>(stream, 0, v.extent(0)),
      KOKKOS_LAMBDA(int i) { v(i) = 2 * i; });
}

TEST(Streams, AStreamIsTheInstanceKernelsTake) {
  kodo::Stream& stream = test_runtime().streams().compute(0);
  Kokkos::View<int*> v("v", 100);
  fill_doubled(stream, v);
  const std::uint64_t m = stream.mark();
  const kodo::ExecutionSpace& space = stream;
  space.fence();
  EXPECT_GE(stream.reached(), m);
  EXPECT_EQ(sum_of(stream, v), 9900);
}

// A stream without completion counters (one work is only recorded on, as a step program's
// units are): its work runs on its instance, it has reached nothing and cannot mark.
TEST(Streams, AStreamWithoutCountersRunsWorkButCannotMark) {
  kodo::Stream stream(false, nullptr, nullptr);
  Kokkos::View<int*> v("v", 100);
  fill_with_indices(stream.space(), v);
  EXPECT_EQ(sum_of(stream.space(), v), 4950);
  EXPECT_EQ(stream.reached(), 0u);
  EXPECT_THROW(stream.mark(), kodo::Error);
}

// A unit that waits for its own device work through the runtime.
class Offloader : public kodo::WorkUnit<Offloader> {
 public:
  Offloader(const kodo::UnitInit<Offloader>& init, ManualSource* gate)
      : WorkUnit(init), gate_(gate), data_("data", 64) {}

  void start() {
    auto& rt = collection().runtime();
    kodo::Stream& s = rt.streams().compute(static_cast<std::size_t>(index().x));
    auto d = data_;
    Kokkos::parallel_for(
        "work", Kokkos::RangePolicy<kodo::ExecutionSpace>(s.space(), 0, 64),
        KOKKOS_LAMBDA(int i) { d(i) = 2 * i; });
    rt.when_done(s, [this] { kernel_done = true; });
    // And on a source that completes many polls later (before the kernel, on a GPU, or
    // after it): run() goes on until both are done.
    rt.when_done(*gate_, [this] { gate_done = true; });
  }

  bool kernel_done = false, gate_done = false;

 private:
  ManualSource* gate_;
  Kokkos::View<int*> data_;
};

TEST(CompletionEngine, RunWaitsForPendingDeviceWork) {
  auto& rt = test_runtime();
  // The gate completes only after the scheduler has polled it many times: run() must
  // keep going until then instead of declaring the job quiet.
  struct SlowGate : ManualSource {
    std::uint64_t reached() const override {
      if (++reads >= 50) done = issued;
      return done;
    }
  } gate;
  auto units =
      kodo::Collection<Offloader>::create(rt, {3, 1, 1}, static_cast<ManualSource*>(&gate));
  units.broadcast_local<&Offloader::start>();
  rt.run();
  units.for_each_local([](Offloader& u) {
    EXPECT_TRUE(u.kernel_done);
    EXPECT_TRUE(u.gate_done);
  });
}

// The porting guide's way to keep a code's `*this` kernels: the unit also derives from
// the code's own functor class and launches with that base as the functor (Kokkos copies
// the base alone), on a stream it then awaits.
struct Doubler {
  Kokkos::View<int*> data;
  KOKKOS_FUNCTION void operator()(int i) const { data(i) = 2 * i; }
};

class DoublingUnit : public kodo::WorkUnit<DoublingUnit>, public Doubler {
 public:
  explicit DoublingUnit(const kodo::UnitInit<DoublingUnit>& init)
      : WorkUnit(init), Doubler{Kokkos::View<int*>("data", 64)} {}

  void start() {
    auto& rt = collection().runtime();
    kodo::Stream& s = rt.streams().compute(static_cast<std::size_t>(index().x));
    Kokkos::parallel_for("double", Kokkos::RangePolicy<kodo::ExecutionSpace>(s, 0, 64),
                         static_cast<const Doubler&>(*this));
    rt.when_done(s, [this] { done = true; });
  }

  bool done = false;
};

TEST(CompletionEngine, AUnitLaunchesItsOwnFunctorBase) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<DoublingUnit>::create(rt, {2, 1, 1});
  units.broadcast_local<&DoublingUnit::start>();
  rt.run();
  units.for_each_local([](DoublingUnit& u) {
    EXPECT_TRUE(u.done);
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, u.data);
    for (int i = 0; i < 64; ++i) EXPECT_EQ(host(i), 2 * i);
  });
}

// A source standing in for a stream whose work finishes long after it was launched:
// run() must not return before it does, although no unit awaits it.
TEST(CompletionEngine, RunDrainsUnawaitedStreamWork) {
  auto& rt = test_runtime();
  kodo::Stream& s = rt.streams().compute(0);
  const std::uint64_t before = s.reached();
  rt.run();
  EXPECT_GT(s.reached(), before);  // the pool's streams were marked and reached
}

// Work that arrives late, on a rank that has already drained its streams, is drained
// again before run() returns (it may have launched device work nobody awaits).
class Latecomer : public kodo::WorkUnit<Latecomer> {
 public:
  explicit Latecomer(const kodo::UnitInit<Latecomer>& init) : WorkUnit(init) {}
  void delay_then_touch() {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    unit({0, 0, 0}).send<&Latecomer::touch>();
  }
  void touch() { reached_at_touch = collection().runtime().streams().compute(0).reached(); }
  std::uint64_t reached_at_touch = 0;
};

TEST(CompletionEngine, RunDrainsAgainAfterLateWork) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Latecomer>::create(rt, {rt.size(), 1, 1});
  const kodo::Index3 last{rt.size() - 1, 0, 0};
  if (units.owner(last) == rt.rank()) units[last].send<&Latecomer::delay_then_touch>();
  rt.run();
  if (rt.rank() == 0) {
    units.for_each_local([&](Latecomer& u) {
      if (u.index() == kodo::Index3{0, 0, 0}) {
        EXPECT_GT(rt.streams().compute(0).reached(), u.reached_at_touch);
      }
    });
  }
}

}  // namespace
