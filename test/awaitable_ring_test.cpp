// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A receive ring whose transfers tasks await by number (awaitable_ring.hpp): a sender many
// steps ahead, transfers awaited out of order, and each transfer's data where its number
// says. Runs on any number of ranks (1, 2 and 4 under ctest: the pair on one rank or two).

#include "test_runtime.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

using Rows = Kokkos::View<double*, Kokkos::HostSpace>;
constexpr std::uint64_t kSteps = 12;

class Pair : public kodo::WorkUnit<Pair> {
 public:
  explicit Pair(const kodo::UnitInit<Pair>& init)
      : WorkUnit(init), link_(open_channel(streams().communication(0), {1 - init.index.x, 0, 0})) {
    if (index().x == 1) rows_ = kodo::AwaitableRing<Rows>(link_, {Rows("a", 3), Rows("b", 3)});
  }

  // Unit 0 sends every step at once (its sends wait for free buffers); unit 1 awaits the
  // first two out of order, then one step at a time, checking each.
  kodo::Task exchange() {
    if (index().x == 0) {
      for (std::uint64_t k = 0; k < kSteps; ++k) {
        Rows out("out", 3);
        for (int i = 0; i < 3; ++i) out(i) = static_cast<double>(10 * k + i);
        link_.send(out, kodo::data_ready);
      }
      co_return;
    }
    const auto [second, first] = co_await kodo::when_all(rows_.transfer(1), rows_.transfer(0));
    check(first, 0);
    check(second, 1);
    rows_.release(0);
    rows_.release(1);
    for (std::uint64_t k = 2; k < kSteps; ++k) {
      co_await when_done(streams().compute(0));  // the sender gets ahead meanwhile
      check(co_await rows_.transfer(k), k);
      rows_.release(k);
    }
  }

  std::vector<std::uint64_t> seen;
  int wrong = 0;

 private:
  void check(const kodo::Arrival<Rows>& a, std::uint64_t k) {
    seen.push_back(a.transfer);
    if (a.transfer != k || a.count != 3) ++wrong;
    for (int i = 0; i < 3; ++i)
      if (a.view(i) != static_cast<double>(10 * k + i)) ++wrong;
  }
  kodo::Channel link_;
  kodo::AwaitableRing<Rows> rows_;
};

TEST(AwaitableRings, TransfersAreAwaitedByNumberInAnyOrder) {
  auto& rt = test_runtime();
  auto pairs = kodo::Collection<Pair>::create(rt, {2, 1, 1});
  pairs.broadcast_local<&Pair::exchange>();
  rt.run();
  pairs.for_each_local([](const Pair& p) {
    if (p.index().x != 1) return;
    std::vector<std::uint64_t> expected{0, 1};
    for (std::uint64_t k = 2; k < kSteps; ++k) expected.push_back(k);
    EXPECT_EQ(p.seen, expected);
    EXPECT_EQ(p.wrong, 0);
  });
}

}  // namespace
