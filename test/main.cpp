// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Test driver: one kodo::Runtime for the whole process, so the same binary runs on one
// rank or under mpiexec. A failure on any rank aborts the job at once: the other ranks
// would otherwise wait in a collective step that the failed rank has left.

#include "test_runtime.hpp"

#include <gtest/gtest.h>

#include <cstdio>

namespace {

kodo::Runtime* the_runtime = nullptr;

class AbortOnFailure : public testing::EmptyTestEventListener {
 public:
  explicit AbortOnFailure(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (r.failed())
      kodo::print_error(kodo::detail::cat("[rank ", rank_, "] ",
                                          r.file_name() ? r.file_name() : "?", ":", r.line_number(),
                                          ": ", r.summary()));
  }
  void OnTestEnd(const testing::TestInfo& info) override {
    if (!info.result()->Failed()) return;
    std::fprintf(stderr, "[rank %d] FAILED %s.%s: aborting the job\n", rank_,
                 info.test_suite_name(), info.name());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

 private:
  int rank_;
};

}  // namespace

kodo::Runtime& test_runtime() { return *the_runtime; }

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  kodo::Runtime runtime(argc, argv);
  the_runtime = &runtime;
  auto& listeners = testing::UnitTest::GetInstance()->listeners();
  if (runtime.rank() != 0) delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new AbortOnFailure(runtime.rank()));
  const int rc = RUN_ALL_TESTS();
  the_runtime = nullptr;
  return rc;
}
