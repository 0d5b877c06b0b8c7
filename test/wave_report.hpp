// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// For the test programs that alter a rank's report to the termination wave as it leaves
// the rank (their own MPI_Iallreduce): whether an allreduce carries one.

#include <kodo/tasking/scheduling/detail/termination.hpp>

#include <mpi.h>

// Whether MPI_Iallreduce(send, _, count, type, _, comm, _) sends a wave's report: the
// report's values, as kodo::detail::TerminationDetector lays them out for `comm`'s ranks.
inline bool is_wave_report(int count, MPI_Datatype type, MPI_Comm comm) {
  int bytes = 0, ranks = 0;
  MPI_Type_size(type, &bytes);
  MPI_Comm_size(comm, &ranks);
  return count == 1 && bytes == kodo::detail::TerminationDetector::report_values(ranks) * 8;
}
