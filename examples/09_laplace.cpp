// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Tutorial 9: a Kokkos + MPI Laplace solver ported as it is written.
//
// The solver it ports gives each MPI rank a block of rows in a periodic ring of ranks:
//   while (error > tolerance && iteration < most_iterations) {
//     MPI_Sendrecv(my first row to the rank above, my ghost row below from the rank below);
//     MPI_Sendrecv(my last row to the rank below, my ghost row above from the rank above);
//     Kokkos::parallel_reduce(u_new = mean of the 4 neighbours, error = largest change);
//     MPI_Allreduce(MPI_IN_PLACE, &error, 1, MPI_DOUBLE, MPI_MAX, comm);
//     std::swap(u, u_new); ++iteration;
//   }
// Here a unit holds a block of rows (several units per rank: overdecomposed) and runs that
// loop as a coroutine: the sends stay sends, the receives and the allreduce become
// co_await, and the rank runs its other units while one waits. The runtime gives each unit
// its neighbours on the periodic ring by direction, so a single unit (its own neighbour)
// and two units (one neighbour on both sides) need no code of their own.
//
//   mpiexec -n 2 laplace [--units N]
#include <kodo/kodo.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>

// Rows wrap around; the first column is held at 0 and the last at 1, so the solution is
// u(i, j) = j / (kColumns - 1) whatever the start.
constexpr std::int64_t kRows = 48, kColumns = 24;
// A block's rows, with a ghost row above and below. LayoutRight on every backend, so that
// a row (what a neighbour is sent) is contiguous: CUDA's default layout is LayoutLeft.
using Rows = Kokkos::View<double**, Kokkos::LayoutRight>;
auto row(const Rows& u, std::int64_t i) { return Kokkos::subview(u, i, Kokkos::ALL); }

// The solver's kernels, as the MPI code has them, on the space they are given (here a
// unit's stream). Rows 0 and n + 1 of a block are ghost rows; `first` is the block's
// first grid row.
void initialise(const Kokkos::DefaultExecutionSpace& space, const Rows& u, std::int64_t first) {
  Kokkos::parallel_for(
      "initialise",
      Kokkos::MDRangePolicy<Kokkos::Rank<2>>(space, {0, 0}, {u.extent(0), u.extent(1)}),
      KOKKOS_LAMBDA(std::int64_t i, std::int64_t j) {
        const double start = static_cast<double>((7 * (first + i) + 3 * j) % 5) / 5;
        u(i, j) = j == 0 ? 0.0 : j == kColumns - 1 ? 1.0 : start;
      });
}

// u_new = the mean of u's four neighbours on the block's rows; `change` = the largest
// change. Only enqueued: nothing waits for it here.
template <class Change>
void sweep(const Kokkos::DefaultExecutionSpace& space, const Rows& u, const Rows& u_new,
           const Change& change) {
  const std::int64_t n = static_cast<std::int64_t>(u.extent(0)) - 2;
  Kokkos::parallel_reduce(
      "jacobi", Kokkos::MDRangePolicy<Kokkos::Rank<2>>(space, {1, 1}, {n + 1, kColumns - 1}),
      KOKKOS_LAMBDA(std::int64_t i, std::int64_t j, double& largest) {
        u_new(i, j) = 0.25 * (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1));
        largest = Kokkos::max(largest, Kokkos::fabs(u_new(i, j) - u(i, j)));
      },
      Kokkos::Max<double>(change));
}

class Block : public kodo::WorkUnit<Block> {
 public:
  explicit Block(const kodo::UnitInit<Block>& init)
      : WorkUnit(init),
        rows_(kodo::block_range(kRows, init.shape.x, init.index.x)),
        u_("u", rows_.size + 2, kColumns),
        u_new_("u_new", rows_.size + 2, kColumns),
        stream_(streams().compute(init.index.x)),
        above_(open_neighbour_channel(stream_, {-1, 0, 0}, {.x = true})),
        below_(open_neighbour_channel(stream_, {1, 0, 0}, {.x = true})) {
    initialise(stream_.space(), u_, rows_.begin);
    initialise(stream_.space(), u_new_, rows_.begin);
  }

  kodo::Task solve(double tolerance, int most_iterations) {
    const std::int64_t n = rows_.size;
    double error = 1;
    while (error > tolerance && iterations_ < most_iterations) {
      above_.send(row(u_, 1));
      below_.send(row(u_, n));
      co_await kodo::when_all(kodo::receive(below_, row(u_, n + 1)),
                              kodo::receive(above_, row(u_, 0)));
      sweep(stream_.space(), u_, u_new_, change_);
      co_await when_done(stream_);
      const kodo::Reduced<double> largest = co_await all_reduce(change_(), kodo::Max{});
      error = largest.value;
      std::swap(u_, u_new_);
      ++iterations_;
      if (index().x == 0 && iterations_ % 200 == 0)
        std::printf("iteration %5d, error %.3e\n", iterations_, error);
    }
    // The check: the largest distance from the exact solution, for the main program.
    co_await all_reduce(distance_from_solution(), kodo::Max{});
  }

  int iterations() const { return iterations_; }

 private:
  double distance_from_solution() const {
    const auto u = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, u_);
    double distance = 0;
    for (std::int64_t i = 1; i <= rows_.size; ++i)
      for (std::int64_t j = 0; j < kColumns; ++j)
        distance =
            std::fmax(distance, std::fabs(u(i, j) - static_cast<double>(j) / (kColumns - 1)));
    return distance;
  }

  kodo::Range rows_;  // of the whole grid's rows
  Rows u_, u_new_;
  kodo::Stream& stream_;
  kodo::Channel above_, below_;
  // Pinned host memory: the sweep writes its largest change there, the host reads it.
  Kokkos::View<double, Kokkos::SharedHostPinnedSpace> change_{"change"};
  int iterations_ = 0;
};

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(
          "usage: laplace [--units N]\n"
          "Solves Laplace's equation on a 48 x 24 grid whose rows wrap around (one column\n"
          "held at 0, the other at 1) by Jacobi sweeps until the largest change is below\n"
          "1e-8; N units (4 by default, 1 to 48) each hold a block of rows and run the\n"
          "sweeps as a coroutine.\n"))
    return 0;
  std::int64_t units = 4;
  if (argc == 3 && std::string_view(argv[1]) == "--units")
    units = std::atoll(argv[2]);
  else if (argc != 1)
    units = 0;
  if (units < 1 || units > kRows) {
    if (runtime.rank() == 0) std::fprintf(stderr, "laplace: expected [--units N], N in 1..48\n");
    return 1;
  }
  auto blocks = kodo::Collection<Block>::create(runtime, {units, 1, 1});
  blocks.broadcast_local<&Block::solve>(1e-8, 20000);
  runtime.run();  // returns once every unit's loop has ended
  const double distance = blocks.reduced<double>();
  int iterations = 0;
  blocks.for_each_local([&](const Block& b) { iterations = b.iterations(); });
  const bool solved = distance < 1e-6;
  if (runtime.rank() == 0)
    std::printf("laplace: %s after %d iterations\n",
                solved ? "the exact solution within 1e-6" : "not solved", iterations);
  return solved ? 0 : 1;
}
