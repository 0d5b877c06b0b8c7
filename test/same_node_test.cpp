// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The same-node route of receive rings (channel.hpp, node_channels.hpp): on the host
// backend the same word protocol as on GPUs, with the data in shared-memory slots. Run
// on 1, 2 and 4 ranks of one node (on one rank every link is local and the route is not
// taken); the ring tests of channel_test.cpp take it too.

#include "expect_error.hpp"
#include "test_access.hpp"
#include "test_runtime.hpp"
#include "test_views.hpp"

#include <kodo/comm/detail/node_channels.hpp>
#include <kodo/comm/detail/wire.hpp>
#include <kodo/kodo.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using kodo::CommMode;
using kodo::detail::RingMessage;

bool route_expected(kodo::Runtime& rt) {
  const char* selection = std::getenv("KODO_CHANNELS");
  return rt.size() > 1 && !(selection && std::string(selection) == "ucx");
}

kodo::detail::NodeRouteCounts counts(kodo::Runtime& rt) {
  return kodo::detail::node_route_counts(kodo::detail::TestAccess::scheduler(rt).channels());
}

// Units in a ring, two per rank: each sends kTransfers views of varying length to the
// next unit at once, and receives from the previous one through a ring of three buffers
// (not a power of two), releasing alternately at once and after its stream.
constexpr int kTransfers = 300;

class Burst : public kodo::WorkUnit<Burst> {
 public:
  using View = Kokkos::View<double*>;
  static constexpr std::int64_t kCapacity = 200;
  static std::int64_t length(int k) { return (k * 53) % (kCapacity + 1); }  // 0 .. 200

  Burst(const kodo::UnitInit<Burst>& init, CommMode mode)
      : WorkUnit(init), stream_(&streams().communication(0)) {
    const auto& shape = collection().shape();
    const std::int64_t n = shape.size();
    to_next_ = open_channel(*stream_, shape.delinear((me() + 1) % n), mode);
    from_previous_ = open_channel(*stream_, shape.delinear((me() + n - 1) % n), mode);
    ring_ = from_previous_.open_ring(std::vector{View("r0", kCapacity), View("r1", kCapacity),
                                                 View("r2", kCapacity)},
                                     [this](const kodo::Arrival<View>& a) { on_arrival(a); });
  }
  std::int64_t me() const { return collection().shape().linear(index()); }

  // Alternately complete already and written on the stream the send is ordered on.
  void send_all() {
    for (int k = 0; k < kTransfers; ++k) {
      const double first = me() * 1e6 + k * 1000.0;
      if (k % 2 == 0) {
        outbox_.push_back(filled(length(k), first));
        to_next_.send(outbox_.back(), kodo::data_ready);
      } else {
        View v(Kokkos::view_alloc(Kokkos::WithoutInitializing, "out"), length(k));
        Kokkos::parallel_for(
            "fill", Kokkos::RangePolicy<kodo::ExecutionSpace>(stream_->space(), 0, length(k)),
            KOKKOS_LAMBDA(std::int64_t i) { v(i) = first + i; });
        outbox_.push_back(v);
        to_next_.send(v);
      }
    }
  }
  void on_arrival(const kodo::Arrival<View>& a) {
    const std::int64_t from = (me() + collection().shape().size() - 1) %
                              collection().shape().size();
    const auto k = static_cast<int>(a.transfer);
    ok_ = ok_ && a.transfer == transfers_ && a.count == static_cast<std::size_t>(length(k));
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a.view);
    for (std::size_t i = 0; i < a.count; ++i)
      ok_ = ok_ && host(i) == from * 1e6 + k * 1000.0 + static_cast<double>(i);
    ++transfers_;
    if (k % 2 == 0)
      ring_.release(a.transfer);
    else
      ring_.release(*stream_, a.transfer);
  }

  kodo::Stream* stream_;
  kodo::Channel to_next_, from_previous_;
  kodo::ReceiveRing<View> ring_;
  std::vector<View> outbox_;
  std::uint64_t transfers_ = 0;
  bool ok_ = true;
};

TEST(SameNodeRings, CarryBurstsInOrderThroughFewBuffers) {
  auto& rt = test_runtime();
  const auto before = counts(rt);
  auto units =
      kodo::Collection<Burst>::create(rt, {std::max(3, 2 * rt.size()), 1, 1}, CommMode::device);
  const auto open = counts(rt);
  units.for_each_local([](Burst& u) { u.send_all(); });
  rt.run();
  units.for_each_local([](Burst& u) {
    EXPECT_TRUE(u.ok_) << "unit " << u.me() << ": a transfer out of order or with wrong data";
    EXPECT_EQ(u.transfers_, static_cast<std::uint64_t>(kTransfers));
  });
  if (route_expected(rt)) {
    // Each rank receives on one link from another rank (offered when the ring opened) and
    // sends on one (taken when the peer's offer arrived).
    EXPECT_EQ(open.receiving - before.receiving, 1u);
    EXPECT_EQ(counts(rt).sending - before.sending, 1u);
    EXPECT_GT(counts(rt).most_held, 0u) << "300 sends at once into 3 buffers held none back";
  } else {
    EXPECT_EQ(open.receiving, before.receiving);
  }
}

TEST(SameNodeRings, HostStagedRingsKeepUcx) {
  auto& rt = test_runtime();
  const auto before = counts(rt);
  auto units = kodo::Collection<Burst>::create(rt, {std::max(3, 2 * rt.size()), 1, 1},
                                               CommMode::host_staged);
  EXPECT_EQ(counts(rt).receiving, before.receiving);
  units.for_each_local([](Burst& u) { u.send_all(); });
  rt.run();
  units.for_each_local([](Burst& u) { EXPECT_TRUE(u.ok_); });
}

// Waits on streams: units in a ring as in Burst, two buffers each. Once transfer 0 has
// been handed over (the route is then known), a unit reads every later transfer behind
// ReceiveRing::wait and releases it on the stream before its hand-over.
class Awaiter : public kodo::WorkUnit<Awaiter> {
 public:
  using View = Kokkos::View<double*>;
  static constexpr int kCount = 120;
  static constexpr std::int64_t kLength = 64;

  explicit Awaiter(const kodo::UnitInit<Awaiter>& init)
      : WorkUnit(init), stream_(&streams().compute(0)) {
    const auto& shape = collection().shape();
    const std::int64_t n = shape.size();
    // Sends leave from a stream of their own: on GPUs a send waits on its stream for the
    // receiver's buffer, and must not wait behind this unit's waits (nor they behind it).
    to_next_ = open_channel(streams().communication(0), shape.delinear((me() + 1) % n));
    from_previous_ = open_channel(*stream_, shape.delinear((me() + n - 1) % n));
    buffers_ = {View("a", kLength), View("b", kLength)};
    ring_ =
        from_previous_.open_ring(buffers_, [this](const kodo::Arrival<View>& a) { on_arrival(a); });
  }
  std::int64_t me() const { return collection().shape().linear(index()); }
  std::int64_t previous() const {
    return (me() + collection().shape().size() - 1) % collection().shape().size();
  }
  static double value(std::int64_t unit, int k, std::int64_t i) {
    return unit * 1e6 + k * 1000.0 + static_cast<double>(i);
  }

  void send_all() {
    for (int k = 0; k < kCount; ++k) {
      outbox_.push_back(filled(kLength, value(me(), k, 0)));
      to_next_.send(outbox_.back(), kodo::data_ready);
    }
  }
  void on_arrival(const kodo::Arrival<View>& a) {
    ok_ = ok_ && a.transfer == handed_ && a.count == static_cast<std::size_t>(kLength);
    ++handed_;
    if (a.transfer >= waited_) {  // handed over before any wait for it: read here
      check(a.view, static_cast<int>(a.transfer));
      ring_.release(a.transfer);
    }
    if (a.transfer != 0) return;
    could_wait_ = ring_.waits_on_streams();
    if (!could_wait_) return;
    for (int k = 1; k < kCount; ++k) {
      ring_.wait(*stream_, static_cast<std::uint64_t>(k));
      // Work that reads the buffer goes on the stream behind the wait.
      const View copy(Kokkos::view_alloc(Kokkos::WithoutInitializing, "copy"), kLength);
      Kokkos::deep_copy(stream_->space(), copy, buffers_[k % 2]);
      stream_->space().fence();
      check(copy, k);
      ring_.release(*stream_, static_cast<std::uint64_t>(k));
      waited_ = static_cast<std::uint64_t>(k) + 1;
    }
  }
  void check(const View& v, int k) {
    const std::vector<double> host = on_host(v);
    for (std::int64_t i = 0; i < kLength; ++i)
      ok_ = ok_ && host[static_cast<std::size_t>(i)] == value(previous(), k, i);
  }

  kodo::Stream* stream_;
  kodo::Channel to_next_, from_previous_;
  kodo::ReceiveRing<View> ring_;
  std::vector<View> outbox_, buffers_;
  std::uint64_t handed_ = 0, waited_ = 0;  // transfers below waited_ were read behind waits
  bool ok_ = true, could_wait_ = false;
};

TEST(SameNodeRings, StreamsWaitForTransfersAndReleaseThem) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Awaiter>::create(rt, {std::max(3, 2 * rt.size()), 1, 1});
  units.for_each_local([&](Awaiter& u) {
    // Before a transfer has come by the route the ring cannot tell it is taken.
    EXPECT_FALSE(u.ring_.waits_on_streams());
    EXPECT_ERROR(u.ring_.wait(*u.stream_, 0),
                 "a stream can wait for a ring's transfer only on the same-node route");
  });
  MPI_Barrier(rt.comm());  // no rank sends before every rank has checked
  units.for_each_local([](Awaiter& u) { u.send_all(); });
  rt.run();
  const bool route = route_expected(rt);
  units.for_each_local([&](Awaiter& u) {
    EXPECT_TRUE(u.ok_) << "unit " << u.me() << ": a transfer out of order or with wrong data";
    EXPECT_EQ(u.handed_, static_cast<std::uint64_t>(Awaiter::kCount));
    // A unit whose previous unit is on another rank of the node waits on its stream,
    // unless the ranks share a GPU (a kernel waiting there would hold it for its slice).
    const bool remote = u.collection().owner(u.collection().shape().delinear(u.previous())) !=
                        rt.rank();
    EXPECT_EQ(u.could_wait_, route && remote && !rt.placement().shares_device) << "unit " << u.me();
    if (u.could_wait_) {
      EXPECT_EQ(u.waited_, static_cast<std::uint64_t>(Awaiter::kCount));
      // Beyond the buffers' window, and once released: refused, naming the transfers held.
      EXPECT_ERROR(u.ring_.wait(*u.stream_, Awaiter::kCount + 2),
                   "where the ring's buffers hold transfers 120 to 121");
      EXPECT_ERROR(u.ring_.wait(*u.stream_, 3), "a stream waits for transfer 3 where");
    }
  });
}

// A channel that never opens a ring does not hold its peer's sends: unit 0's send
// completes (UCX, eager) before unit 1 posts the receive, which it does only when told.
class Asker : public kodo::WorkUnit<Asker> {
 public:
  using View = Kokkos::View<double*, Kokkos::HostSpace>;
  explicit Asker(const kodo::UnitInit<Asker>& init)
      : WorkUnit(init), link_(open_channel(streams().communication(0), {1 - init.index.x, 0, 0})) {}
  void start() {
    if (index().x != 0) return;
    out_ = View("out", 4);
    Kokkos::deep_copy(out_, 7.0);
    link_.send(out_, kodo::data_ready, [this] {
      sent_ = true;
      collection()[{1, 0, 0}].send<&Asker::post>();
    });
  }
  void post() {
    in_ = View("in", 4);
    link_.recv(in_, [this] { received_ = in_(3); });
  }
  kodo::Channel link_;
  View out_, in_;
  bool sent_ = false;
  double received_ = 0;
};

TEST(SameNodeRings, PlainChannelsDoNotWaitForARing) {
  auto& rt = test_runtime();
  if (rt.size() == 1) GTEST_SKIP() << "a same-rank send completes only with its receive";
  auto units = kodo::Collection<Asker>::create(rt, {2, 1, 1});  // on two ranks
  units.broadcast_local<&Asker::start>();
  rt.run();
  units.for_each_local([](Asker& u) {
    if (u.index().x == 0) {
      EXPECT_TRUE(u.sent_);
    } else {
      EXPECT_EQ(u.received_, 7.0);
    }
  });
}

// --- what a peer sends is checked ----------------------------------------------------

constexpr std::size_t kSegment = 1 << 20;

RingMessage offer() {
  RingMessage ring{{0, 5, 2, 1}, 7, 1, RingMessage::offer, 128, {}};
  ring.buffers.push_back({256, false, 1024, {}});
  kodo::detail::RingBufferOffer exported{4096, true, 64, {}};
  exported.handle[3] = std::byte{42};
  ring.buffers.push_back(exported);
  return ring;
}

std::string refusal_of(const kodo::detail::Message& m) {
  return error_of([&] { kodo::detail::read_ring_message(m, kSegment); });
}
std::string refusal_of(const RingMessage& ring) {
  return refusal_of(kodo::detail::ring_message(ring, 1));
}

TEST(RingMessages, RoundTrip) {
  const RingMessage sent = offer();
  const RingMessage got =
      kodo::detail::read_ring_message(kodo::detail::ring_message(sent, 1), kSegment);
  EXPECT_EQ(got.link, sent.link);
  EXPECT_EQ(got.number, 7u);
  EXPECT_EQ(got.epoch, 1u);
  EXPECT_EQ(got.route, RingMessage::offer);
  EXPECT_EQ(got.words, 128u);
  ASSERT_EQ(got.buffers.size(), 2u);
  EXPECT_EQ(got.buffers[0].capacity, 256u);
  EXPECT_FALSE(got.buffers[0].exported);
  EXPECT_EQ(got.buffers[0].place, 1024u);
  EXPECT_TRUE(got.buffers[1].exported);
  EXPECT_EQ(got.buffers[1].place, 64u);
  EXPECT_EQ(got.buffers[1].handle, sent.buffers[1].handle);
  RingMessage refusal{sent.link, 7, 1, RingMessage::refusal, 0, {}};
  EXPECT_EQ(kodo::detail::ring_message(refusal, 1).header.target, sent.link.receiver);
  EXPECT_EQ(kodo::detail::read_ring_message(kodo::detail::ring_message(refusal, 1), kSegment).route,
            RingMessage::refusal);
}

TEST(RingMessages, EveryBadFieldIsRefusedByName) {
  auto with = [](auto change) {
    RingMessage r = offer();
    change(r);
    return refusal_of(r);
  };
  EXPECT_NE(with([](RingMessage& r) { r.buffers.clear(); }).find("field count"), std::string::npos);
  EXPECT_NE(with([](RingMessage& r) { r.buffers.resize(65, r.buffers[0]); }).find("field count"),
            std::string::npos);
  EXPECT_NE(with([](RingMessage& r) { r.link.port = -1; }).find("field port"), std::string::npos);
  EXPECT_NE(with([](RingMessage& r) { r.epoch = 0; }).find("field epoch"), std::string::npos);
  EXPECT_NE(with([](RingMessage& r) { r.words = kSegment - 16; }).find("field words"),
            std::string::npos);
  EXPECT_NE(with([](RingMessage& r) { r.words = 12; }).find("field words"), std::string::npos);
  EXPECT_NE(with([](RingMessage& r) { r.words = ~std::uint64_t{0} - 8; }).find("field words"),
            std::string::npos);
  // A slot over the words, beyond the segment, or wrapping around.
  EXPECT_NE(with([](RingMessage& r) { r.buffers[0].place = 128; }).find("overlapping"),
            std::string::npos);
  EXPECT_NE(with([](RingMessage& r) { r.buffers[0].place = kSegment - 64; }).find("field place"),
            std::string::npos);
  EXPECT_NE(with([](RingMessage& r) {
              r.buffers[0].place = 1024;
              r.buffers[0].capacity = ~std::uint64_t{0} - 512;
            }).find("field capacity"),
            std::string::npos);
  EXPECT_NE(with([](RingMessage& r) {
              r.buffers[1].place = std::uint64_t{1} << 60;
            }).find("field place"),
            std::string::npos);
  // Two slots over each other.
  EXPECT_NE(with([](RingMessage& r) {
              r.buffers[1] = r.buffers[0];
              r.buffers[1].place += 64;
            }).find("overlapping"),
            std::string::npos);
  EXPECT_NE(with([](RingMessage& r) { r.route = RingMessage::ucx; }).find("field count"),
            std::string::npos);  // no buffers without an offer
  EXPECT_NE(with([](RingMessage& r) {
              r.route = RingMessage::ucx;
              r.buffers.clear();
            }).find("field words"),
            std::string::npos);
  // Raw edits: a kind beyond 1, a handler beyond 2^32, the wrong target, a cut payload,
  // a route beyond 2.
  auto raw = [](std::size_t at, std::uint32_t value) {
    kodo::detail::Message m = kodo::detail::ring_message(offer(), 1);
    std::memcpy(m.payload.data() + at, &value, sizeof value);
    return refusal_of(m);
  };
  EXPECT_NE(raw(40 + 8, 2).find("field kind"), std::string::npos);
  EXPECT_NE(raw(40 + 12, 1).find("field kind"), std::string::npos);
  EXPECT_NE(raw(24, 3).find("field route"), std::string::npos);
  auto cut = kodo::detail::ring_message(offer(), 1);
  cut.payload.resize(cut.payload.size() - 1);
  EXPECT_NE(refusal_of(cut).find("field length"), std::string::npos);
  auto far = kodo::detail::ring_message(offer(), 1);
  far.header.handler = std::uint64_t{1} << 32;
  EXPECT_NE(refusal_of(far).find("field handler"), std::string::npos);
  auto elsewhere = kodo::detail::ring_message(offer(), 1);
  elsewhere.header.target = 3;
  EXPECT_NE(refusal_of(elsewhere).find("field target"), std::string::npos);
}

TEST(RingMessages, AreRefusedFromRanksOffTheRoute) {
  auto& rt = test_runtime();
  if (rt.size() == 1) GTEST_SKIP() << "needs a peer rank";
  auto units =
      kodo::Collection<Burst>::create(rt, {std::max(3, 2 * rt.size()), 1, 1}, CommMode::device);
  // Each rank poses as the next: an offer naming a receiving unit that rank does not hold.
  RingMessage ring = offer();
  ring.link.collection = units.id();
  ring.link.receiver = 2 * rt.rank() + 1;  // held here (two units per rank), not by `peer`
  ring.link.sender = 2 * rt.rank();
  const int peer = (rt.rank() + 1) % rt.size();
  kodo::detail::Message m = kodo::detail::ring_message(ring, peer);
  std::vector<std::byte> header(sizeof m.header);
  std::memcpy(header.data(), &m.header, sizeof m.header);
  const std::string why =
      error_of([&] { kodo::detail::TestAccess::receive(rt, header, m.payload); });
  EXPECT_NE(why.find("which that rank does not hold"), std::string::npos) << why;
  rt.run();
}

// --- a peer that exits ---------------------------------------------------------------

TEST(ProcessAlive, SeesAChildExitBeforeAndAfterItIsReaped) {
  EXPECT_TRUE(kodo::detail::process_alive(getpid()));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(3);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (kodo::detail::process_alive(child) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(kodo::detail::process_alive(child)) << "an exited (unreaped) child looks alive";
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_FALSE(kodo::detail::process_alive(child));
}

}  // namespace
