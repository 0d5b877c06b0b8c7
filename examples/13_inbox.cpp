// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Tutorial 13: a task that awaits calls by their step (kodo::Inbox).
//
// A channel links two fixed units. When the partner changes from step to step, a unit
// calls the partner's entry method instead, with the data and the step it is for; the
// entry method puts them in an inbox, and the partner's task takes the step when it
// needs it. A caller may be steps ahead of the unit it calls: its value waits in the
// inbox under its step until the task asks for it.
//
// Here that is a scan across units, which no reduction gives: every unit holds a vector,
// and after log2(N) steps unit u holds the sum of the vectors of units 0..u. In step s a
// unit sends its partial sum to the unit 2^s after it and adds the one from the unit 2^s
// before it (a Hillis-Steele scan). The vectors are device views, passed in the calls.
//
//   mpiexec -n 2 inbox [--units N]
#include <kodo/kodo.hpp>

#include <cstdio>
#include <cstdlib>
#include <string_view>

constexpr std::int64_t kLength = 100;
using Values = Kokkos::View<std::int64_t*>;  // in the default memory space (the GPU's, if any)

std::int64_t start_value(std::int64_t unit, std::int64_t i) { return (7 * unit + 3 * i) % 10 + 1; }

// sum(i) = a(i) + b(i), a new view: a view sent in a call is not written again (on the
// caller's rank the callee holds that very view).
Values add(const kodo::ExecutionSpace& space, const Values& a, const Values& b) {
  Values sum("sum", a.size());
  Kokkos::parallel_for(
      "add", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, a.size()),
      KOKKOS_LAMBDA(std::int64_t i) { sum(i) = a(i) + b(i); });
  return sum;
}

class Scanner : public kodo::WorkUnit<Scanner> {
 public:
  explicit Scanner(const kodo::UnitInit<Scanner>& init)
      : WorkUnit(init), me_(init.index.x), stream_(streams().compute(init.index.x)) {}

  // [inbox] (the API reference quotes the lines between these marks)
  // An entry method: another unit's partial sum, for step `step` of this unit's scan.
  void partial(std::int64_t step, Values values) { from_before_.put(step, std::move(values)); }

  kodo::Task scan() {
    Values mine("mine", kLength);
    auto start = Kokkos::create_mirror_view(mine);
    for (std::int64_t i = 0; i < kLength; ++i) start(i) = start_value(me_, i);
    Kokkos::deep_copy(mine, start);
    const std::int64_t units = collection().size();
    for (std::int64_t step = 0, reach = 1; reach < units; ++step, reach *= 2) {
      if (me_ + reach < units) unit({me_ + reach, 0, 0}).send<&Scanner::partial>(step, mine);
      if (me_ - reach < 0) continue;  // nothing comes from before the first unit
      const Values before = co_await from_before_.take(step);  // now, or once it is put
      mine = add(stream_.space(), mine, before);
      co_await when_done(stream_);  // `mine` is filled before it is sent, `before` read
    }
    count_right(mine);
  }
  // [inbox]

 private:
  // The check: unit u holds, at every i, the sum over units 0..u of their start values.
  void count_right(const Values& result) {
    const auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, result);
    bool right = from_before_.size() == 0;  // every value put was taken
    for (std::int64_t i = 0; i < kLength; ++i) {
      std::int64_t expected = 0;
      for (std::int64_t unit = 0; unit <= me_; ++unit) expected += start_value(unit, i);
      right &= got(i) == expected;
    }
    contribute(std::int64_t{right}, kodo::Sum{});
  }

  std::int64_t me_;
  kodo::Stream& stream_;
  kodo::Inbox<std::int64_t, Values> from_before_;  // by step
};

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(
          "usage: inbox [--units N]\n"
          "A scan across N units (8 by default, 1 to 1000), each holding a vector of 100\n"
          "integers: in step s a unit calls the unit 2^s after it with its partial sum, and\n"
          "its task awaits the call from the unit 2^s before it in a kodo::Inbox; checked\n"
          "against the sums computed on the host.\n"))
    return 0;
  std::int64_t units = 8;
  if (argc == 3 && std::string_view(argv[1]) == "--units")
    units = std::atoll(argv[2]);
  else if (argc != 1)
    units = 0;
  if (units < 1 || units > 1000) {
    if (runtime.rank() == 0) std::fprintf(stderr, "inbox: expected [--units N], N in 1..1000\n");
    return 1;
  }
  auto scanners = kodo::Collection<Scanner>::create(runtime, {units, 1, 1});
  scanners.broadcast_local<&Scanner::scan>();
  runtime.run();
  const auto right = scanners.reduced<std::int64_t>();
  if (runtime.rank() == 0)
    std::printf("inbox: %lld of %lld units hold the sum of the vectors up to theirs\n",
                static_cast<long long>(right), static_cast<long long>(units));
  return right == units ? 0 : 1;
}
