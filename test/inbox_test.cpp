// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// An inbox (inbox.hpp): calls' values awaited by key in a unit's task, whether they came
// before the await or after, in any order; a key given twice; and a task awaiting a key
// nobody gives, reported with the key and then given it. Runs on any number of ranks (1, 2
// and 4 under ctest).

#include "expect_error.hpp"
#include "test_runtime.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

constexpr std::int64_t kSteps = 10;

// A ring of units: at each step a unit calls the next with a value of that step and awaits
// the previous unit's. Nothing else holds a caller back: it may be steps ahead.
class Relay : public kodo::WorkUnit<Relay> {
 public:
  explicit Relay(const kodo::UnitInit<Relay>& init) : WorkUnit(init) {}
  std::int64_t me() const { return index().x; }
  std::int64_t size() const { return collection().size(); }

  void give(std::int64_t step, std::int64_t value) { inbox_.put(step, value); }

  kodo::Task relay() {
    const kodo::Index3 next{(me() + 1) % size(), 0, 0};
    const std::int64_t previous = (me() + size() - 1) % size();
    unit(next).send<&Relay::give>(std::int64_t{0}, value_of(me(), 0));
    unit(next).send<&Relay::give>(std::int64_t{1}, value_of(me(), 1));
    // Out of order: step 1's value first.
    const auto [one, zero] = co_await kodo::when_all(inbox_.take(1), inbox_.take(0));
    got.push_back(zero == value_of(previous, 0));
    got.push_back(one == value_of(previous, 1));
    for (std::int64_t step = 2; step < kSteps; ++step) {
      unit(next).send<&Relay::give>(step, value_of(me(), step));
      if (step % 3 == 0) co_await when_done(streams().compute(0));  // callers get ahead
      const std::int64_t value = co_await inbox_.take(step);
      got.push_back(value == value_of(previous, step));
    }
    left = inbox_.size();
  }

  // A key held before the await beside one that comes later, awaited together.
  kodo::Task early_second() {
    inbox_.put(501, 1);
    unit({(me() + 1) % size(), 0, 0}).send<&Relay::give>(std::int64_t{500}, me());
    const auto [one, zero] = co_await kodo::when_all(inbox_.take(501), inbox_.take(500));
    pair_right = one == 1 && zero == (me() + size() - 1) % size();
  }

  kodo::Task await_unsent() {
    line = __LINE__ + 1;
    const std::int64_t value = co_await inbox_.take(1000 + me());
    late = value;
  }

  static std::int64_t value_of(std::int64_t unit, std::int64_t step) { return 100 * unit + step; }
  std::vector<bool> got;
  std::size_t left = 99;
  int line = 0;
  std::int64_t late = -1;
  bool pair_right = false;

 private:
  kodo::Inbox<std::int64_t, std::int64_t> inbox_;
};

TEST(Inbox, ValuesAreTakenByKeyWhenTheyCameEarlyOrLate) {
  auto& rt = test_runtime();
  auto relays = kodo::Collection<Relay>::create(rt, {5, 1, 1});
  relays.broadcast_local<&Relay::relay>();
  rt.run();
  relays.for_each_local([](const Relay& r) {
    EXPECT_EQ(r.got, std::vector<bool>(kSteps, true)) << "unit " << r.me();
    EXPECT_EQ(r.left, 0u);
  });
}

TEST(Inbox, AHeldKeyAndALaterOneAreAwaitedTogether) {
  auto& rt = test_runtime();
  auto relays = kodo::Collection<Relay>::create(rt, {3, 1, 1});
  relays.broadcast_local<&Relay::early_second>();
  rt.run();
  relays.for_each_local([](const Relay& r) { EXPECT_TRUE(r.pair_right) << "unit " << r.me(); });
}

TEST(Inbox, AMovedFromInboxRefusesUse) {
  kodo::Inbox<int, int> a;
  a.put(1, 10);
  kodo::Inbox<int, int> b = std::move(a);
  EXPECT_TRUE(b.holds(1));
  EXPECT_ERROR(a.put(2, 20), "an Inbox was used after it was moved from");
  EXPECT_ERROR(a.size(), "an Inbox was used after it was moved from");
}

TEST(Inbox, AKeyIsGivenOnce) {
  kodo::Inbox<int, double> inbox;
  inbox.put(3, 1.5);
  EXPECT_TRUE(inbox.holds(3));
  EXPECT_FALSE(inbox.holds(4));
  EXPECT_EQ(inbox.size(), 1u);
  EXPECT_ERROR(inbox.put(3, 2.5), "an inbox was given key 3 twice before a task took it");
}

TEST(Inbox, ATaskAwaitingAKeyNobodyGivesIsReportedWithTheKey) {
  auto& rt = test_runtime();
  auto relays = kodo::Collection<Relay>::create(rt, {2, 1, 1});
  relays.broadcast_local<&Relay::await_unsent>();
  const std::string error = error_of([&] { rt.run(); });
  EXPECT_NE(error.find("the job went quiet with"), std::string::npos) << error;
  relays.for_each_local([&](const Relay& r) {
    const std::string expected = "unit (" + std::to_string(r.me()) + ",0,0) of collection " +
                                 std::to_string(relays.id()) +
                                 ": its task awaits a value put in a kodo::Inbox (a call's "
                                 "arrival) under key " +
                                 std::to_string(1000 + r.me()) + " at " + std::string(__FILE__) +
                                 ":" + std::to_string(r.line);
    EXPECT_NE(error.find(expected), std::string::npos) << error;
  });
  // Given the keys (by rank 0's main program), the tasks end.
  if (rt.rank() == 0)
    for (std::int64_t u = 0; u < 2; ++u)
      relays[{u, 0, 0}].send<&Relay::give>(1000 + u, std::int64_t{7});
  rt.run();
  relays.for_each_local([](const Relay& r) { EXPECT_EQ(r.late, 7); });
}

}  // namespace
