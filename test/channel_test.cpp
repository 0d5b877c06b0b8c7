// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Channels between units on the same and on different ranks (1, 2 and 4 ranks under
// ctest), in device and host-staged mode, and remote calls carrying several views.

#include "expect_error.hpp"
#include "test_runtime.hpp"
#include "test_views.hpp"

#include <kodo/comm/detail/channel_end.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace {

using kodo::CommMode;
using kodo::Index3;

constexpr int kMessages = 5;  // per link, all receives posted before any data moves

// Units in a ring: each sends kMessages views to the next unit and receives as many
// from the previous one. Message k from unit u holds u * 1000 + k * 100 + i.
template <class Self>
class Ring : public kodo::WorkUnit<Self> {
 public:
  Ring(const kodo::UnitInit<Self>& init, CommMode mode)
      : kodo::WorkUnit<Self>(init), stream_(&this->streams().communication(0)) {
    const auto& shape = this->collection().shape();
    const std::int64_t n = shape.size(), me = shape.linear(this->index());
    to_next_ = this->open_channel(*stream_, shape.delinear((me + 1) % n), mode);
    from_previous_ = this->open_channel(*stream_, shape.delinear((me + n - 1) % n), mode);
  }

  std::int64_t me() const { return this->collection().shape().linear(this->index()); }
  static std::int64_t length(int k) { return 3 + 7 * k; }  // sizes differ per message

  // Receives for all messages, each into its own view (larger than needed).
  void post_receives() {
    for (int k = 0; k < kMessages; ++k) {
      inbox_.emplace_back("inbox", length(kMessages));
      from_previous_.recv(inbox_.back(), [this, k](std::size_t count) {
        arrivals_.push_back(k);
        counts_.push_back(count);
      });
    }
  }
  void send_all() {
    for (int k = 0; k < kMessages; ++k) {
      outbox_.push_back(filled(length(k), me() * 1000.0 + k * 100.0));
      // Alternately through the stream and as data already complete (filled() fenced).
      if (k % 2)
        to_next_.send(outbox_.back(), kodo::data_ready, [this] { ++sent_; });
      else
        to_next_.send(outbox_.back(), [this] { ++sent_; });
    }
  }

  kodo::Stream* stream_;
  kodo::Channel to_next_, from_previous_;
  std::vector<Kokkos::View<double*>> inbox_, outbox_;
  std::vector<int> arrivals_;
  std::vector<std::size_t> counts_;  // elements that arrived, in completion order
  int sent_ = 0;
};

class RingUnit final : public Ring<RingUnit> {
 public:
  using Ring::Ring;
};

// (Rings here have at least three units, so the next and the previous unit differ and
// one port serves.)
kodo::Channel& ring_link(RingUnit& u, bool outgoing) {
  return outgoing ? u.to_next_ : u.from_previous_;
}

template <class U>
void check_ring(const kodo::Collection<U>& units) {
  const std::int64_t n = units.size();
  units.for_each_local([&](U& u) {
    EXPECT_EQ(u.sent_, kMessages) << "unit " << u.me();
    ASSERT_EQ(u.arrivals_.size(), static_cast<std::size_t>(kMessages)) << "unit " << u.me();
    // Completions may come in any order (sends through the stream leave after the
    // ready ones), but each message lands in the receive posted for it.
    auto arrivals = u.arrivals_;
    std::sort(arrivals.begin(), arrivals.end());
    for (int k = 0; k < kMessages; ++k) EXPECT_EQ(arrivals[k], k) << "unit " << u.me();
    // Each completion is told how much of its (larger) view the transfer filled.
    for (std::size_t j = 0; j < u.arrivals_.size(); ++j)
      EXPECT_EQ(u.counts_[j], static_cast<std::size_t>(U::length(u.arrivals_[j])))
          << "unit " << u.me();
    const std::int64_t from = (u.me() + n - 1) % n;
    for (int k = 0; k < kMessages; ++k) {
      const auto got = on_host(u.inbox_[k]);
      for (std::int64_t i = 0; i < RingUnit::length(k); ++i)
        ASSERT_EQ(got[i], from * 1000.0 + k * 100.0 + i) << "unit " << u.me() << " message " << k;
    }
  });
}

class ChannelModes : public testing::TestWithParam<CommMode> {};

TEST_P(ChannelModes, SeveralTransfersInFlightLandInTheirReceives) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<RingUnit>::create(rt, {3, 2, 1}, GetParam());
  units.for_each_local([](RingUnit& u) { u.post_receives(); });
  units.for_each_local([](RingUnit& u) { u.send_all(); });
  rt.run();
  check_ring(units);
}

// Out of order: each unit sends all its data, then asks the next unit, by an entry
// method, to post its receives; the data is in flight (or waiting, on the same rank)
// before the receives exist, and the request may overtake it.
class SendFirst final : public Ring<SendFirst> {
 public:
  using Ring::Ring;
  void start() {
    send_all();
    const auto& shape = collection().shape();
    collection()[shape.delinear((me() + 1) % shape.size())].send<&SendFirst::post_receives>();
  }
};

TEST_P(ChannelModes, SendsBeforeReceivesArePostedStillLand) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<SendFirst>::create(rt, {2, 2, 1}, GetParam());
  units.broadcast_local<&SendFirst::start>();
  rt.run();
  check_ring(units);
}

INSTANTIATE_TEST_SUITE_P(Channel, ChannelModes,
                         testing::Values(CommMode::device, CommMode::host_staged),
                         [](const auto& info) { return std::string(kodo::to_string(info.param)); });

TEST(Channel, LocalityFollowsTheOwnerOfThePeer) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<RingUnit>::create(rt, {4, 1, 1}, CommMode::device);
  units.for_each_local([&](RingUnit& u) {
    const Index3 next = units.shape().delinear((u.me() + 1) % units.size());
    EXPECT_EQ(ring_link(u, true).is_local(), units.owner(next) == rt.rank());
    EXPECT_TRUE(ring_link(u, false).is_open());
  });
}

// A unit that opens channels it should not.
class Opener : public kodo::WorkUnit<Opener> {
 public:
  explicit Opener(const kodo::UnitInit<Opener>& init) : WorkUnit(init) {}
  kodo::Channel open(const Index3& peer, int port = 0) {
    return open_channel(streams().communication(0), peer, CommMode::device, port);
  }
};

TEST(Channel, BadEndsAreErrors) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Opener>::create(rt, {2, 1, 1});
  units.for_each_local([](Opener& u) {
    const Index3 other{1 - u.index().x, 0, 0};
    EXPECT_THROW(u.open({5, 0, 0}), kodo::Error);  // no such unit
    EXPECT_THROW(u.open(u.index()), kodo::Error);  // itself
    EXPECT_THROW(u.open(other, -1), kodo::Error);  // port out of range
    kodo::Channel fine = u.open(other, 1 << 20);
    EXPECT_TRUE(fine.is_open());
    EXPECT_THROW(u.open(other, 1 << 20), kodo::Error);  // that link again, still open
    Kokkos::View<double*> buffer("buffer", 4);
    fine.recv(buffer, [] {});
    EXPECT_THROW(fine.open_ring(std::vector{buffer},
                                [](const kodo::Arrival<Kokkos::View<double*>>&) {}),
                 kodo::Error);  // a ring must own every receive of its channel
  });
  kodo::Channel closed;
  EXPECT_THROW(closed.send(Kokkos::View<double*>("x", 1)), kodo::Error);
  EXPECT_THROW(kodo::parse_comm_mode("carrier-pigeon"), kodo::Error);
  EXPECT_EQ(kodo::parse_comm_mode("host"), CommMode::host_staged);
  EXPECT_EQ(kodo::parse_comm_mode("device"), CommMode::device);
}

// --- remote calls with several views ----------------------------------------------

class Collector : public kodo::WorkUnit<Collector> {
 public:
  explicit Collector(const kodo::UnitInit<Collector>& init) : WorkUnit(init) {}
  void start() {
    const auto& shape = collection().shape();
    const std::int64_t me = shape.linear(index());
    Kokkos::View<int*> labels("labels", 4);
    Kokkos::deep_copy(labels, static_cast<int>(me));
    unit(shape.delinear((me + 1) % shape.size()))
        .send<&Collector::take>(me, filled(100 + me, me * 10.0), labels,
                                Kokkos::View<double*>("none", 0));
  }
  void take(std::int64_t from, Kokkos::View<double*> values, Kokkos::View<int*> labels,
            Kokkos::View<double*> empty) {
    this->from = from;
    this->values = on_host(values);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, labels);
    this->labels.assign(h.data(), h.data() + h.size());
    empty_extent = empty.extent(0);
  }
  std::int64_t from = -1;
  std::vector<double> values;
  std::vector<int> labels;
  std::size_t empty_extent = 99;
};

TEST(EntryMethods, CallsCarrySeveralViewsOfDifferentTypes) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Collector>::create(rt, {5, 1, 1});
  units.broadcast_local<&Collector::start>();
  rt.run();
  units.for_each_local([&](Collector& c) {
    const std::int64_t me = units.shape().linear(c.index());
    const std::int64_t from = (me + units.size() - 1) % units.size();
    EXPECT_EQ(c.from, from);
    ASSERT_EQ(c.values.size(), static_cast<std::size_t>(100 + from));
    for (std::size_t i = 0; i < c.values.size(); ++i) EXPECT_EQ(c.values[i], from * 10.0 + i);
    EXPECT_EQ(c.labels, std::vector<int>(4, static_cast<int>(from)));
    EXPECT_EQ(c.empty_extent, 0u);
  });
}

// --- receive rings ----------------------------------------------------------------

// Units in a ring of neighbours, each sending kRingTransfers views of varying length to
// the next unit and receiving through a ring of two buffers from the previous one.
constexpr int kRingTransfers = 40;

class RingReceiver : public kodo::WorkUnit<RingReceiver> {
 public:
  using View = Kokkos::View<double*>;
  RingReceiver(const kodo::UnitInit<RingReceiver>& init, CommMode mode)
      : WorkUnit(init), stream_(&streams().communication(0)) {
    const auto& shape = collection().shape();
    const std::int64_t n = shape.size();
    to_next_ = open_channel(*stream_, shape.delinear((me() + 1) % n), mode);
    from_previous_ = open_channel(*stream_, shape.delinear((me() + n - 1) % n), mode);
    ring_ = from_previous_.open_ring(std::vector{View("ring0", capacity), View("ring1", capacity)},
                                     [this](const kodo::Arrival<View>& a) { on_arrival(a); });
  }
  std::int64_t me() const { return collection().shape().linear(index()); }
  static constexpr std::int64_t capacity = 64;
  static std::int64_t length(int k) { return 1 + (k * 37) % capacity; }

  // Sends every transfer at once: with two buffers, the ring holds back each transfer
  // until the one two before it is released.
  void send_all() {
    for (int k = 0; k < kRingTransfers; ++k) {
      outbox_.push_back(filled(length(k), me() * 1000.0 + k));
      to_next_.send(outbox_.back(), kodo::data_ready);
    }
  }
  void on_arrival(const kodo::Arrival<View>& a) {
    transfers_.push_back(a.transfer);
    counts_.push_back(a.count);
    const auto host = on_host(a.view);
    firsts_.push_back(host[0]);
    lasts_.push_back(host[a.count - 1]);
    ring_.release(a.transfer);
  }

  kodo::Stream* stream_;
  kodo::Channel to_next_, from_previous_;
  kodo::ReceiveRing<View> ring_;
  std::vector<View> outbox_;
  std::vector<std::uint64_t> transfers_;
  std::vector<std::size_t> counts_;
  std::vector<double> firsts_, lasts_;
};

class RingReceivers : public ::testing::TestWithParam<CommMode> {};

TEST_P(RingReceivers, HandTransfersInOrderAndRepostTheirBuffers) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<RingReceiver>::create(rt, {5, 1, 1}, GetParam());
  units.for_each_local([](RingReceiver& u) { u.send_all(); });
  rt.run();
  units.for_each_local([&](RingReceiver& u) {
    const std::int64_t from = (u.me() + units.size() - 1) % units.size();
    ASSERT_EQ(u.transfers_.size(), static_cast<std::size_t>(kRingTransfers));
    for (int k = 0; k < kRingTransfers; ++k) {
      EXPECT_EQ(u.transfers_[k], static_cast<std::uint64_t>(k));
      EXPECT_EQ(u.counts_[k], static_cast<std::size_t>(RingReceiver::length(k)));
      EXPECT_EQ(u.firsts_[k], from * 1000.0 + k);
      EXPECT_EQ(u.lasts_[k], from * 1000.0 + k + RingReceiver::length(k) - 1);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Modes, RingReceivers,
                         ::testing::Values(CommMode::device, CommMode::host_staged));

// The 0.1 argument orders (the peer before the stream; the transfer before the stream),
// kept [[deprecated]] for a release: a unit written against 0.1 still compiles, warned,
// and passes its transfers as before.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
class OldOrderUnit : public kodo::WorkUnit<OldOrderUnit> {
 public:
  using View = Kokkos::View<double*>;
  explicit OldOrderUnit(const kodo::UnitInit<OldOrderUnit>& init)
      : WorkUnit(init), stream_(&streams().communication(0)) {
    const std::int64_t n = collection().shape().size();
    to_next_ = open_channel(collection().shape().delinear((me() + 1) % n), *stream_);
    from_previous_ = open_channel(collection().shape().delinear((me() + n - 1) % n), *stream_);
    ring_ = from_previous_.open_ring(std::vector{View("old0", 8), View("old1", 8)},
                                     [this](const kodo::Arrival<View>& a) {
                                       sum_ += on_host(a.view)[0];
                                       ring_.release(a.transfer, *stream_);
                                     });
  }
  void send_all() {
    for (int k = 0; k < 6; ++k) {
      outbox_.push_back(filled(8, static_cast<double>(k)));
      to_next_.send(outbox_.back());
    }
  }
  std::int64_t me() const { return collection().shape().linear(index()); }
  double sum_ = 0;

 private:
  kodo::Stream* stream_;
  kodo::Channel to_next_, from_previous_;
  kodo::ReceiveRing<View> ring_;
  std::vector<View> outbox_;
};
#pragma GCC diagnostic pop

TEST(Channel, TheDeprecatedArgumentOrdersStillWork) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<OldOrderUnit>::create(rt, {3, 1, 1});
  units.for_each_local([](OldOrderUnit& u) { u.send_all(); });
  rt.run();
  units.for_each_local([](const OldOrderUnit& u) { EXPECT_EQ(u.sum_, 0 + 1 + 2 + 3 + 4 + 5); });
}

// Release out of order, or of a transfer not handed over yet: errors.
TEST(RingReceivers, ReleasesAreInTransferOrder) {
  kodo::ReceiveRing<Kokkos::View<double*>> closed;
  EXPECT_THROW(closed.release(0), kodo::Error);
  auto& rt = test_runtime();
  auto units = kodo::Collection<Opener>::create(rt, {2, 1, 1});
  units.for_each_local([](Opener& u) {
    kodo::Channel c = u.open({1 - u.index().x, 0, 0});
    Kokkos::View<double*> b("b", 2);
    auto ring = c.open_ring(std::vector{b, b}, [](const kodo::Arrival<Kokkos::View<double*>>&) {});
    EXPECT_ERROR(ring.release(0), "before the ring handed it over");
    EXPECT_ERROR(ring.release(1), "released in order");
    EXPECT_THROW(c.open_ring(std::vector{b}, [](const kodo::Arrival<Kokkos::View<double*>>&) {}),
                 kodo::Error);                    // one ring per channel
    EXPECT_THROW(c.recv(b, [] {}), kodo::Error);  // the ring owns the receives
  });
}

// Channels between units whose linear indices exceed 2^16 (and 2^17), in a collection
// of 2^18 units: link numbers do not depend on unit indices.
class Far : public kodo::WorkUnit<Far> {
 public:
  explicit Far(const kodo::UnitInit<Far>& init) : WorkUnit(init) {}
  static constexpr std::int64_t pairs[2][2] = {{70000, 262000}, {131073, 65537}};
  void open_links() {
    const auto& shape = collection().shape();
    const std::int64_t me = shape.linear(index());
    for (const auto& p : pairs)
      for (int side = 0; side < 2; ++side)
        if (p[side] == me) {
          link_ = open_channel(streams().communication(0), shape.delinear(p[1 - side]));
          inbox_ = Kokkos::View<std::int64_t*>("inbox", 1);
          link_.recv(inbox_, [this] { got_ = on_host_value(); });
          Kokkos::View<std::int64_t*> out("out", 1);
          Kokkos::deep_copy(out, me);
          link_.send(out);
        }
  }
  std::int64_t on_host_value() const {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, inbox_);
    return h(0);
  }
  kodo::Channel link_;
  Kokkos::View<std::int64_t*> inbox_;
  std::int64_t got_ = -1;
};

TEST(Channel, LinksBetweenUnitsBeyond2To16) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Far>::create(rt, {1 << 18, 1, 1});
  units.broadcast_local<&Far::open_links>();
  rt.run();
  units.for_each_local([&](Far& u) {
    const std::int64_t me = units.shape().linear(u.index());
    for (const auto& p : Far::pairs)
      for (int side = 0; side < 2; ++side)
        if (p[side] == me) {
          EXPECT_EQ(u.got_, p[1 - side]);
        }
  });
}

}  // namespace

// A link's number (its tags' upper half) is drawn at random among those not in use: a
// sender told the number of one link cannot hit another link's receives by a slip of
// one (issue 31: a third rank filled another pair's receives with sequential numbers).
TEST(Channel, LinkNumbersAreDistinctAndNotSequential) {
  kodo::detail::ChannelRegistry registry;
  std::vector<std::uint32_t> numbers;
  for (std::int32_t port = 0; port < 1000; ++port)
    numbers.push_back(registry.receive_number({0, 1, 0, port}));
  EXPECT_EQ(registry.receive_number({0, 1, 0, 7}), numbers[7]);  // the same link, the same number
  std::vector<std::uint32_t> sorted = numbers;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "a number twice";
  EXPECT_NE(sorted.back(), kodo::detail::kTransferMask) << "the number kept for moving units";
  std::size_t neighbours = 0;  // numbers one apart, as sequential numbers all were
  for (std::size_t i = 1; i < sorted.size(); ++i) neighbours += sorted[i] - sorted[i - 1] == 1;
  EXPECT_LE(neighbours, 2u);
}

// The numbers a migration's views are tagged with (issue 54: a fixed tag let a third rank
// replace a moving unit's view): never a link's number here, nor the one kept, and drawn
// anew each time.
TEST(Channel, NumbersForMovingViewsAreNoLinksAndUnpredictable) {
  kodo::detail::ChannelRegistry registry;
  std::set<std::uint32_t> links;
  for (std::int32_t port = 0; port < 2000; ++port)
    links.insert(registry.receive_number({0, 1, 0, port}));
  std::set<std::uint32_t> drawn;
  for (int i = 0; i < 2000; ++i) {
    const std::uint32_t n = registry.unused_number();
    EXPECT_FALSE(links.contains(n)) << n << " is a link's number";
    EXPECT_NE(n, kodo::detail::kTransferMask);
    drawn.insert(n);
  }
  EXPECT_GE(drawn.size(), 1990u);  // 2000 draws of 2^32 - 1 - 2000 numbers: a repeat is rare
  EXPECT_EQ(registry.receive_numbers.size(), 2000u);  // none of them kept as a link's
}
