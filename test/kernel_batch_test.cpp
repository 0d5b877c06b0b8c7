// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Kernel batches (kernel_batch.hpp): the kernels of several units' batches launched as
// one per functor type give each unit what its own kernels would have (ranges of one to
// three dimensions, with work tags or none); work before and after a launch on a unit's
// stream stays before and after (lap after lap, with units on several streams); a batch
// larger than one launch holds, an empty one is done at once, one launched twice is
// refused; tasks and entry methods both launch; a functor written in the call is moved in,
// and no launch copies a functor. Runs on any number of ranks (1, 2 and 4 under ctest).

#include "expect_error.hpp"
#include "test_access.hpp"
#include "test_runtime.hpp"
#include "test_views.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace {

using Field = Kokkos::View<std::int64_t*, kodo::ExecutionSpace::memory_space>;

// Writes `base + i` at i, in a range of indices.
struct Fill {
  Field out;
  std::int64_t base;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { out(i) = base + i; }
};

// Adds one to every point, from a functor too large for many in one launch.
struct AddOneLarge {
  Field out;
  std::int64_t padding[96] = {};  // 768 bytes: a few kernels per launch
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { out(i) += 1 + padding[0]; }
};

// Doubles every point: a kernel a unit launches itself.
void double_all(const kodo::Stream& stream, const Field& f) {
  Kokkos::parallel_for(
      "test::own", Kokkos::RangePolicy<kodo::ExecutionSpace>(stream.space(), 0, f.extent(0)),
      KOKKOS_LAMBDA(std::int64_t i) { f(i) *= 2; });
}

std::vector<std::int64_t> on_host(const Field& f) {
  auto m = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, f);
  return std::vector<std::int64_t>(m.data(), m.data() + m.extent(0));
}

constexpr std::int64_t kPoints = 40;

class Filler : public kodo::WorkUnit<Filler> {
 public:
  explicit Filler(const kodo::UnitInit<Filler>& init)
      : WorkUnit(init),
        stream_(&streams().compute(static_cast<std::size_t>(linear()))),
        field_("field", kPoints) {}

  // Steps of: fill the two halves (one functor type, two kernels), add one everywhere
  // twice (another type, two kernels of one batch may not depend on each other: they
  // touch the halves), then once more as a kernel of the unit's own on the stream.
  kodo::Task steps(int count) {
    for (int s = 0; s < count; ++s) {
      kodo::KernelBatch fills(*stream_);
      fills.parallel_for("test::fill", 0, kPoints / 2, Fill{field_, base(s)});
      // (the second half with a policy of its own index type)
      fills.parallel_for("test::fill",
                         Kokkos::RangePolicy<kodo::ExecutionSpace, Kokkos::IndexType<int>>(kPoints /
                                                                                               2,
                                                                                           kPoints),
                         Fill{field_, base(s)});
      co_await launch(fills);
      EXPECT_TRUE(fills.empty());
      kodo::KernelBatch adds(*stream_);
      for (std::int64_t half = 0; half < 2; ++half)
        adds.parallel_for("test::add", half * kPoints / 2, (half + 1) * kPoints / 2,
                          AddOneLarge{field_, {}});
      co_await launch(adds);
      double_all(*stream_, field_);
      co_await launch(empty_);  // done at once
      ++steps_done;
    }
    co_await when_done(*stream_);
    values = on_host(field_);
  }

  // The same first step from an entry method, its callback form.
  void step_by_callback() {
    auto fills = std::make_shared<kodo::KernelBatch>(*stream_);
    fills->parallel_for("test::fill", 0, kPoints, Fill{field_, base(0)});
    launch(*fills, [this, fills] {
      when_done(*stream_, [this] {
        values = on_host(field_);
        ++steps_done;
      });
    });
  }

  void launch_twice() {
    kodo::KernelBatch fills(*stream_);
    fills.parallel_for("test::fill", 0, kPoints, Fill{field_, 0});
    launch(fills, [] {});
    refused = "";
    try {
      launch(fills, [] {});
    } catch (const kodo::Error& e) {
      refused = e.what();
    }
    // It runs once the turn ends: the kernels must not outlive the batch.
    kodo::detail::TestAccess::batches(test_runtime()).drop();
  }

  std::int64_t base(int step) const { return 1000 * linear() + 100 * step; }
  std::int64_t linear() const { return collection().shape().linear(index()); }
  std::vector<std::int64_t> values;
  int steps_done = 0;
  std::string refused;

 private:
  kodo::Stream* stream_;
  Field field_;
  kodo::KernelBatch empty_{*stream_};
};

TEST(KernelBatch, UnitsKernelsLaunchedTogetherGiveEachUnitItsOwnResult) {
  kodo::Runtime& rt = test_runtime();
  auto units = kodo::Collection<Filler>::create(rt, {3, 2, 1});
  const auto& batches = kodo::detail::TestAccess::batches(rt);
  const std::size_t kernels_before = batches.kernels(), launches_before = batches.launches();
  constexpr int kSteps = 3;
  units.broadcast_local<&Filler::steps>(kSteps);
  rt.run();
  std::size_t local = 0;
  units.for_each_local([&](Filler& u) {
    ++local;
    EXPECT_EQ(u.steps_done, kSteps);
    ASSERT_EQ(u.values.size(), static_cast<std::size_t>(kPoints));
    for (std::int64_t i = 0; i < kPoints; ++i)
      EXPECT_EQ(u.values[static_cast<std::size_t>(i)], 2 * (u.base(kSteps - 1) + i + 1))
          << "unit " << u.linear() << ", point " << i;
  });
  // Four kernels a unit and step, never more launches than kernels; with several units
  // on the rank, fewer (the turn's batches went out together).
  EXPECT_EQ(batches.kernels() - kernels_before, 4 * local * kSteps);
  const std::size_t launches = batches.launches() - launches_before;
  EXPECT_LE(launches, batches.kernels() - kernels_before);
  if (local > 1) {
    EXPECT_LT(launches, 4 * local * kSteps);
  }
}

TEST(KernelBatch, AnEntryMethodLaunchesWithACallback) {
  kodo::Runtime& rt = test_runtime();
  auto units = kodo::Collection<Filler>::create(rt, {4, 1, 1});
  units.broadcast_local<&Filler::step_by_callback>();
  rt.run();
  units.for_each_local([&](Filler& u) {
    EXPECT_EQ(u.steps_done, 1);
    ASSERT_EQ(u.values.size(), static_cast<std::size_t>(kPoints));
    for (std::int64_t i = 0; i < kPoints; ++i)
      EXPECT_EQ(u.values[static_cast<std::size_t>(i)], u.base(0) + i);
  });
}

// Lap after lap, each unit writes slowly on its own stream, a batch (every unit's kernels
// as one launch, on one unit's stream) copies what it wrote, and the unit reads the copy on
// its stream again: the batch's stream waits for the units' streams and they for it, inside
// a recorded turn (GPU) as outside. A missing order shows as a wrong read.
struct CopyFirst {
  Field from, to;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { to(i) = from(i); }
};

class Relay : public kodo::WorkUnit<Relay> {
 public:
  explicit Relay(const kodo::UnitInit<Relay>& init)
      : WorkUnit(init), stream_(&streams().compute(static_cast<std::size_t>(linear()))) {}

  kodo::Task laps(int count) {
    for (int lap = 1; lap <= count; ++lap) {
      const std::int64_t expected = 1000 * linear() + lap;
      write_slowly(stream_->space(), written_, expected);
      kodo::KernelBatch copies(*stream_);
      copies.parallel_for("test::copy", 0, 1, CopyFirst{written_, copied_});
      co_await launch(copies);
      count_if_not(stream_->space(), copied_, expected, wrong_);
    }
    co_await when_done(*stream_);
    wrong_reads = on_host(wrong_)[0];
    last_copy = on_host(copied_)[0];
  }

  std::int64_t linear() const { return collection().shape().linear(index()); }
  std::int64_t wrong_reads = -1, last_copy = -1;

 private:
  kodo::Stream* stream_;
  Field written_{"written", 1}, copied_{"copied", 1}, wrong_{"wrong reads", 1};
};

TEST(KernelBatch, WorkBeforeAndAfterALaunchTogetherStaysInOrderOnEveryUnitsStream) {
  kodo::Runtime& rt = test_runtime();
  auto units = kodo::Collection<Relay>::create(rt, {6, 1, 1});
  const int laps = 5;
  units.broadcast_local<&Relay::laps>(laps);
  rt.run();
  units.for_each_local([&](const Relay& u) {
    EXPECT_EQ(u.wrong_reads, 0) << "unit " << u.linear();
    EXPECT_EQ(u.last_copy, 1000 * u.linear() + laps) << "unit " << u.linear();
  });
}

TEST(KernelBatch, ABatchLaunchedTwiceBeforeItRunsIsRefused) {
  kodo::Runtime& rt = test_runtime();
  auto units = kodo::Collection<Filler>::create(rt, {1, 1, 1});
  units.broadcast_local<&Filler::launch_twice>();
  rt.run();
  units.for_each_local([&](Filler& u) {
    EXPECT_NE(u.refused.find("launched twice"), std::string::npos) << u.refused;
  });
}

// A range that ends before it begins is refused where it is given, naming the kernel
// (Kokkos' RangePolicy aborts the program on it).
struct Nothing {
  KOKKOS_FUNCTION void operator()(std::int64_t) const {}
};

TEST(KernelBatch, ARangeThatEndsBeforeItBeginsIsRefused) {
  kodo::KernelBatch batch(test_runtime().streams().compute(0));
  EXPECT_ERROR(batch.parallel_for("backwards", 10, 4, Nothing{}),
               "kodo::KernelBatch::parallel_for(\"backwards\"): the range ends (4) before it "
               "begins (10)");
  EXPECT_TRUE(batch.empty());
  batch.parallel_for("empty", 4, 4, Nothing{});  // an empty range is a kernel of no points
  EXPECT_FALSE(batch.empty());
}

// Kernels as a Kokkos code writes them: MDRangePolicies of ranks 2 and 3, with work tags
// and without, each inner direction, and a tagged RangePolicy, batched by several units;
// each point of each box is written once, and nothing outside the boxes.
using Cube = Kokkos::View<std::int64_t***, kodo::ExecutionSpace::memory_space>;
using Sheet = Kokkos::View<std::int64_t**, kodo::ExecutionSpace::memory_space>;
struct Inner {};
struct Face {};
struct Line {};

KOKKOS_FUNCTION std::int64_t code(std::int64_t base, int x, int y, int z) {
  return base + 100 * x + 10 * y + z;
}

struct CubeWrites {
  Cube cube;
  std::int64_t base;
  KOKKOS_FUNCTION void operator()(Inner, int x, int y, int z) const {
    cube(x, y, z) = code(base, x, y, z);
  }
  KOKKOS_FUNCTION void operator()(Face, int x, int y, int z) const {
    cube(x, y, z) = -code(base, x, y, z);
  }
};
struct SheetWrite {
  Sheet sheet;
  std::int64_t base;
  KOKKOS_FUNCTION void operator()(std::int64_t x, std::int64_t y) const {
    sheet(x, y) = code(base, static_cast<int>(x), static_cast<int>(y), 0);
  }
};
struct LineWrite {
  Sheet sheet;
  std::int64_t base;
  KOKKOS_FUNCTION void operator()(Line, int i) const { sheet(i, 6) = base + i; }
};

class Boxes : public kodo::WorkUnit<Boxes> {
 public:
  explicit Boxes(const kodo::UnitInit<Boxes>& init)
      : WorkUnit(init),
        stream_(&streams().compute(local_slot())),
        cube_("cube", 4, 3, 5),
        sheet_("sheet", 5, 7) {}

  kodo::Task fill() {
    Kokkos::deep_copy(stream_->space(), cube_, -1);
    Kokkos::deep_copy(stream_->space(), sheet_, -1);
    const std::int64_t base = 1000 * collection().shape().linear(index());
    using Space = kodo::ExecutionSpace;
    kodo::KernelBatch batch(*stream_);
    batch.parallel_for("test::inner",
                       Kokkos::MDRangePolicy<Space, Kokkos::Rank<3>, Inner, Kokkos::IndexType<int>>(
                           {1, 1, 1}, {3, 2, 4}),
                       CubeWrites{cube_, base});
    batch.parallel_for("test::face",
                       Kokkos::MDRangePolicy<Space, Kokkos::Rank<3>, Face, Kokkos::IndexType<int>>(
                           {0, 0, 0}, {1, 3, 5}),
                       CubeWrites{cube_, base});
    batch.parallel_for("test::none",
                       Kokkos::MDRangePolicy<Space, Kokkos::Rank<3>, Face, Kokkos::IndexType<int>>(
                           {2, 0, 0}, {2, 3, 5}),  // an empty box
                       CubeWrites{cube_, base});
    using Right = Kokkos::Rank<2, Kokkos::Iterate::Right, Kokkos::Iterate::Right>;
    using Left = Kokkos::Rank<2, Kokkos::Iterate::Left, Kokkos::Iterate::Left>;
    batch.parallel_for("test::sheet", Kokkos::MDRangePolicy<Space, Right>({0, 0}, {2, 6}),
                       SheetWrite{sheet_, base});
    batch.parallel_for("test::sheet", Kokkos::MDRangePolicy<Space, Left>({2, 0}, {5, 6}),
                       SheetWrite{sheet_, base});
    batch.parallel_for("test::line", Kokkos::RangePolicy<Space, Line, Kokkos::IndexType<int>>(1, 4),
                       LineWrite{sheet_, base});
    co_await launch(batch);
    co_await when_done(*stream_);
    cube = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, cube_);
    sheet = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, sheet_);
    filled = base;
  }

  Cube::host_mirror_type cube;
  Sheet::host_mirror_type sheet;
  std::int64_t filled = -1;

 private:
  kodo::Stream* stream_;
  Cube cube_;
  Sheet sheet_;
};

TEST(KernelBatch, RangesOfSeveralDimensionsAndWorkTagsAsKokkosWouldRunThem) {
  kodo::Runtime& rt = test_runtime();
  auto units = kodo::Collection<Boxes>::create(rt, {3, 2, 1});
  units.broadcast_local<&Boxes::fill>();
  rt.run();
  units.for_each_local([&](const Boxes& u) {
    const std::int64_t base = u.filled;
    ASSERT_GE(base, 0);
    for (int x = 0; x < 4; ++x)
      for (int y = 0; y < 3; ++y)
        for (int z = 0; z < 5; ++z) {
          const bool inner = x >= 1 && x < 3 && y == 1 && z >= 1 && z < 4;
          const std::int64_t expected = x == 0  ? -code(base, x, y, z)
                                        : inner ? code(base, x, y, z)
                                                : -1;
          EXPECT_EQ(u.cube(x, y, z), expected) << x << " " << y << " " << z;
        }
    for (int x = 0; x < 5; ++x)
      for (int y = 0; y < 7; ++y) {
        const std::int64_t expected = y < 6               ? code(base, x, y, 0)
                                      : (x >= 1 && x < 4) ? base + x
                                                          : -1;
        EXPECT_EQ(u.sheet(x, y), expected) << x << " " << y;
      }
  });
}

// Copies of a functor made on the host: a copy of a CUDA __host__ __device__ lambda
// allocates, and each copy counts its views' references.
int host_copies = 0;
struct CountedFill {
  Field out;
  std::int64_t base;
  CountedFill(Field o, std::int64_t b) : out(std::move(o)), base(b) {}
  KOKKOS_FUNCTION CountedFill(const CountedFill& o) : out(o.out), base(o.base) {
    KOKKOS_IF_ON_HOST((++host_copies;))
  }
  CountedFill(CountedFill&&) = default;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { out(i) = base + i; }
};

class Copies : public kodo::WorkUnit<Copies> {
 public:
  explicit Copies(const kodo::UnitInit<Copies>& init)
      : WorkUnit(init), stream_(&streams().compute(local_slot())), field_("field", kPoints) {}

  // Two kernels written in the call (moved in), one passed by name (copied once); with
  // `alone`, only the first, launched by itself.
  kodo::Task fill(bool alone) {
    const std::int64_t base = 1000 * collection().shape().linear(index());
    kodo::KernelBatch batch(*stream_);
    batch.parallel_for("test::fill", 0, kPoints / 4, CountedFill(field_, base));
    if (!alone) {
      batch.parallel_for("test::fill",
                         Kokkos::RangePolicy<kodo::ExecutionSpace>(kPoints / 4, kPoints / 2),
                         CountedFill(field_, base));
      const CountedFill named(field_, base);
      batch.parallel_for("test::fill", kPoints / 2, kPoints, named);
    }
    co_await launch(batch);
    co_await when_done(*stream_);
    values = on_host(field_);
    expected = base;
  }

  std::vector<std::int64_t> values;
  std::int64_t expected = -1;

 private:
  kodo::Stream* stream_;
  Field field_;
};

TEST(KernelBatch, AFunctorWrittenInTheCallIsMovedInAndNoLaunchCopiesIt) {
  kodo::Runtime& rt = test_runtime();
  for (const bool alone : {true, false}) {
    // Alone: one unit, one kernel, launched with its own policy; else four units' kernels
    // of one functor type as one launch.
    auto units = kodo::Collection<Copies>::create(rt, {alone ? 1 : 4, 1, 1});
    host_copies = 0;
    units.broadcast_local<&Copies::fill>(alone);
    rt.run();
    int local = 0;
    units.for_each_local([&](const Copies& u) {
      ++local;
      ASSERT_EQ(u.values.size(), static_cast<std::size_t>(kPoints));
      const std::int64_t filled = alone ? kPoints / 4 : kPoints;
      for (std::int64_t i = 0; i < kPoints; ++i)
        EXPECT_EQ(u.values[static_cast<std::size_t>(i)], i < filled ? u.expected + i : 0) << i;
    });
    EXPECT_EQ(host_copies, alone ? 0 : local) << "alone: " << alone;
  }
}

}  // namespace
