// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A device view in an entry-method call: each unit fills a view on its stream and, once
// that work is done, calls its neighbour's entry method with it. The neighbour sums what
// it received on its own stream and reports whether the values are the sender's. A view
// is not copied into the call: on the same rank the neighbour gets the sender's view, on
// another rank UCX moves the data straight into a view from the receiving rank's pool
// (device to device on GPUs).
//
//   mpiexec -n 2 view_call
#include <kodo/kodo.hpp>

#include <cstdio>

constexpr std::int64_t kValues = 1000;
using Values = Kokkos::View<double*>;  // the default memory space: the GPU's, if any

class Ring : public kodo::WorkUnit<Ring> {
 public:
  explicit Ring(const kodo::UnitInit<Ring>& init) : WorkUnit(init), sum_("sum") {}

  void start() {
    const std::int64_t me = linear();
    kodo::Stream& stream = streams().compute(me);
    // A view of its own for each call: the receiver may keep it, and the sender must not
    // write it again before the receiver is done with it.
    Values out("out", kValues);
    Kokkos::parallel_for(
        "fill", Kokkos::RangePolicy<kodo::ExecutionSpace>(stream.space(), 0, kValues),
        KOKKOS_LAMBDA(std::int64_t i) { out(i) = static_cast<double>(me * kValues + i); });
    // The call may only carry the view once the kernel that fills it is done.
    when_done(stream, [this, out] {
      const std::int64_t size = collection().size();
      unit(collection().shape().delinear((linear() + 1) % size)).send<&Ring::take>(linear(), out);
    });
  }

  // From the unit before this one: its index and its view.
  void take(std::int64_t from, Values in) {
    kodo::Stream& stream = streams().compute(linear());
    Kokkos::parallel_reduce(
        "sum", Kokkos::RangePolicy<kodo::ExecutionSpace>(stream.space(), 0, kValues),
        KOKKOS_LAMBDA(std::int64_t i, double& s) { s += in(i); }, sum_);
    // Capturing `in` keeps the view alive until the kernel that reads it is done.
    when_done(stream, [this, from, in] {
      const double expected = static_cast<double>(from * kValues * kValues) +
                              static_cast<double>(kValues * (kValues - 1) / 2);
      contribute(std::int64_t{sum_() == expected}, kodo::Sum{});
    });
  }

 private:
  std::int64_t linear() const { return collection().shape().linear(index()); }
  Kokkos::View<double, Kokkos::SharedHostPinnedSpace> sum_;  // written by the device
};

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(
          "usage: view_call\n"
          "Each of 8 work units fills a device view and passes it to the next unit in an\n"
          "entry-method call; the next unit sums it on its stream and checks the values.\n"))
    return 0;
  const std::int64_t units = 8;
  auto ring = kodo::Collection<Ring>::create(runtime, {units, 1, 1});
  ring.broadcast_local<&Ring::start>();
  runtime.run();
  const auto intact = ring.reduced<std::int64_t>();
  if (runtime.rank() == 0)
    std::printf("view_call: %lld of %lld units received their neighbour's view intact\n",
                static_cast<long long>(intact), static_cast<long long>(units));
  return intact == units ? 0 : 1;
}
