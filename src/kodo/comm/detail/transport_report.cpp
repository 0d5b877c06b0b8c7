// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The start-up lines on UCX's transports (transport_report.hpp).
#include <kodo/comm/detail/transport_report.hpp>

#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/core/error.hpp>

#include <sstream>

namespace kodo::detail {

TransportsInUse transports_in_use(UcxTransport& transport, MPI_Comm comm) {
  int rank = 0, size = 1;
  KODO_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  KODO_MPI_CHECK(MPI_Comm_size(comm, &size));
  // A rank's node, named by the lowest rank on it: rank 0 learns every rank's.
  MPI_Comm node = MPI_COMM_NULL;
  KODO_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  int leader = rank;
  KODO_MPI_CHECK(MPI_Allreduce(&rank, &leader, 1, MPI_INT, MPI_MIN, node));
  KODO_MPI_CHECK(MPI_Comm_free(&node));
  std::vector<int> leaders(rank == 0 ? size : 0);
  KODO_MPI_CHECK(MPI_Gather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, 0, comm));
  TransportsInUse in_use;
  if (rank != 0) return in_use;
  for (int r = 1; r < size; ++r) {
    int& peer = leaders[r] == 0 ? in_use.same_node_peer : in_use.other_node_peer;
    if (peer < 0) peer = r;
  }
  if (in_use.same_node_peer >= 0) in_use.same_node = transport.transports_to(in_use.same_node_peer);
  if (in_use.other_node_peer >= 0)
    in_use.other_node = transport.transports_to(in_use.other_node_peer);
  return in_use;
}

namespace {

// Whether every transport named is TCP (UCX's "tcp"; its device, e.g. "tcp/eth0").
bool tcp_alone(const std::string& transports) {
  std::istringstream words(transports);
  std::string word;
  bool any = false;
  while (words >> word) {
    if (word.substr(0, word.find('/')) != "tcp") return false;
    any = true;
  }
  return any;
}

std::string named(const std::string& transports) {
  return transports.empty() ? "(none reported)" : transports;
}

}  // namespace

std::vector<std::string> describe_transports(const TransportsInUse& in_use) {
  if (in_use.same_node_peer < 0 && in_use.other_node_peer < 0) return {};
  std::string line = "kodo: UCX transports: ";
  if (in_use.same_node_peer >= 0)
    line += cat("within a node (rank 0 to ", in_use.same_node_peer, ") ", named(in_use.same_node));
  if (in_use.other_node_peer >= 0)
    line += cat(in_use.same_node_peer >= 0 ? "; " : "", "between nodes (rank 0 to ",
                in_use.other_node_peer, ") ", named(in_use.other_node));
  std::vector<std::string> lines{line};
  if (in_use.other_node_peer >= 0 && tcp_alone(in_use.other_node))
    lines.push_back(
        "kodo: warning: UCX moves data between nodes over TCP alone, far below an InfiniBand "
        "or RoCE fabric's speed: a UCX with verbs (rc, dc, ud) is needed there "
        "(docs/building.md, \"Installing with Spack\"; UCX_TLS must not leave them out)");
  return lines;
}

}  // namespace kodo::detail
