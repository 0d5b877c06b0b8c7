// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Tutorial 11: a fixed step, said once, as a step program (kodo::StepProgram).
//
// Example 10's heat loop does the same things every step: the same kernels, the same rows
// to the same neighbours. A unit can then say once what a step is, in plan_step: the views
// it receives and from whom, the views it sends and to whom, and the device work. kodo
// checks every plan on every rank and runs the steps itself: on CUDA and HIP builds the
// steps of a rank's units, and the copies between them, are one graph launched once per
// step, with no host call per unit or per halo (a higher ODF costs little). The host
// backend runs the same plans unit by unit.
//
// The loop is double-buffered, so it has two phases: a step of phase p reads grid u[p]
// and writes u[1 - p]. A row of a LayoutRight view is contiguous: the halo rows are sent
// from and received into the grids themselves, with no pack and no unpack.
//
//   mpiexec -n 2 step_program [--units N]
#include <kodo/kodo.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

// Rows wrap around; columns 0 and kColumns - 1 keep their start values.
constexpr std::int64_t kRows = 40, kColumns = 16, kSteps = 120;
constexpr double kRate = 0.15;
using Grid = Kokkos::View<double**, Kokkos::LayoutRight>;
auto row(const Grid& u, std::int64_t i) { return Kokkos::subview(u, i, Kokkos::ALL); }

double start_value(std::int64_t grid_row, std::int64_t column) {
  return static_cast<double>((5 * grid_row + 2 * column) % 13) / 13;
}

// One heat step on rows [first, last] of a block (row 0 and the last are its ghost rows),
// over the inner columns.
struct Heat {
  Grid from, to;
  std::int64_t first;
  KOKKOS_FUNCTION void operator()(std::int64_t k) const {
    const std::int64_t i = first + k / (kColumns - 2), j = 1 + k % (kColumns - 2);
    to(i, j) = (1 - 4 * kRate) * from(i, j) +
               kRate * (from(i - 1, j) + from(i + 1, j) + from(i, j - 1) + from(i, j + 1));
  }
};
void heat(const kodo::ExecutionSpace& space, const Grid& from, const Grid& to, std::int64_t first,
          std::int64_t last) {
  const std::int64_t cells = (last - first + 1) * (kColumns - 2);
  if (cells <= 0) return;
  Kokkos::parallel_for("heat", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, cells),
                       Heat{from, to, first});
}

class Block : public kodo::WorkUnit<Block> {
 public:
  explicit Block(const kodo::UnitInit<Block>& init)
      : WorkUnit(init),
        rows_(kodo::block_range(kRows, init.shape.x, init.index.x)),
        above_(*neighbour({-1, 0, 0}, {.x = true})),
        below_(*neighbour({1, 0, 0}, {.x = true})) {
    for (Grid& u : u_) {
      u = Grid("u", rows_.size + 2, kColumns);
      auto start = Kokkos::create_mirror_view(u);
      for (std::int64_t i = 0; i < rows_.size + 2; ++i)
        for (std::int64_t j = 0; j < kColumns; ++j)
          start(i, j) = start_value((rows_.begin + i - 1 + kRows) % kRows, j);
      Kokkos::deep_copy(u, start);
    }
  }

  // Called by StepProgram once per phase, when the program is built; what it plans is what
  // every step of that phase does. Tag 0 carries a block's first row (the ghost row below
  // the block above), tag 1 its last row (the ghost row above the block below).
  // [plan] (the API reference quotes the lines between these marks)
  void plan_step(kodo::StepPlan& plan) {
    const int p = plan.phase();
    const Grid from = u_[p], to = u_[1 - p];
    const std::int64_t n = rows_.size;
    plan.receive(row(from, 0), above_, 1);  // sent by the block above in its previous step
    plan.receive(row(from, n + 1), below_, 0);
    plan.send(row(to, 1), above_, 0);  // once this step has written it
    plan.send(row(to, n), below_, 1);
    // The inner rows read no ghost row: they may run while the halos travel.
    plan.work_without_receives([=](const kodo::ExecutionSpace& space) {
      heat(space, from, to, 2, n - 1);
    });
    plan.work([=](const kodo::ExecutionSpace& space) {
      heat(space, from, to, 1, 1);
      heat(space, from, to, n, n);
    });
    // Before step 0 the last phase's sends are made once, as if its step had run: they
    // are rows of u[0], which hold the start values already.
    if (p == plan.phases() - 1) plan.prime();
  }
  // [plan]

  // After `steps` steps the grid is u[steps % 2]: this block's part of the check, its rows
  // weighed by their place in the whole grid.
  void add_checksum(std::int64_t steps) {
    const auto u = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, u_[steps % 2]);
    double sum = 0;
    for (std::int64_t i = 1; i <= rows_.size; ++i)
      for (std::int64_t j = 0; j < kColumns; ++j) sum += weight(rows_.begin + i - 1, j) * u(i, j);
    contribute(sum, kodo::Sum{});
  }
  static double weight(std::int64_t grid_row, std::int64_t column) {
    return 1 + static_cast<double>(grid_row * kColumns + column) / (kRows * kColumns);
  }

 private:
  kodo::Range rows_;  // of the whole grid's rows
  kodo::Index3 above_, below_;
  Grid u_[2];
};

// The independent check: the same steps as one serial loop over the whole grid.
double serial_checksum(std::int64_t steps) {
  std::vector<double> now(kRows * kColumns), next;
  for (std::int64_t i = 0; i < kRows; ++i)
    for (std::int64_t j = 0; j < kColumns; ++j) now[i * kColumns + j] = start_value(i, j);
  for (std::int64_t s = 0; s < steps; ++s) {
    next = now;
    for (std::int64_t i = 0; i < kRows; ++i) {
      const double* up = &now[((i + kRows - 1) % kRows) * kColumns];
      const double* here = &now[i * kColumns];
      const double* down = &now[((i + 1) % kRows) * kColumns];
      for (std::int64_t j = 1; j < kColumns - 1; ++j)
        next[i * kColumns + j] = (1 - 4 * kRate) * here[j] +
                                 kRate * (up[j] + down[j] + here[j - 1] + here[j + 1]);
    }
    now.swap(next);
  }
  double sum = 0;
  for (std::int64_t i = 0; i < kRows; ++i)
    for (std::int64_t j = 0; j < kColumns; ++j) sum += Block::weight(i, j) * now[i * kColumns + j];
  return sum;
}

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(
          "usage: step_program [--units N]\n"
          "120 explicit heat steps on a 40 x 16 grid whose rows wrap around, as a step\n"
          "program: N units (8 by default, 1 to 20) each hold a block of rows and plan their\n"
          "step once; checked against the same steps as one serial loop.\n"))
    return 0;
  std::int64_t units = 8;
  if (argc == 3 && std::string_view(argv[1]) == "--units")
    units = std::atoll(argv[2]);
  else if (argc != 1)
    units = 0;
  if (units < 1 || units > kRows / 2) {  // two rows or more a block
    if (runtime.rank() == 0)
      std::fprintf(stderr, "step_program: expected [--units N], N in 1..20\n");
    return 1;
  }
  auto blocks = kodo::Collection<Block>::create(runtime, {units, 1, 1});
  // Collective: plans both phases of every local unit, checks the plans on every rank (a
  // send without its receive is a kodo::Error naming the units) and records the steps.
  kodo::StepProgram<Block> program(blocks, {.phases = 2});
  // advance() says how many more steps the next run() makes. In between, the program is
  // idle: the units' views may be read (output, a checkpoint), then the steps go on.
  program.advance(kSteps / 2);
  runtime.run();
  program.advance(kSteps - kSteps / 2);
  runtime.run();
  blocks.broadcast_local<&Block::add_checksum>(program.steps());
  runtime.run();

  const double got = blocks.reduced<double>(), expected = serial_checksum(kSteps);
  const bool equal = std::fabs(got - expected) <= 1e-12 * std::fabs(expected);
  if (runtime.rank() == 0) {
    std::printf("rank 0 %s\n", program.replays_graphs() ? "launches each step as one graph"
                                                        : "runs each step unit by unit");
    std::printf("step_program: %s after %lld steps (checksum %.12f)\n",
                equal ? "equal to the serial loop" : "NOT equal to the serial loop",
                static_cast<long long>(program.steps()), got);
  }
  return equal ? 0 : 1;
}
