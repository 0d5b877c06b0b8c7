// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Which UCX transports a job's ranks talk over, said once at start-up: within a node and
// between nodes, as rank 0's endpoints to one rank of each kind use them. A job across
// nodes whose UCX has no network transport but TCP (Spack's default ucx, a UCX built
// without verbs) would run at a fraction of the fabric's speed without a word: it is
// warned about.

#include <kodo/comm/detail/ucx_transport.hpp>

#include <mpi.h>

#include <string>
#include <vector>

namespace kodo::detail {

// Rank 0's endpoints to the first other rank of its node and the first rank of another
// node: the rank (-1: there is none) and its transports (UcxTransport::transports_to).
struct TransportsInUse {
  int same_node_peer = -1;
  std::string same_node;
  int other_node_peer = -1;
  std::string other_node;
};

// Collective over `comm` (every rank calls it; only rank 0's answer is filled in).
TransportsInUse transports_in_use(UcxTransport& transport, MPI_Comm comm);

// Rank 0's start-up lines on them: the transports, then a warning when the transports
// between nodes are TCP alone. None for a job of one rank.
std::vector<std::string> describe_transports(const TransportsInUse& in_use);

}  // namespace kodo::detail
