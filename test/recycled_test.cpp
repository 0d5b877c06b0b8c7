// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Recycled storage (core/detail/recycled.hpp): a block given back is taken again, at most
// a bounded number are kept, containers and std::function targets use it; and a step of
// units written as the porting guide teaches (a task per unit, device views through
// channels, a kernel batch, when_done, all_reduce) makes no heap allocation once the
// first steps have run but its reduction contribution's bytes. Runs on any number of ranks (1, 2
// and 4 under ctest); the count of allocations is asserted on one rank (messages between ranks are
// serialized).

#include <kodo/core/detail/recycled.hpp>

#include "test_runtime.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <vector>

// Every operator new of the test process, counted on the thread that asks while a test
// asks (the scheduler's: OpenMP's threads, if any, are not counted). The replacements
// allocate with malloc and free with free, which GCC cannot tell from a mismatch.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
namespace {
thread_local bool counting = false;
thread_local std::uint64_t allocations = 0;
}  // namespace

// Every form but the aligned ones (left to the library, which pairs them itself), so
// that each block is freed by the form that made it (AddressSanitizer checks). Host code
// only: a GPU compiler's device pass takes these for device functions, which cannot throw.
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
void* operator new(std::size_t bytes) {
  if (counting) ++allocations;
  if (void* p = std::malloc(bytes != 0 ? bytes : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t bytes) { return operator new(bytes); }
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  if (counting) ++allocations;
  return std::malloc(bytes != 0 ? bytes : 1);
}
void* operator new[](std::size_t bytes, const std::nothrow_t& tag) noexcept {
  return operator new(bytes, tag);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#endif

namespace {

using kodo::detail::RecycledStorage;

TEST(Recycled, ABlockGivenBackIsTakenAgainUpToABound) {
  using Storage = RecycledStorage<128>;
  EXPECT_EQ(Storage::kKept, 1024u);  // 256 KiB of 128-byte blocks, at most 1024
  void* first = Storage::take();
  Storage::give(first);
  EXPECT_EQ(Storage::take(), first);  // the last given back, first
  std::vector<void*> blocks{first};
  while (blocks.size() < Storage::kKept + 10) blocks.push_back(Storage::take());
  const std::size_t before = Storage::kept();
  for (void* p : blocks) Storage::give(p);
  EXPECT_EQ(Storage::kept(), Storage::kKept);  // the rest went back to the heap
  EXPECT_LE(before, Storage::kKept);
  const std::set<void*> given(blocks.begin(), blocks.end());
  for (std::size_t i = 0; i < Storage::kKept; ++i) {
    blocks[i] = Storage::take();
    EXPECT_EQ(given.count(blocks[i]), 1u);
  }
  for (std::size_t i = 0; i < Storage::kKept; ++i) Storage::give(blocks[i]);
}

TEST(Recycled, ContainersAndFunctionsTakeTheirStorageBack) {
  kodo::detail::RecycledDeque<std::string> queue;
  kodo::detail::RecycledMap<int, std::string> map;
  std::vector<std::function<int(int)>> functions;
  auto use = [&] {
    for (int i = 0; i < 100; ++i) {
      queue.push_back(std::to_string(i));
      map.emplace(i, "x");
      const std::int64_t big[4] = {i, i, i, i};  // beyond std::function's own room
      functions.push_back(kodo::detail::recycled([big](int k) { return k + int(big[3]); }));
    }
    int sum = 0;
    for (auto& f : functions) sum += f(1);
    EXPECT_EQ(sum, 100 + 99 * 100 / 2);
    while (!queue.empty()) queue.pop_front();
    map.clear();
    functions.clear();
  };
  use();
  functions.reserve(100);
  counting = true;
  allocations = 0;
  use();  // the strings fit their own room; the rest takes what the first round gave back
  counting = false;
  EXPECT_EQ(allocations, 0u);
}

// A ring of units, each step: a kernel batch on a device view, the view sent to the right
// neighbour through a channel and the left one's received, the device work awaited, and
// a sum reduced.
using Field = Kokkos::View<double*, kodo::ExecutionSpace::memory_space>;

struct AddOne {
  Field f;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { f(i) += 1; }
};

class Stepper : public kodo::WorkUnit<Stepper> {
 public:
  explicit Stepper(const kodo::UnitInit<Stepper>& init)
      : WorkUnit(init),
        stream_(&streams().compute(local_slot())),
        left_(open_channel(streams().communication(0), neighbour(-1))),
        right_(open_channel(streams().communication(0), neighbour(1))),
        mine_("mine", 64),
        from_left_("from_left", 64) {}

  kodo::Task steps(int count, int counted_from) {
    kodo::KernelBatch batch(*stream_);
    for (int step = 0; step < count; ++step) {
      if (step == counted_from && linear() == 0) {
        counting = true;
        allocations = 0;
      }
      batch.parallel_for("test::add", 0, 64, AddOne{mine_});
      co_await launch(batch);
      right_.send(mine_);
      co_await kodo::when_all(kodo::receive(left_, from_left_));
      co_await when_done(*stream_);
      const kodo::Reduced<double> sum = co_await all_reduce(1.0, kodo::Sum{});
      total += sum.value;
    }
    if (linear() == 0) {
      counting = false;
      counted = allocations;
    }
  }

  double total = 0;
  std::optional<std::uint64_t> counted;  // unit 0's

 private:
  std::int64_t linear() const { return collection().shape().linear(index()); }
  kodo::Index3 neighbour(std::int64_t side) const {
    const std::int64_t n = collection().size();
    return collection().shape().delinear((linear() + side + n) % n);
  }

  kodo::Stream* stream_;
  kodo::Channel left_, right_;
  Field mine_, from_left_;
};

TEST(Recycled, AStepOfTasksAllocatesOnlyItsContributionOnceWarm) {
  kodo::Runtime& rt = test_runtime();
  auto units = kodo::Collection<Stepper>::create(rt, {8, 1, 1});
  constexpr int kSteps = 40, kCountedFrom = 10;
  units.broadcast_local<&Stepper::steps>(kSteps, kCountedFrom);
  rt.run();
  units.for_each_local([&](const Stepper& u) { EXPECT_EQ(u.total, 8.0 * kSteps); });
  if (rt.size() > 1) return;  // (messages between ranks are bytes, made per message)
  // What is left: each contribution's bytes (kodo::Bytes, a std::vector of the default
  // allocator), one a unit-step (a unit-step made 33 allocations before), and a few
  // containers' growth once, which depends on what ran before in the process.
  const std::uint64_t most = 8 * (kSteps - kCountedFrom) + 8;
  int counters = 0;
  units.for_each_local([&](const Stepper& u) {
    if (!u.counted) return;
    ++counters;
    EXPECT_LE(*u.counted, most) << "heap allocations in steps " << kCountedFrom << " to " << kSteps;
  });
  EXPECT_EQ(counters, 1);
}

}  // namespace
