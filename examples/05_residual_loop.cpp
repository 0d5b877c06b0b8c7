// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A loop that stops on a reduced residual, written in the main program: each pass of
// the loop asks every unit for one sweep, runs the job until it is quiet, and reads the
// sweep's largest change (a Max reduction) to decide whether to go on. The units are a
// periodic ring of values; a sweep sets each to (left + 2 value + right) / 4, with the
// neighbours' values passed in entry-method calls. The ring converges to the mean of the
// starting values, which no sweep changes.
//
//   mpiexec -n 2 residual_loop
#include <kodo/kodo.hpp>

#include <cmath>
#include <cstdio>

class Cell : public kodo::WorkUnit<Cell> {
 public:
  explicit Cell(const kodo::UnitInit<Cell>& init)
      : WorkUnit(init), value_(static_cast<double>(linear() % 4)) {}

  // One sweep: the current value goes to both neighbours.
  void sweep() {
    sweeping_ = true;
    for (const std::int64_t side : {-1, 1}) neighbour(side).send<&Cell::hear>(value_);
    finish_if_heard();
  }

  // A neighbour's value of this sweep (one sweep at a time: the main program waits for
  // each to end). It may arrive before this unit's own sweep() call: the main program's
  // calls and the neighbours' travel independently.
  void hear(double value) {
    heard_sum_ += value;
    ++heard_;
    finish_if_heard();
  }

  double value() const { return value_; }

 private:
  void finish_if_heard() {
    if (heard_ < 2 || !sweeping_) return;
    const double next = (heard_sum_ + 2 * value_) / 4;
    const double change = std::fabs(next - value_);
    value_ = next;
    heard_ = 0;
    heard_sum_ = 0;
    sweeping_ = false;
    contribute(change, kodo::Max{});  // the sweep's residual, for the main program
  }
  std::int64_t linear() const { return collection().shape().linear(index()); }
  kodo::UnitRef<Cell> neighbour(std::int64_t side) const {
    const std::int64_t n = collection().size();
    return unit(collection().shape().delinear((linear() + side + n) % n));
  }

  double value_;
  bool sweeping_ = false;  // sweep() has come for the sweep under way
  int heard_ = 0;
  double heard_sum_ = 0;
};

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(
          "usage: residual_loop\n"
          "Sweeps a periodic ring of 10 values, each becoming (left + 2 value + right) / 4,\n"
          "until the largest change of a sweep (a Max reduction) is below 1e-9.\n"))
    return 0;
  auto cells = kodo::Collection<Cell>::create(runtime, {10, 1, 1});
  const double tolerance = 1e-9;
  double residual = 1;
  std::int64_t sweeps = 0;
  // The loop an MPI code would write around MPI_Allreduce, here around run().
  while (residual >= tolerance && sweeps < 10000) {
    cells.broadcast_local<&Cell::sweep>();
    runtime.run();
    residual = cells.reduced<double>();
    ++sweeps;
  }
  // Every value has reached the starting mean (0 1 2 3 0 1 2 3 0 1: 1.3).
  double worst = 0;
  cells.for_each_local([&](const Cell& c) {
    worst = std::fmax(worst, std::fabs(c.value() - 1.3));
  });
  const bool converged = residual < tolerance && worst < 1e-6;
  if (runtime.rank() == 0)
    std::printf("residual_loop: %s after %lld sweeps (residual %.1e)\n",
                converged ? "converged to the mean 1.3" : "did not converge",
                static_cast<long long>(sweeps), residual);
  return converged ? 0 : 1;
}
