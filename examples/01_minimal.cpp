// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Tutorial 1: a work unit and a collection.
//
// A kodo program is one main program that every MPI rank runs, and many work units that
// the ranks share: here a collection of 4 x 3 x 2 units, each contributing its index to a
// sum that every rank's main program reads at the end (0 + 1 + ... + 23 = 276).
//
//   mpiexec -n 2 minimal
#include <kodo/kodo.hpp>  // all of kodo: one include

#include <cstdio>

// 1. A work unit is a class deriving from kodo::WorkUnit<itself>. Its constructor takes
//    the kodo::UnitInit the runtime hands it (the unit's index and its collection's
//    shape) and passes it on; whatever else it needs comes after.
struct Part : kodo::WorkUnit<Part> {
  explicit Part(const kodo::UnitInit<Part>& init) : WorkUnit(init) {}

  // 2. An entry method is an ordinary member function that others invoke on the unit,
  //    from any rank; it runs later, on the rank that holds the unit. This one
  //    contributes the unit's linear index to a reduction (a sum, kodo::Sum).
  void start() { contribute(collection().shape().linear(index()), kodo::Sum{}); }
};

int main(int argc, char** argv) {
  // 3. The runtime starts MPI, Kokkos and UCX, and places this rank on its GPU (or CPUs).
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(
          "usage: minimal\n"
          "Sums the indices (0 to 23) of a collection's 24 work units with a reduction.\n"))
    return 0;
  // 4. Every rank creates the collection alike; each builds the units it holds.
  auto parts = kodo::Collection<Part>::create(runtime, {4, 3, 2});
  // 5. Invoke an entry method: broadcast_local reaches the units this rank holds, so
  //    called on every rank it starts every unit once, with no message between ranks.
  parts.broadcast_local<&Part::start>();
  // 6. run() works until the whole job is quiet: every call made, every reduction done.
  runtime.run();
  // 7. The reduction's result, on every rank.
  std::int64_t sum = parts.reduced<std::int64_t>();
  if (runtime.rank() == 0)
    std::printf("minimal: sum of unit indices = %lld\n", static_cast<long long>(sum));
  return sum == 23 * 24 / 2 ? 0 : 1;
}
