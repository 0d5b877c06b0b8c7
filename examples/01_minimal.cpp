// The README's minimal program: a collection of 4 x 3 x 2 work units spread over the
// ranks; each unit contributes its index to a sum that every rank's main program reads.
//
//   mpiexec -n 2 minimal
#include <kodo/kodo.hpp>

#include <cstdio>

struct Part : kodo::WorkUnit<Part> {
  explicit Part(const kodo::UnitInit<Part>& init) : WorkUnit(init) {}
  void start() { contribute(collection().shape().linear(index()), kodo::Sum{}); }
};

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);  // MPI, Kokkos, UCX
  if (runtime.print_usage_if_requested(
          "usage: minimal\n"
          "Sums the indices (0 to 23) of a collection's 24 work units with a reduction.\n"))
    return 0;
  auto parts = kodo::Collection<Part>::create(runtime, {4, 3, 2});
  parts.broadcast_local<&Part::start>();             // every rank starts its own units
  runtime.run();                                     // until the whole job is quiet
  std::int64_t sum = parts.reduced<std::int64_t>();  // 276, on every rank
  if (runtime.rank() == 0)
    std::printf("minimal: sum of unit indices = %lld\n", static_cast<long long>(sum));
  return sum == 23 * 24 / 2 ? 0 : 1;
}
