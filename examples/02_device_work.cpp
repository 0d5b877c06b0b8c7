// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Tutorial 2: device work on a unit's stream, awaited without blocking the rank.
//
// Each unit fills a view and sums it with Kokkos kernels on one of the rank's compute
// streams, and checks the sum once when_done reports that the stream has done that work.
// Until then the rank's scheduler is free to run other units: nothing fences.
//
//   mpiexec -n 2 device_work
#include <kodo/kodo.hpp>

#include <cstdio>

constexpr std::int64_t kValues = 1000;

class Block : public kodo::WorkUnit<Block> {
 public:
  explicit Block(const kodo::UnitInit<Block>& init)
      : WorkUnit(init), values_("values", kValues), sum_("sum") {}

  void start() {
    const std::int64_t me = collection().shape().linear(index());
    // 1. A stream: the rank's units share its streams (kodo::Stream, a Kokkos
    //    execution-space instance); kernels go to its space().
    kodo::Stream& stream = streams().compute(me);
    const Kokkos::RangePolicy<kodo::ExecutionSpace> all(stream.space(), 0, kValues);
    // 2. Ordinary Kokkos kernels on that space; they capture views, not the unit.
    auto values = values_;
    Kokkos::parallel_for("fill", all, KOKKOS_LAMBDA(std::int64_t i) { values(i) = me + i; });
    // Into a view: the reduction does not wait for its result.
    Kokkos::parallel_reduce(
        "sum", all, KOKKOS_LAMBDA(std::int64_t i, std::int64_t& s) { s += values(i); }, sum_);
    // 3. Both kernels are only enqueued. when_done runs the continuation from the
    //    scheduler loop once the stream has done them: the rank never waits.
    when_done(stream, [this, me] {
      const bool right = sum_() == me * kValues + kValues * (kValues - 1) / 2;
      contribute(std::int64_t{right}, kodo::Sum{});  // how many units got theirs right
    });
  }

 private:
  Kokkos::View<std::int64_t*> values_;  // in the default memory space (the GPU's, if any)
  // Pinned host memory: the device writes the sum there and the host reads it directly.
  Kokkos::View<std::int64_t, Kokkos::SharedHostPinnedSpace> sum_;
};

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(
          "usage: device_work\n"
          "Each of 8 work units sums a view with Kokkos kernels on its stream and checks the\n"
          "result once the stream has done them (when_done), without blocking the rank.\n"))
    return 0;
  const std::int64_t units = 8;
  auto blocks = kodo::Collection<Block>::create(runtime, {units, 1, 1});
  blocks.broadcast_local<&Block::start>();
  runtime.run();
  const auto right = blocks.reduced<std::int64_t>();
  if (runtime.rank() == 0)
    std::printf("device_work: %lld of %lld units found their device sums right\n",
                static_cast<long long>(right), static_cast<long long>(units));
  return right == units ? 0 : 1;
}
