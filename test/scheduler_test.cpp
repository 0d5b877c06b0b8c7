// The scheduler (tasking/detail/scheduler.hpp) against bad input: calls from other ranks are
// checked against collection, unit and handler, large messages before their buffer is
// made, and a message nobody sent ends run() with an error, not a hang.

#include "component_units.hpp"
#include "expect_error.hpp"
#include "test_access.hpp"
#include "test_runtime.hpp"

#include <kodo/comm/detail/channel_end.hpp>
#include <kodo/comm/wire.hpp>

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

// The case of the review (issue 31): 200,000 forged link announcements grew a rank by
// 100 MB and the job went on. Announcements past a bound far above any program's
// channels are refused, naming the rank that sent them.
TEST(Scheduler, AnnouncedLinksAreBounded) {
  auto& rt = test_runtime();
  if (rt.size() < 2) GTEST_SKIP() << "needs two ranks";
  auto units = kodo::Collection<Tallied>::create(rt, {rt.size(), 1, 1});
  std::int64_t mine = -1;
  units.for_each_local([&](Tallied& u) { mine = units.shape().linear(u.index()); });
  ASSERT_GE(mine, 0);
  const int source = (rt.rank() + 1) % rt.size();
  std::int64_t theirs = -1;  // a unit the source holds
  for (std::int64_t l = 0; l < units.shape().size() && theirs < 0; ++l)
    if (units.owner(units.shape().delinear(l)) == source) theirs = l;
  ASSERT_GE(theirs, 0);
  auto& registry = kodo::detail::TestAccess::channels(rt);
  std::string refused;
  std::int32_t port = 0;
  for (; port < (1 << 24) && refused.empty(); ++port) {
    const kodo::detail::LinkAnnouncement a{{units.id(), theirs, mine, port}, 1u, 1u, false};
    try {
      kodo::detail::TestAccess::dispatch_from_wire(rt,
                                                   kodo::detail::announcement_message(a, source));
    } catch (const kodo::Error& e) {
      refused = e.what();
    }
  }
  EXPECT_NE(refused.find(kodo::detail::cat("rank ", source, " announced channel links past the ")),
            std::string::npos)
      << refused;
  EXPECT_GE(port, 1024 + 4096);  // never below what the units held here may need
  // The forged links go, so that later tests announce theirs.
  std::erase_if(registry.send_numbers, [&](const auto& e) { return e.first.collection == units.id(); });
  std::erase_if(registry.notes, [&](const auto& e) { return e.first.first.collection == units.id(); });
  rt.run();
}

}  // namespace
