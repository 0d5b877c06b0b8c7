// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Tagged transfers aimed at a link by a rank that is not its sender (3 ranks, channels
// over UCX: KODO_CHANNELS=ucx). Unit 0 (rank 0) and unit 2 (rank 2) each send to unit 1
// (rank 1) over their own link; before each of its rounds, rank 2 sends rank 1 junk with
// the tags it could make: near the link numbers rank 1 gave it (a numbering by counter
// would hand out its neighbours to rank 0's link), and random ones. No junk may land in
// a receive: every transfer of both links must arrive whole, with its own data, and every
// junk message must be dropped by rank 1's loop (ChannelRegistry::stray_messages) or still
// be unmatched at the end (rank 1 then takes them out of UCX with receives of their exact
// tags). Rank 2 sends at most half the junk a rank drops before it ends the job.

#include "../test_access.hpp"
#include "fuzz.hpp"

#include <kodo/comm/detail/channel_end.hpp>

#include <algorithm>
#include <deque>
#include <memory>

namespace fuzz {

using kodo::detail::cat;

namespace {

constexpr int kTransfers = 8;  // per link and round
constexpr long kJunk = kodo::detail::kMostStrayMessages / 2;

double value(std::int64_t from, int round, int k, std::int64_t i) {
  return from * 1e6 + round * 1e3 + k * 10.0 + static_cast<double>(i) * 0.5;
}
std::int64_t length(int round, int k) { return 1 + (round * 7 + k * 3) % 24; }

class Tagged : public kodo::WorkUnit<Tagged> {
 public:
  explicit Tagged(const kodo::UnitInit<Tagged>& init)
      : WorkUnit(init), stream_(&streams().communication(0)) {
    if (me() == 1) {
      from_[0] = open_channel(*stream_, {0, 0, 0}, kodo::CommMode::host_staged);
      from_[1] = open_channel(*stream_, {2, 0, 0}, kodo::CommMode::host_staged);
    } else {
      to_receiver_ = open_channel(*stream_, {1, 0, 0}, kodo::CommMode::host_staged);
    }
  }
  std::int64_t me() const { return index().x; }

  void receive(int round) {
    for (int link = 0; link < 2; ++link)
      for (int k = 0; k < kTransfers; ++k) {
        Kokkos::View<double*, Kokkos::HostSpace> into("into", length(round, k));
        from_[link].recv(into, [this, into, link, round, k](std::size_t count) {
          const std::int64_t from = link == 0 ? 0 : 2;
          bool whole = count == static_cast<std::size_t>(into.extent(0));
          for (std::int64_t i = 0; whole && i < length(round, k); ++i)
            whole = into(i) == value(from, round, k, i);
          arrivals.push_back(whole);
        });
      }
  }
  void send(int round) {
    for (int k = 0; k < kTransfers; ++k) {
      Kokkos::View<double*, Kokkos::HostSpace> out("out", length(round, k));
      for (std::int64_t i = 0; i < length(round, k); ++i) out(i) = value(me(), round, k, i);
      to_receiver_.send(out, kodo::data_ready, [] {});
    }
  }

  kodo::Stream* stream_;
  kodo::Channel from_[2], to_receiver_;
  std::vector<bool> arrivals;  // each transfer: landed whole with its own data
};

}  // namespace

Tally fuzz_channel_tags(Context& c) {
  Tally t("channel_tags", c.self(), {}, false);
  auto units = kodo::Collection<Tagged>::create(c.runtime, {3, 1, 1});
  std::deque<std::vector<double>> junk_data;  // kept until the job ends (eager sends)
  kodo::detail::UcxTransport& transport = kodo::detail::TestAccess::transport(c.runtime);
  long junk_sent = 0, junk_done = 0;
  int go = 1;
  for (int round = 0; go; ++round) {
    units.for_each_local([&](Tagged& u) {
      if (u.me() == 1)
        u.receive(round);
      else if (u.me() == 0)
        u.send(round);
    });
    if (c.self() == 2) {
      std::vector<std::uint32_t> given;  // the numbers rank 1 gave rank 2's links
      for (const auto& [link, number] : kodo::detail::TestAccess::channels(c.runtime).send_numbers)
        given.push_back(number);
      for (int n = 0; n < 64 && junk_sent < kJunk && c.more(t); ++n) {
        std::uint64_t tag = c.word();
        if (!given.empty() && c.pick(0, 3) != 0) {
          const std::uint64_t near =
              given[static_cast<std::size_t>(c.pick(0, static_cast<int>(given.size()) - 1))] +
              static_cast<std::uint64_t>(c.pick(1, 16)) * (c.pick(0, 1) ? 1 : ~std::uint64_t{0});
          tag = ((near & kodo::detail::kTransferMask) << kodo::detail::kNumberBits) |
                static_cast<std::uint64_t>(c.pick(0, 4 * kTransfers));
        }
        junk_data.emplace_back(static_cast<std::size_t>(c.pick(0, 24)), -1.0);
        t.check(Expect::accept(), [&] {
          transport.tag_send(1, tag,
                             {junk_data.back().data(), junk_data.back().size() * sizeof(double),
                              kodo::detail::MemoryKind::host},
                             [&junk_done](ucs_status_t, std::size_t) { ++junk_done; });
          ++junk_sent;
        });
      }
      units.for_each_local([&](Tagged& u) { u.send(round); });
    }
    c.runtime.run();
    go = c.more(t) ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &go, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  }
  units.for_each_local([&](Tagged& u) {
    for (std::size_t a = 0; a < u.arrivals.size(); ++a)
      t.check_text("whole", u.arrivals[a] ? "whole" : "junk or a wrong transfer", true);
  });
  while (junk_done < junk_sent) transport.progress();
  long junk = junk_sent;  // by every rank
  MPI_Allreduce(MPI_IN_PLACE, &junk, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (c.self() == 1) {
    auto unmatched =
        static_cast<long>(kodo::detail::TestAccess::channels(c.runtime).stray_messages);
    auto buffer = std::make_shared<std::vector<std::byte>>();
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (unmatched < junk && std::chrono::steady_clock::now() < until) {
      transport.progress();
      while (const auto waiting = transport.probe(0, 0)) {
        buffer->resize(std::max<std::size_t>(waiting->second, 1));
        transport.tag_recv(waiting->first,
                           {buffer->data(), waiting->second, kodo::detail::MemoryKind::host},
                           [&unmatched, buffer](ucs_status_t, std::size_t) { ++unmatched; });
        transport.progress();
      }
    }
    t.check_text(cat(junk, " junk messages dropped or unmatched"),
                 cat(unmatched, " junk messages dropped or unmatched"), true);
  }
  return t;
}

}  // namespace fuzz
