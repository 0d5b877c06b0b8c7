// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Sums the unit indices of a collection through a kodo reduction; exits non-zero on a
// wrong answer.
#include <kodo/kodo.hpp>

#include <cstdio>

struct Part : kodo::WorkUnit<Part> {
  explicit Part(const kodo::UnitInit<Part>& init, long* result) : WorkUnit(init), result(result) {}
  void start() { contribute<&Part::done>(collection().shape().linear(index()), kodo::Sum{}); }
  void done(std::int64_t sum) { *result = sum; }
  long* result;
};

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  long result = -1;
  auto parts = kodo::Collection<Part>::create(runtime, {4, 3, 2}, &result);
  parts.broadcast_local<&Part::start>();
  runtime.run();
  if (runtime.rank() == 0) std::printf("consumer: sum of unit indices = %ld\n", result);
  return result == 24 * 23 / 2 ? 0 : 1;
}
