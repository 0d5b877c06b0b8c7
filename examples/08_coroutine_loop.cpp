// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The loop of example 05 written as an MPI rank would write it: each unit runs the whole
// solve as a coroutine (an entry method returning kodo::Task). Where the MPI program
// calls MPI_Sendrecv and MPI_Allreduce, the unit sends on its channels and co_awaits the
// neighbours' values and the reduced residual; the rank runs its other units meanwhile.
// Example 05 needs a main-program loop around run() and a unit that keeps a sweep's
// state between calls; here the loop is the unit's own, unchanged.
//
//   mpiexec -n 2 coroutine_loop
#include <kodo/kodo.hpp>

#include <cmath>
#include <cstdio>

using Value = Kokkos::View<double[1], Kokkos::HostSpace>;

class Cell : public kodo::WorkUnit<Cell> {
 public:
  explicit Cell(const kodo::UnitInit<Cell>& init)
      : WorkUnit(init),
        left_(open_channel(streams().communication(0), neighbour(-1))),
        right_(open_channel(streams().communication(0), neighbour(1))),
        value_(static_cast<double>(linear() % 4)) {}

  // The MPI loop it ports:
  //   while (residual >= tolerance && sweeps < most_sweeps) {
  //     MPI_Sendrecv(&value, .. left .., &from_right, .. right ..);  (and the other way)
  //     next = (from_left + 2 * value + from_right) / 4;
  //     MPI_Allreduce(&change, &residual, 1, MPI_DOUBLE, MPI_MAX, comm);
  //   }
  // [solve] (the API reference quotes the lines between these marks)
  kodo::Task solve(double tolerance, int most_sweeps) {
    double residual = 1;
    while (residual >= tolerance && sweeps_ < most_sweeps) {
      // `out_` may be written again next sweep: every unit has its data by the time the
      // sweep's reduction completes.
      out_(0) = value_;
      left_.send(out_, kodo::data_ready);
      right_.send(out_, kodo::data_ready);
      co_await kodo::when_all(kodo::receive(left_, from_left_), kodo::receive(right_, from_right_));
      const double next = (from_left_(0) + 2 * value_ + from_right_(0)) / 4;
      const double change = std::fabs(next - value_);
      value_ = next;
      const kodo::Reduced<double> reduced = co_await all_reduce(change, kodo::Max{});
      residual = reduced.value;
      ++sweeps_;
    }
  }
  // [solve]

  double value() const { return value_; }
  int sweeps() const { return sweeps_; }

 private:
  std::int64_t linear() const { return collection().shape().linear(index()); }
  kodo::Index3 neighbour(std::int64_t side) const {
    const std::int64_t n = collection().size();
    return collection().shape().delinear((linear() + side + n) % n);
  }

  kodo::Channel left_, right_;
  double value_;
  int sweeps_ = 0;
  Value out_{"out"}, from_left_{"from_left"}, from_right_{"from_right"};
};

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(
          "usage: coroutine_loop\n"
          "Sweeps a periodic ring of 10 values, each becoming (left + 2 value + right) / 4,\n"
          "until the largest change of a sweep (a Max reduction) is below 1e-9; each unit\n"
          "runs the loop as a coroutine.\n"))
    return 0;
  auto cells = kodo::Collection<Cell>::create(runtime, {10, 1, 1});
  cells.broadcast_local<&Cell::solve>(1e-9, 10000);
  runtime.run();  // returns once every unit's loop has ended
  // Every value has reached the starting mean (0 1 2 3 0 1 2 3 0 1: 1.3), after the
  // sweeps example 05 takes.
  const double residual = cells.reduced<double>();
  double worst = 0;
  int sweeps = 0;
  cells.for_each_local([&](const Cell& c) {
    worst = std::fmax(worst, std::fabs(c.value() - 1.3));
    sweeps = c.sweeps();
  });
  const bool converged = residual < 1e-9 && worst < 1e-6;
  if (runtime.rank() == 0)
    std::printf("coroutine_loop: %s after %d sweeps (residual %.1e)\n",
                converged ? "converged to the mean 1.3" : "did not converge", sweeps, residual);
  return converged ? 0 : 1;
}
