// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/detail/termination.hpp>

#include <kodo/core/agree.hpp>

namespace kodo::detail {

TerminationDetector::~TerminationDetector() {
  // A wave left in flight by a run() that threw on every rank completes on every rank.
  if (wave_ != MPI_REQUEST_NULL) MPI_Wait(&wave_, MPI_STATUS_IGNORE);
}

std::optional<TerminationDetector::Wave> TerminationDetector::test(std::uint64_t pending_rounds,
                                                                   bool dirty, bool idle,
                                                                   std::uint64_t tasks,
                                                                   std::uint64_t parked) {
  if (wave_ == MPI_REQUEST_NULL) {
    in_ = {sent_, processed_, pending_rounds, dirty ? 1u : 0u, idle ? 1u : 0u, tasks, parked};
    check_mpi(MPI_Iallreduce(in_.data(), out_.data(), static_cast<int>(in_.size()), MPI_UINT64_T,
                             MPI_SUM, comm_, &wave_),
              "MPI_Iallreduce");
  }
  int done = 0;
  check_mpi(MPI_Test(&wave_, &done, MPI_STATUS_IGNORE), "MPI_Test");
  if (!done) return std::nullopt;
  const bool stable = have_previous_ && out_ == previous_;
  previous_ = out_;
  have_previous_ = true;
  return Wave{out_[0], out_[1], out_[2], out_[3], out_[4], out_[5], out_[6], stable};
}

void TerminationDetector::reset() { have_previous_ = false; }

}  // namespace kodo::detail
