// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Checkpoint and restart: units declare their state once (state()), the main program
// writes a checkpoint of a collection between run() calls, and a restart restores it into
// a collection created again. Here both happen in one program: it runs 10 steps with a
// checkpoint after step 4, then creates a second collection, restores it from that
// checkpoint, runs it from step 4 to 10, and checks that both end with the same values.
// A real restart is a later job, on any number of ranks: it creates its collections in
// the same order, calls Checkpoint::open and restore, and goes on from the saved step.
//
//   mpiexec -n 2 checkpoint_restart [DIRECTORY]   (default: checkpoint_restart-2.d, the
//                                                 rank count in the name)
#include <kodo/kodo.hpp>

#include <cstdio>
#include <string>

constexpr std::int64_t kValues = 64;

class Walker : public kodo::WorkUnit<Walker> {
 public:
  // The name checkpoints record this type by: stable across compilers and renames (a type
  // without one is recorded by its typeid name).
  static constexpr const char* checkpoint_name = "checkpoint_restart::Walker";
  explicit Walker(const kodo::UnitInit<Walker>& init)
      : WorkUnit(init), values_("values", kValues), sum_("sum") {
    Kokkos::deep_copy(values_, linear());
  }

  // What a checkpoint holds of a unit, and what a restore assigns: the same walk.
  // [state] (the API reference quotes the lines between these marks)
  template <class State>
  void state(State& s) {
    s("step", step_);
    s("values", values_);  // device memory: copied through pinned host memory
  }
  // [state]

  // Steps until `until`: each scrambles every value with the step number (integers, so
  // that the sums compared at the end are exact).
  void advance(std::int64_t until) {
    kodo::Stream& stream = streams().compute(linear());
    auto values = values_;
    for (; step_ < until; ++step_) {
      const std::int64_t step = step_;
      Kokkos::parallel_for(
          "step", Kokkos::RangePolicy<kodo::ExecutionSpace>(stream.space(), 0, kValues),
          KOKKOS_LAMBDA(std::int64_t i) { values(i) = (values(i) * 31 + step + i) % 1000003; });
    }
    Kokkos::parallel_reduce(
        "sum", Kokkos::RangePolicy<kodo::ExecutionSpace>(stream.space(), 0, kValues),
        KOKKOS_LAMBDA(std::int64_t i, std::int64_t& s) { s += values(i); }, sum_);
    when_done(stream, [this] { contribute(sum_(), kodo::Sum{}); });
  }

 private:
  std::int64_t linear() const { return collection().shape().linear(index()); }
  std::int64_t step_ = 0;
  Kokkos::View<std::int64_t*> values_;  // in the default memory space (the GPU's, if any)
  Kokkos::View<std::int64_t, Kokkos::SharedHostPinnedSpace> sum_;
};

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(
          "usage: checkpoint_restart [DIRECTORY]\n"
          "Runs 8 units for 10 steps with a checkpoint after step 4 (into DIRECTORY, default\n"
          "checkpoint_restart-R.d for R ranks), restores a second collection from it, runs\n"
          "that from step 4 to 10, and checks that both end with the same values.\n"))
    return 0;
  const std::string dir = argc > 1 ? argv[1]
                                   : "checkpoint_restart-" + std::to_string(runtime.size()) + ".d";
  const kodo::Extent3 shape{8, 1, 1};

  auto first = kodo::Collection<Walker>::create(runtime, shape);
  first.broadcast_local<&Walker::advance>(4);
  runtime.run();
  // Collective, between run() calls: every rank writes its units' state.
  const auto report =
      kodo::write_checkpoint(runtime, dir, {"checkpoint_restart", {{"step", "4"}}}, first);
  first.broadcast_local<&Walker::advance>(10);
  runtime.run();
  const auto straight = first.reduced<std::int64_t>();

  // The restart: a collection created again, restored from the checkpoint, then run on
  // from its step. A later job would create it as its first collection, like `first`, and
  // call saved.restore(it); this program already has a first collection, so each unit of
  // the second reads the state saved from the unit of `first` at its index.
  auto second = kodo::Collection<Walker>::create(runtime, shape);
  const auto saved = kodo::Checkpoint::open(runtime, dir, "checkpoint_restart");
  const kodo::SavedCollection from_first = saved.collection(first);
  second.for_each_local([&](Walker& unit) { from_first.read(unit.index(), unit); });
  second.broadcast_local<&Walker::advance>(10);
  runtime.run();
  const auto restarted = second.reduced<std::int64_t>();

  const bool same = restarted == straight && saved.integer("step") == 4;
  if (runtime.rank() == 0)
    std::printf(
        "checkpoint_restart: %s (wrote %s; the sum after 10 steps %lld, after a "
        "restart at step %lld %lld)\n",
        same ? "the restart ends where the run did" : "the restart DIFFERS", report.path.c_str(),
        static_cast<long long>(straight), static_cast<long long>(saved.integer("step")),
        static_cast<long long>(restarted));
  return same ? 0 : 1;
}
