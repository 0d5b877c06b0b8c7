// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The scheduler (tasking/scheduling/detail/scheduler.hpp) against bad input: calls from other ranks
// are checked against collection, unit and handler, large messages before their buffer is made, and
// a message nobody sent ends run() with an error, not a hang.

#include "component_units.hpp"
#include "expect_error.hpp"
#include "test_access.hpp"
#include "test_runtime.hpp"

#include <kodo/comm/detail/wire.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

using component_units::Tallied;
using component_units::TallyMax;
using component_units::TallySum;
using component_units::Unrelated;
using component_units::UnrelatedSum;
using kodo::detail::MessageHeader;
using kodo::detail::MessageKind;

TEST(Scheduler, CallsFromOtherRanksAreCheckedAgainstCollectionUnitAndHandler) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Tallied>::create(rt, {3, 1, 1});
  auto others = kodo::Collection<Unrelated>::create(rt, {1, 1, 1});
  const int source = rt.size() > 1 ? (rt.rank() + 1) % rt.size() : 0;
  auto call = [&](std::uint32_t collection, std::uint64_t handler, std::int64_t target) {
    kodo::detail::Message m;
    m.header = {MessageKind::invoke, collection, handler, target, source};
    kodo::detail::Entry<Tallied, &Tallied::total>::serialize(m, std::int64_t{7});
    kodo::detail::TestAccess::dispatch_from_wire(rt, std::move(m));
  };
  const auto total = kodo::detail::Entry<Tallied, &Tallied::total>::id;
  const auto foreign = kodo::detail::Entry<Unrelated, &Unrelated::total>::id;
  EXPECT_ERROR(call(1000, total, 0), "field collection");
  EXPECT_ERROR(call(units.id(), total, 3), "field target");
  std::int64_t mine = -1;
  units.for_each_local([&](Tallied& u) { mine = units.shape().linear(u.index()); });
  if (mine < 0) EXPECT_ERROR(call(units.id(), total, 0), "does not hold");
  if (rt.rank() == 0) EXPECT_ERROR(call(others.id(), total, 0), "another unit type");
  if (mine >= 0) {
    EXPECT_ERROR(call(units.id(), foreign, mine), "another unit type");
    call(units.id(), total, mine);
    units.for_each_local([&](Tallied& u) {
      if (units.shape().linear(u.index()) == mine) {
        EXPECT_EQ(u.totals, std::vector<std::int64_t>{7});
      }
    });
  }
  rt.run();
}

TEST(Scheduler, LargeMessagesAreCheckedBeforeTheirBufferIsMade) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Tallied>::create(rt, {1, 1, 1});
  const int source = rt.size() > 1 ? (rt.rank() + 1) % rt.size() : 0;
  if (source == rt.rank()) return rt.run();  // one rank: no other rank to pose as
  const std::size_t huge = std::size_t{1} << 29;
  const auto entry = kodo::detail::Entry<Tallied, &Tallied::total>::id;
  using kodo::detail::TestAccess;
  EXPECT_ERROR(TestAccess::announce_rendezvous(rt, {MessageKind::invoke, 1000, entry, 0, source},
                                               huge),
               "field collection");
  EXPECT_ERROR(TestAccess::announce_rendezvous(
                   rt, {MessageKind::invoke, units.id(), TallySum::id, 0, source}, huge),
               (rt.rank() == 0 ? "where an entry method belongs" : "does not hold"));
  EXPECT_ERROR(TestAccess::announce_rendezvous(
                   rt, {MessageKind::reduction_partial, units.id(), TallySum::id, 0, source}, huge),
               "carries 536870912 bytes");
  EXPECT_ERROR(TestAccess::announce_rendezvous(rt,
                                               {MessageKind::invoke, units.id(), entry, 0, source},
                                               std::size_t{1} << 31),
               "bound");
  rt.run();
}

TEST(Scheduler, AMessageNobodySentEndsRunWithAnErrorNotAHang) {
  auto& rt = test_runtime();
  kodo::detail::TestAccess::inject_uncounted(rt, [] {});
  EXPECT_ERROR(rt.run(), "more than its ranks sent");
  // The counters stay off by one for the rest of the process: put them right.
  kodo::detail::TestAccess::count_sent(rt);
  rt.run();
}

}  // namespace
