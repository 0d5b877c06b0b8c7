// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The UCX transport (comm/detail/ucx_transport.hpp): who sent a message is what its
// connection says. A message whose header names another rank than the one whose
// connection it came over, or that names no connection, is refused before anything
// reads it (issue 31: a partial claiming to come from a child gave every unit 1002
// instead of 3). On 1, 2 and 4 ranks under ctest.

#include "component_units.hpp"
#include "expect_error.hpp"
#include "test_access.hpp"
#include "test_runtime.hpp"

#include <kodo/comm/detail/wire.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

using component_units::Tallied;
using component_units::TallySum;
using kodo::detail::MessageHeader;
using kodo::detail::MessageKind;
using kodo::detail::TestAccess;

std::vector<std::byte> bytes_of(const MessageHeader& h) {
  std::vector<std::byte> b(sizeof h);
  std::memcpy(b.data(), &h, sizeof h);
  return b;
}

TEST(UcxTransport, AMessageIsFromTheRankWhoseConnectionItCameOver) {
  auto& rt = test_runtime();
  if (rt.size() < 2) GTEST_SKIP() << "needs another rank";
  auto units = kodo::Collection<Tallied>::create(rt, {rt.size(), 1, 1});  // unit r on rank r
  const int claimed = (rt.rank() + 1) % rt.size();
  using Total = kodo::detail::Entry<Tallied, &Tallied::total>;
  kodo::detail::Message m;
  m.header = {MessageKind::invoke, units.id(), Total::id, rt.rank(), claimed};
  Total::serialize(m, std::int64_t{7});
  const std::vector<std::byte> header = bytes_of(m.header),
                               data(m.payload.begin(), m.payload.end());

  // No connection named (a sender without UCX's reply flag): refused.
  {
    ucp_am_recv_param_t none{};
    EXPECT_ERROR(TestAccess::receive_with(rt, header, data, none), "sender is unknown");
  }
  // Over a third rank's connection: refused, naming both.
  if (rt.size() > 2) {
    const int other = (rt.rank() + 2) % rt.size();
    EXPECT_ERROR(TestAccess::receive(rt, header, data, other),
                 kodo::detail::cat("field source_rank says rank ", claimed,
                                   ", but it came over the connection of rank ", other));
    // A reduction partial likewise, before the reduction tree sees it.
    const MessageHeader partial{MessageKind::reduction_partial, units.id(), TallySum::id, 0,
                                claimed};
    std::vector<std::byte> value(8);
    EXPECT_ERROR(TestAccess::receive(rt, bytes_of(partial), value, other),
                 "but it came over the connection of rank");
  }
  // Over its own connection: taken.
  EXPECT_EQ(TestAccess::receive(rt, header, data), 1);
  units.for_each_local([](Tallied& u) { EXPECT_EQ(u.totals, std::vector<std::int64_t>{7}); });
  rt.run();
}

}  // namespace
