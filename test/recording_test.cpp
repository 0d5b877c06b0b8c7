// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Recorded turns (recording.hpp). On the host backend a recording only groups a turn's
// work (KODO_RECORD=on): these tests check what that grouping implies (same-rank
// transfers handed over once the turn's work is launched, a fence ending the turn's
// recording, values equal to an unrecorded run, orders between streams given and given
// again, a turn's copies beside its other work on a GPU) and the report. ctest runs this
// binary with KODO_RECORD unset and =on, on 1, 2 and 4 ranks.

#include "test_access.hpp"
#include "test_runtime.hpp"
#include "test_views.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

bool recording_asked() {
  const char* v = std::getenv("KODO_RECORD");
  return v && std::string_view(v) == "on";
}

TEST(Recording, TheReportSaysWhetherTheRankRecordsAndWhy) {
  const kodo::RecordingReport r = test_runtime().recording();
  if (!kodo::host_build) GTEST_SKIP() << "GPU builds: checked on the device machine";
  if (recording_asked()) {
    EXPECT_TRUE(r.on);
    EXPECT_TRUE(r.off_because.empty()) << r.off_because;
  } else {
    EXPECT_FALSE(r.on);
    EXPECT_NE(r.off_because.find("host backend"), std::string::npos) << r.off_because;
    EXPECT_EQ(r.turns, 0u);
  }
}

// A chain of units passing a count along: each adds its index and sends it on over a
// channel, in device views (host views on the host backend), `laps` times round a ring.
// A transfer between units of one rank reaches its receiver in a later turn than its
// send when turns are recorded: the count must come out the same.
using Count = Kokkos::View<std::int64_t[1], kodo::ExecutionSpace::memory_space>;

// A unit's place in the ring of its collection's units, and the unit `i` places along.
template <class U>
std::int64_t place(const U& unit) {
  return unit.collection().shape().linear(unit.index());
}
template <class U>
kodo::Index3 at_place(const U& unit, std::int64_t i) {
  const std::int64_t n = unit.collection().size();
  return unit.collection().shape().delinear((i + n) % n);
}

class Relay : public kodo::WorkUnit<Relay> {
 public:
  explicit Relay(const kodo::UnitInit<Relay>& init)
      : WorkUnit(init),
        stream_(&streams().compute(static_cast<std::size_t>(me()))),
        next_(open_channel(*stream_, at(me() + 1))),
        previous_(open_channel(*stream_, at(me() - 1))) {}

  kodo::Task pass(int laps, bool fence_each_lap) {
    if (me() == 0) next_.send(out_);  // zero, to start
    for (int lap = 0; lap < laps; ++lap) {
      co_await kodo::receive(previous_, in_);
      const std::int64_t add = me() + 1;
      auto in = in_;
      auto out = out_;
      Kokkos::parallel_for(
          "relay", Kokkos::RangePolicy<kodo::ExecutionSpace>(stream_->space(), 0, 1),
          KOKKOS_LAMBDA(int) { out(0) = in(0) + add; });
      if (fence_each_lap) stream_->space().fence("a fence inside a recorded turn");
      // Unit 0 keeps the count of its last lap; every other count is passed on.
      if (!(lap == laps - 1 && me() == 0)) next_.send(out_);
    }
    co_await when_done(*stream_);
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out_);
    final_count = host(0);
  }

  std::int64_t me() const { return place(*this); }
  std::int64_t final_count = -1;

 private:
  kodo::Index3 at(std::int64_t i) const { return at_place(*this, i); }
  kodo::Stream* stream_;
  kodo::Channel next_, previous_;
  Count in_{"in"}, out_{"out"};
};

void relay(bool fence_each_lap) {
  auto& rt = test_runtime();
  const kodo::RecordingReport before = rt.recording();
  const std::int64_t units = 4 * rt.size();
  const int laps = 5;
  auto relays = kodo::Collection<Relay>::create(rt, {units, 1, 1});
  relays.broadcast_local<&Relay::pass>(laps, fence_each_lap);
  rt.run();
  // Each lap adds 1 + 2 + ... + units once more.
  const std::int64_t expected = laps * units * (units + 1) / 2;
  std::uint64_t local = 0;
  relays.for_each_local([&](const Relay& r) {
    ++local;
    if (r.me() == 0) {
      EXPECT_EQ(r.final_count, expected);
    }
  });
  const kodo::RecordingReport after = rt.recording();
  if (after.on) {
    EXPECT_GT(after.turns, before.turns);
    // Each unit's last turn fences once (the count read back); with a fence each lap,
    // a lap's turn is cut short too (the rest of it is not recorded, so the laps that
    // follow in the same turn end nothing). On a GPU a turn is recorded only with two
    // pieces of work or more, and a relay's laps are one unit's each: none need end.
    const std::uint64_t ended = after.ended_early - before.ended_early;
    if (fence_each_lap && kodo::host_build)
      EXPECT_GE(ended, 1u);
    else
      EXPECT_LE(ended, local);
  } else {
    EXPECT_EQ(after.turns, before.turns);
  }
}

TEST(Recording, TransfersBetweenUnitsOfARankArriveAfterTheirTurn) { relay(false); }

// A turn is recorded once two or more pieces of work are left in it (on a GPU; the host
// backend groups every turn): a reduction's result resumes each local unit of its
// collection, so it counts as many as the rank holds; another message counts as one.
class Idle : public kodo::WorkUnit<Idle> {
 public:
  explicit Idle(const kodo::UnitInit<Idle>& init) : WorkUnit(init) {}
};

TEST(Recording, AReductionsResultCountsAsTheUnitsItResumes) {
  using kodo::detail::MessageHeader;
  using kodo::detail::MessageKind;
  using kodo::detail::TestAccess;
  auto& rt = test_runtime();
  const auto one_each = kodo::Collection<Idle>::create(rt, {rt.size(), 1, 1});
  const auto two_each = kodo::Collection<Idle>::create(rt, {2 * rt.size(), 1, 1});
  const std::uint32_t one = one_each.id(), two = two_each.id();
  int held = 0;
  two_each.for_each_local([&](const Idle&) { ++held; });
  ASSERT_EQ(held, 2);
  auto result = [&](std::uint32_t collection) {
    return MessageHeader{MessageKind::reduction_result, collection, 0, 0, 0};
  };
  const MessageHeader call{MessageKind::callback, 0, 0, 0, rt.rank()};
  EXPECT_EQ(TestAccess::turn_pieces_with(rt, {}), 0u);
  EXPECT_EQ(TestAccess::turn_pieces_with(rt, {call}), 1u);
  EXPECT_EQ(TestAccess::turn_pieces_with(rt, {call, call}), 2u);
  EXPECT_EQ(TestAccess::turn_pieces_with(rt, {result(one)}), 1u);
  EXPECT_EQ(TestAccess::turn_pieces_with(rt, {result(two)}), 2u);  // counted up to 2
  EXPECT_EQ(TestAccess::turn_pieces_with(rt, {result(one), call}), 2u);
  // A result naming no collection is one message (its dispatch refuses it).
  EXPECT_EQ(TestAccess::turn_pieces_with(rt, {result(two + 1)}), 1u);
}
TEST(Recording, AFenceInsideATurnEndsItsRecordingAndTheRestRunsAsIssued) { relay(true); }

// Many transfers between units in one turn, each of its own size into a view of its own
// (more than one launch of a recorded turn's copies takes on a GPU): each arrives whole,
// and a sender that writes its view again once `sent` runs does not change what arrived.
using Values = Kokkos::View<std::int64_t*, kodo::ExecutionSpace::memory_space>;

class Fan : public kodo::WorkUnit<Fan> {
 public:
  static constexpr int kTransfers = 150;
  explicit Fan(const kodo::UnitInit<Fan>& init)
      : WorkUnit(init),
        stream_(&streams().communication(static_cast<std::size_t>(me()))),
        next_(open_channel(*stream_, at(me() + 1))),
        previous_(open_channel(*stream_, at(me() - 1))) {
    for (int i = 0; i < kTransfers; ++i) {
      out_.emplace_back("out", i + 1);
      in_.emplace_back("in", i + 1);
    }
  }

  static std::int64_t value(std::int64_t unit, int transfer) { return 1000 * unit + transfer; }

  kodo::Task exchange() {
    for (int i = 0; i < kTransfers - 1; ++i) previous_.recv(in_[i], [] {});
    for (int i = 0; i < kTransfers; ++i) {
      Kokkos::deep_copy(stream_->space(), out_[i], value(me(), i));
      next_.send(out_[i], [this, i] { Kokkos::deep_copy(stream_->space(), out_[i], -1); });
    }
    co_await kodo::receive(previous_, in_[kTransfers - 1]);
    co_await when_done(*stream_);
  }

  // The transfers that did not arrive whole from the previous unit.
  int wrong() const {
    int bad = 0;
    const std::int64_t from = (me() - 1 + collection().size()) % collection().size();
    for (int i = 0; i < kTransfers; ++i) {
      auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, in_[i]);
      for (std::size_t k = 0; k < host.extent(0); ++k) bad += host(k) != value(from, i);
    }
    return bad;
  }

  std::int64_t me() const { return place(*this); }

 private:
  kodo::Index3 at(std::int64_t i) const { return at_place(*this, i); }
  kodo::Stream* stream_;
  kodo::Channel next_, previous_;
  std::vector<Values> out_, in_;
};

TEST(Recording, ManyTransfersInOneTurnEachArriveWhole) {
  auto& rt = test_runtime();
  auto fans = kodo::Collection<Fan>::create(rt, {3 * rt.size(), 1, 1});
  fans.broadcast_local<&Fan::exchange>();
  rt.run();
  fans.for_each_local([&](const Fan& f) { EXPECT_EQ(f.wrong(), 0) << "unit " << f.me(); });
}

// Orders between a unit's two streams inside recorded turns (Stream::wait_for: on a GPU the
// graph's edges, not events): a kernel on one stream reads what a slow kernel on the other
// wrote before the wait, and the next lap's write waits for that read, lap after lap.
class TwoStreams : public kodo::WorkUnit<TwoStreams> {
 public:
  explicit TwoStreams(const kodo::UnitInit<TwoStreams>& init)
      : WorkUnit(init),
        compute_(&streams().compute(static_cast<std::size_t>(me()))),
        communication_(&streams().communication(static_cast<std::size_t>(me()))) {}

  kodo::Task laps(int count) {
    for (int lap = 1; lap <= count; ++lap) {
      write_slowly(compute_->space(), value_, lap);
      // The first lap's turn (every unit's, so recorded) is ended early by a fence: the
      // orders that follow in it are made outside a recording.
      if (lap == 1) compute_->space().fence("a fence inside a recorded turn");
      communication_->wait_for(*compute_);
      count_if_not(communication_->space(), value_, lap, wrong_);
      compute_->wait_for(*communication_);              // the next lap's write after this read
      if (lap % 2 == 0) co_await when_done(*compute_);  // laps in several turns
    }
    co_await when_done(*compute_);
    keep_results();
  }

  // Every unit on the first pair of streams: the orders two writes and two reads a lap.
  kodo::Task repeated_laps(int count) {
    compute_ = &streams().compute(0);
    communication_ = &streams().communication(0);
    for (int lap = 1; lap <= count; ++lap) {
      const std::int64_t first = 2 * lap - 1, second = 2 * lap;
      write_slowly(compute_->space(), value_, first);
      communication_->wait_for(*compute_);
      communication_->wait_for(*compute_);  // again, nothing new on the source
      count_if_not(communication_->space(), value_, first, wrong_);
      compute_->wait_for(*communication_);  // the next write after that read
      write_slowly(compute_->space(), value_, second);
      communication_->wait_for(*compute_);  // again, after new work on the source
      count_if_not(communication_->space(), value_, second, wrong_);
      compute_->wait_for(*communication_);
      if (lap % 2 == 0) co_await when_done(*compute_);  // laps in several turns
    }
    co_await when_done(*compute_);
    keep_results();
  }

  std::int64_t me() const { return place(*this); }
  std::int64_t wrong_reads = -1, last_value = -1;

 private:
  void keep_results() {
    wrong_reads = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, wrong_)(0);
    last_value = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, value_)(0);
  }

  kodo::Stream* compute_;
  kodo::Stream* communication_;
  Count value_{"value"}, wrong_{"wrong reads"};
};

TEST(Recording, OrdersBetweenStreamsHoldInsideRecordedTurns) {
  auto& rt = test_runtime();
  const kodo::RecordingReport before = rt.recording();
  auto units = kodo::Collection<TwoStreams>::create(rt, {4 * rt.size(), 1, 1});
  const int laps = 6;
  units.broadcast_local<&TwoStreams::laps>(laps);
  rt.run();
  units.for_each_local([&](const TwoStreams& u) {
    EXPECT_EQ(u.wrong_reads, 0) << "unit " << u.me();
    EXPECT_EQ(u.last_value, laps) << "unit " << u.me();
  });
  const kodo::RecordingReport after = rt.recording();
  if (after.on) {
    EXPECT_GT(after.turns, before.turns);
    EXPECT_GE(after.ended_early - before.ended_early, 1u);
  }
}

// Units sharing one pair of streams give the same order again and again inside a recorded
// turn (on a GPU a repeated order whose source recorded nothing new is left out): an order
// given twice, then one given after new work on its source, each read sees the write it
// was ordered after, lap after lap.
TEST(Recording, OrdersGivenAgainOnSharedStreamsHold) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<TwoStreams>::create(rt, {3 * rt.size(), 1, 1});
  const int laps = 4;
  units.broadcast_local<&TwoStreams::repeated_laps>(laps);
  rt.run();
  units.for_each_local([&](const TwoStreams& u) {
    EXPECT_EQ(u.wrong_reads, 0) << "unit " << u.me();
    EXPECT_EQ(u.last_value, 2 * laps) << "unit " << u.me();
  });
}

// A turn's same-rank copies wait for what their senders' streams hold, not for the rest of
// the turn: a kernel of the receiver, on another stream in the same turn, waits on the
// device for the copy's data to land. On a GPU it sees it (were the copy made after the
// turn's other work, it would give up at its bound); on the host backend, whose recordings
// run work as it is issued and make the copies at the turn's end, it cannot, and the data
// alone is checked.
class Watched : public kodo::WorkUnit<Watched> {
 public:
  explicit Watched(const kodo::UnitInit<Watched>& init)
      : WorkUnit(init),
        sends_(&streams().communication(static_cast<std::size_t>(me()))),
        watches_(&streams().compute(static_cast<std::size_t>(me()))),
        peer_(open_channel(*sends_, at_place(*this, me() ^ 1))) {}

  // The even unit of a pair sends `value`, the odd one watches for it and receives it.
  kodo::Task exchange(std::int64_t value) {
    if (me() % 2 == 0) {
      Kokkos::deep_copy(sends_->space(), out_, value);
      peer_.send(out_);
      co_await when_done(*sends_);
      co_return;
    }
    auto in = in_;
    auto seen = seen_;
    Kokkos::parallel_for(
        "test::watch", Kokkos::RangePolicy<kodo::ExecutionSpace>(watches_->space(), 0, 1),
        KOKKOS_LAMBDA(int) {
          const volatile std::int64_t* landed = in.data();
          for (int k = 0; k < (1 << 20) && seen(0) == 0; ++k)
            if (*landed == value) seen(0) = 1;
        });
    co_await kodo::receive(peer_, in_);
    co_await when_done(*watches_);
    received = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, in_)(0);
    seen_landing = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, seen_)(0) == 1;
  }

  std::int64_t me() const { return place(*this); }
  std::int64_t received = -1;
  bool seen_landing = false;

 private:
  kodo::Stream* sends_;
  kodo::Stream* watches_;
  kodo::Channel peer_;
  Count out_{"out"}, in_{"in"}, seen_{"seen"};
};

TEST(Recording, ATurnsCopiesDoNotWaitForItsOtherWork) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Watched>::create(rt, {2 * rt.size(), 1, 1});
  units.for_each_local([&](const Watched& u) {
    ASSERT_EQ(units.owner(at_place(u, u.me() ^ 1)), rt.rank()) << "pairs are of one rank";
  });
  const std::int64_t value = 4242;
  units.broadcast_local<&Watched::exchange>(value);
  rt.run();
  units.for_each_local([&](const Watched& u) {
    if (u.me() % 2 == 0) return;
    EXPECT_EQ(u.received, value) << "unit " << u.me();
    if (!kodo::host_build) {
      EXPECT_TRUE(u.seen_landing) << "unit " << u.me();
    }
  });
}

}  // namespace
