// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The words of a same-node ring that its sender writes into the receiver's shared
// memory: the count of transfers published and each buffer's size. Each rank writes its
// own receiving end's words as the peer would (the peer's end sends nothing here) and
// polls, as its loop does. The count may only grow, by no more than the buffers
// released; each size must fit the receive. A valid publication lands every transfer in
// order with its data; a spoilt one is refused exactly, and transfers before a spoilt
// size land first. Host backend: the buffers are in shared memory.

#include "../test_access.hpp"
#include "fuzz.hpp"

#include <kodo/comm/detail/channel_end.hpp>

#include <stdexcept>

namespace fuzz {

using kodo::detail::cat;

namespace {

constexpr std::int64_t kCapacity = 16;  // doubles in each of the ring's buffers
constexpr std::uint64_t kBuffers = 3;

class Ringed : public kodo::WorkUnit<Ringed> {
 public:
  using View = Kokkos::View<double*>;
  struct Landed {
    std::uint64_t transfer;
    std::vector<double> data;
  };

  explicit Ringed(const kodo::UnitInit<Ringed>& init)
      : WorkUnit(init), stream_(&streams().communication(0)) {
    link_ = open_channel(*stream_, {1 - index().x, 0, 0});
    ring_ = link_.open_ring(
        std::vector{View("a", kCapacity), View("b", kCapacity), View("c", kCapacity)},
        [this](const kodo::Arrival<View>& a) {
          auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a.view);
          landed.push_back({a.transfer, std::vector<double>(host.data(), host.data() + a.count)});
          ring_.release(a.transfer);
        });
  }

  std::vector<Landed> landed;

 private:
  kodo::Stream* stream_;
  kodo::Channel link_;
  kodo::ReceiveRing<View> ring_;
};

// The rank's channel host as an end sees it, but a fault found with the peer (a ring's
// words or sizes) is a kodo::Error thrown where it is found instead of the end of the
// job, so that many spoilt publications can be tried in one process. It stands in for
// the host of one end while it lives.
class ThrowingHost final : public kodo::detail::ChannelHost {
 public:
  explicit ThrowingHost(kodo::detail::ChannelEnd& end) : end_(end), host_(*end.host) {
    end_.host = this;
  }
  ~ThrowingHost() { end_.host = &host_; }
  ThrowingHost(const ThrowingHost&) = delete;
  ThrowingHost& operator=(const ThrowingHost&) = delete;

  [[noreturn]] void fail_with_peer(int, const std::string& what) override {
    throw kodo::Error(what);
  }
  int rank() const override { return host_.rank(); }
  void expect_event() override { host_.expect_event(); }
  void expect_event(int rank) override { host_.expect_event(rank); }
  void queue_callback(std::function<void()> callback) override {
    host_.queue_callback(std::move(callback));
  }
  void queue_callback(std::function<void(std::size_t)> callback, std::size_t value) override {
    host_.queue_callback(std::move(callback), value);
  }
  void when_done(kodo::Stream& stream, std::function<void()> continuation) override {
    host_.when_done(stream, std::move(continuation));
  }
  void post(int rank, kodo::detail::Message&& message) override {
    host_.post(rank, std::move(message));
  }
  kodo::detail::UcxTransport& transport() override { return host_.transport(); }
  kodo::detail::NodeChannels* node() override { return host_.node(); }
  kodo::detail::ChannelRegistry& channels() override { return host_.channels(); }
  kodo::detail::ViewPool& pool() override { return host_.pool(); }
  kodo::detail::TransportStaging& transport_staging() override { return host_.transport_staging(); }
  kodo::detail::Recording* recording() override { return host_.recording(); }

 private:
  kodo::detail::ChannelEnd& end_;
  kodo::detail::ChannelHost& host_;
};

}  // namespace

Tally fuzz_ring_words(Context& c) {
  Tally t("ring_words", c.self(), {});
  auto units = kodo::Collection<Ringed>::create(c.runtime, {2, 1, 1});
  c.runtime.run();  // the links announced, the rings offered and mapped
  kodo::detail::ChannelEnd* end = nullptr;
  for (auto* e : kodo::detail::TestAccess::channels(c.runtime).node_ends)
    if (e->node_in && e->link.collection == units.id()) end = e;
  if (!end || end->node_in->slots.size() != kBuffers || !end->node_in->slots[0]) {
    t.fail(
        "the ring does not take the same-node route with its buffers in shared memory "
        "(KODO_CHANNELS=ucx, or a device build?)");
    return t;
  }
  Ringed* unit = nullptr;
  units.for_each_local([&](Ringed& u) { unit = &u; });
  auto& in = *end->node_in;
  const std::string link = end->describe(false);
  const std::uint64_t capacity = kCapacity * sizeof(double);
  std::uint64_t landed = 0, seen = 0;  // transfers landed; the count as last taken
  ThrowingHost throwing(*end);         // until the fuzz ends

  while (c.more(t)) {
    // A publication: transfers landed .. arrived - 1, each with its data and size.
    const std::uint64_t low = std::max(landed, seen);
    std::uint64_t arrived =
        low + static_cast<std::uint64_t>(c.pick(0, static_cast<int>(landed + kBuffers - low)));
    std::vector<std::vector<double>> data;
    for (std::uint64_t k = landed; k < arrived; ++k) {
      std::vector<double> d(static_cast<std::size_t>(c.pick(0, kCapacity)));
      for (double& x : d) x = static_cast<double>(c.word() >> 11);
      const std::size_t b = k % kBuffers;
      if (!d.empty()) std::memcpy(in.slots[b], d.data(), d.size() * sizeof(double));
      kodo::detail::store_word(in.words + kodo::detail::kSizeWords + 8 * b,
                               d.size() * sizeof(double));
      data.push_back(std::move(d));
    }
    Expect expect = Expect::accept();
    // Not "rank R did it" (issue 54: a third rank writing the ring made the error blame
    // the honest sender): every rank of the node can write these words.
    const std::string whose = cat(" (rank ", c.peer(), " broke the same-node protocol, or another ",
                                  "process of this node wrote the ring's words)");
    std::uint64_t lands = arrived;  // transfers below it land
    bool taken = true;              // the count passes its checks (sizes come after)
    switch (c.pick(0, 5)) {
      case 0:  // beyond the buffers released
        arrived = landed + kBuffers + 1 +
                  (c.pick(0, 1) ? static_cast<std::uint64_t>(c.pick(0, 9)) : c.word() >> 1);
        expect = Expect::refuse(cat("kodo: ", link, ": the count of transfers published from rank ",
                                    c.peer(), " says transfer ", arrived - 1, " into a ring of ",
                                    kBuffers, " buffers that had released transfers up to ",
                                    static_cast<std::int64_t>(landed) - 1, " only", whose));
        lands = landed;
        taken = false;
        break;
      case 1:  // back below the count already taken
        if (seen == 0) break;
        arrived = static_cast<std::uint64_t>(c.pick(0, static_cast<int>(seen) - 1));
        expect = Expect::refuse(cat("kodo: ", link, ": the count of transfers published from rank ",
                                    c.peer(), " went back from ", seen, " to ", arrived, whose));
        lands = landed;
        taken = false;
        break;
      case 2: {  // a size that does not fit the receive
        if (arrived == landed) break;
        const std::uint64_t bad =
            landed + static_cast<std::uint64_t>(c.pick(0, static_cast<int>(arrived - landed) - 1));
        const bool split = c.pick(0, 1) == 0;
        const std::uint64_t bytes =
            split ? static_cast<std::uint64_t>(c.pick(0, kCapacity - 1)) * 8 +
                        static_cast<std::uint64_t>(c.pick(1, 7))
                  : capacity + 1 +
                        (c.pick(0, 1) ? static_cast<std::uint64_t>(c.pick(0, 64)) : c.word() >> 1);
        kodo::detail::store_word(in.words + kodo::detail::kSizeWords + 8 * (bad % kBuffers), bytes);
        expect = Expect::refuse(cat("kodo: ", link, ": transfer ", bad, ", a message of ", bytes,
                                    " bytes ",
                                    bytes > capacity ? "does not fit"
                                                     : "is not a whole number of elements of",
                                    " the receiving view of ", capacity, " bytes"));
        lands = bad;
        break;
      }
      default: break;
    }
    kodo::detail::store_word(in.words + kodo::detail::kArrivedWord, arrived);
    const std::size_t before = unit->landed.size();
    t.check(expect, [&] { kodo::detail::TestAccess::poll_node_links(c.runtime); });
    // What landed (also before a refusal): transfers landed .. lands - 1, whole.
    if (unit->landed.size() - before != lands - landed) {
      t.fail(cat(unit->landed.size() - before, " transfers landed where ", lands - landed,
                 " should"));
      break;
    }
    for (std::uint64_t k = landed; k < lands; ++k) {
      const auto& got = unit->landed[before + (k - landed)];
      if (got.transfer != k || got.data != data[k - landed]) {
        t.fail(cat("transfer ", k, " landed as transfer ", got.transfer, " with ", got.data.size(),
                   " elements, not as published"));
        break;
      }
    }
    if (taken) seen = arrived;
    landed = lands;
    if (t.failures() != 0) break;
  }
  return t;
}

}  // namespace fuzz
