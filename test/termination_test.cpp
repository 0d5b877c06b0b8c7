// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The termination detector (tasking/scheduling/detail/termination.hpp): the job is quiet only when
// two equal waves balance, and a message processed that nobody sent is an error, not a wait.

#include <kodo/tasking/scheduling/detail/termination.hpp>

#include "test_runtime.hpp"

#include <kodo/core/error.hpp>

#include <gtest/gtest.h>

#include <string>

namespace {

kodo::detail::TerminationDetector::Wave wave_of(kodo::detail::TerminationDetector& d,
                                                std::uint64_t rounds, bool dirty) {
  for (;;)
    if (auto w = d.test(rounds, dirty)) return *w;
}

TEST(TerminationDetector, QuietOnlyWhenTwoEqualWavesBalance) {
  MPI_Comm comm;
  MPI_Comm_dup(test_runtime().comm(), &comm);
  const auto ranks = static_cast<std::uint64_t>(test_runtime().size());
  {
    kodo::detail::TerminationDetector d(comm);
    d.count_sent();  // one message in flight from every rank
    auto w = wave_of(d, 0, false);
    EXPECT_EQ(w.sent, ranks);
    EXPECT_EQ(w.processed, 0u);
    EXPECT_FALSE(w.stable);
    EXPECT_FALSE(wave_of(d, 0, false).quiet());  // stable, but not balanced
    d.count_processed();
    EXPECT_FALSE(wave_of(d, 0, false).quiet());  // balanced, but changed since the last wave
    EXPECT_TRUE(wave_of(d, 0, false).quiet());
    EXPECT_FALSE(wave_of(d, 0, true).quiet());  // a rank with streams to drain
    const auto rounds = wave_of(d, 2, false);
    EXPECT_EQ(rounds.pending_rounds, 2 * ranks);
    // A message processed that nobody sent never balances: stable waves say so.
    d.count_processed();
    wave_of(d, 0, false);
    const auto over = wave_of(d, 0, false);
    EXPECT_TRUE(over.overprocessed());
    EXPECT_FALSE(over.quiet());
  }
  MPI_Comm_free(&comm);
}

// A rank that reports -1 pending rounds (its count wrapped) would cancel another's
// incomplete round: every rank throws the same error in that wave, naming the liar.
TEST(TerminationDetector, AReportBelowZeroIsAnErrorOnEveryRank) {
  const int ranks = test_runtime().size();
  if (ranks < 2) GTEST_SKIP() << "a lie needs another rank to cancel";
  MPI_Comm comm;
  MPI_Comm_dup(test_runtime().comm(), &comm);
  {
    kodo::detail::TerminationDetector d(comm);
    const int rank = test_runtime().rank();
    const std::uint64_t mine = rank == 0 ? 1 : rank == ranks - 1 ? ~std::uint64_t{0} : 0;
    try {
      wave_of(d, mine, false);
      ADD_FAILURE() << "the wave was believed";
    } catch (const kodo::Error& e) {
      EXPECT_NE(std::string(e.what()).find(kodo::detail::cat(
                    "rank ", ranks - 1,
                    "'s report to the termination wave does not add up: its field "
                    "pending_rounds is -1")),
                std::string::npos)
          << e.what();
    }
  }
  MPI_Comm_free(&comm);
}

// A rank that counts one message more processed than was sent to it, while a message to
// rank 0 is in flight: the sums balance, but rank 0 says in the next wave that it has not
// processed what was sent to it. Two such equal waves are an error on every rank, naming
// the rank that counts more than was sent to it, not the end of the job.
TEST(TerminationDetector, AnOvercountCannotCoverAMessageInFlight) {
  const int ranks = test_runtime().size();
  if (ranks < 2) GTEST_SKIP() << "a lie needs another rank's message to cover";
  MPI_Comm comm;
  MPI_Comm_dup(test_runtime().comm(), &comm);
  {
    kodo::detail::TerminationDetector d(comm);
    const int rank = test_runtime().rank();
    if (rank == 0) d.count_sent();               // in flight, to itself
    if (rank == ranks - 1) d.count_processed();  // the lie
    try {
      for (int w = 0; w < 3; ++w) EXPECT_FALSE(wave_of(d, 0, false).quiet());
      ADD_FAILURE() << "the waves were believed";
    } catch (const kodo::Error& e) {
      EXPECT_NE(std::string(e.what()).find(kodo::detail::cat(
                    "rank ", ranks - 1,
                    "'s report to the termination wave does not add up: its field processed is "
                    "1, but the ranks count 0 message(s) and event(s) sent to it")),
                std::string::npos)
          << e.what();
    }
  }
  MPI_Comm_free(&comm);
}

}  // namespace
