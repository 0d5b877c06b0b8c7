// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The start-up lines on UCX's transports (comm/detail/transport_report.hpp): what they say
// within a node and between nodes, and the warning for TCP alone between nodes.

#include <kodo/comm/detail/transport_report.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using kodo::detail::describe_transports;
using kodo::detail::TransportsInUse;

TEST(TransportReport, NothingForOneRank) { EXPECT_TRUE(describe_transports({}).empty()); }

TEST(TransportReport, NamesTheTransportsWithinANodeAndBetweenNodes) {
  const auto one_node = describe_transports({1, "sysv/memory cma/memory", -1, ""});
  ASSERT_EQ(one_node.size(), 1u);
  EXPECT_EQ(one_node[0],
            "kodo: UCX transports: within a node (rank 0 to 1) sysv/memory cma/memory");
  const auto two_nodes =
      describe_transports({1, "cuda_ipc/cuda", 6, "rc_mlx5/mlx5_0:1 cuda_copy/cuda"});
  ASSERT_EQ(two_nodes.size(), 1u);
  EXPECT_EQ(two_nodes[0],
            "kodo: UCX transports: within a node (rank 0 to 1) cuda_ipc/cuda; between nodes "
            "(rank 0 to 6) rc_mlx5/mlx5_0:1 cuda_copy/cuda");
  const auto one_per_node = describe_transports({-1, "", 1, "dc_mlx5/mlx5_0:1"});
  ASSERT_EQ(one_per_node.size(), 1u);
  EXPECT_EQ(one_per_node[0], "kodo: UCX transports: between nodes (rank 0 to 1) dc_mlx5/mlx5_0:1");
  EXPECT_EQ(describe_transports({1, "", -1, ""})[0],
            "kodo: UCX transports: within a node (rank 0 to 1) (none reported)");
}

TEST(TransportReport, WarnsOnceWhenNodesTalkOverTcpAlone) {
  const auto tcp = describe_transports({1, "sysv/memory", 4, "tcp/eth0 tcp/ib0"});
  ASSERT_EQ(tcp.size(), 2u);
  EXPECT_NE(tcp[1].find("kodo: warning: UCX moves data between nodes over TCP alone"),
            std::string::npos);
  // TCP beside a fabric transport, TCP within a node, and a transport whose name only
  // starts with "tcp" are no warning.
  EXPECT_EQ(describe_transports({1, "sysv/memory", 4, "tcp/eth0 rc_verbs/mlx5_0:1"}).size(), 1u);
  EXPECT_EQ(describe_transports({1, "tcp/lo", -1, ""}).size(), 1u);
  EXPECT_EQ(describe_transports({-1, "", 1, "tcpx/eth0"}).size(), 1u);
}

}  // namespace
