// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Tutorial 10: the loop an MPI code overlaps, written as that code is, and fast on kodo.
//
// An MPI heat solver that hides its halo exchange does, on each rank:
//   MPI_Isend(my edge rows); MPI_Irecv(my ghost rows);
//   update the inner rows (they need no ghost row);
//   MPI_Waitall(...);
//   update the edge rows;
// Here each unit runs that loop as its task. Its kernels go into kodo::KernelBatch
// objects: `co_await launch(batch)` launches them together with the same kernels of the
// rank's other units, one launch for all of them. On CUDA builds kodo also records each
// turn of the rank's loop as one graph (KODO_RECORD; the program prints what it recorded).
// Nothing in the loop says so: the loop is the MPI one.
//
//   mpiexec -n 2 overlapped_loop [--units N]
#include <kodo/kodo.hpp>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>
#include <vector>

// Rows wrap around; columns 0 and kColumns - 1 stay at their start values.
constexpr std::int64_t kRows = 48, kColumns = 24, kSteps = 200;
constexpr double kDiffusion = 0.2;
using Rows = Kokkos::View<double**, Kokkos::LayoutRight>;  // a row is contiguous
auto row(const Rows& u, std::int64_t i) { return Kokkos::subview(u, i, Kokkos::ALL); }

KOKKOS_INLINE_FUNCTION double start_value(std::int64_t grid_row, std::int64_t column) {
  return static_cast<double>((7 * grid_row + 3 * column) % 11) / 11;
}

// One explicit heat step on `count` rows of a block, `every` rows apart from `first`, over
// the inner columns. A functor, not a lambda: a batch launches kernels by functor type.
struct UpdateRows {
  Rows u, u_new;
  std::int64_t first, every;
  KOKKOS_FUNCTION void operator()(std::int64_t k) const {
    const std::int64_t i = first + (k / (kColumns - 2)) * every, j = 1 + k % (kColumns - 2);
    u_new(i, j) = u(i, j) + kDiffusion * (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1) -
                                          4 * u(i, j));
  }
};

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
    const std::int64_t first = rows_.begin, extent = rows_.size + 2;
    for (const Rows& u : {u_, u_new_})
      Kokkos::parallel_for(
          "start",
          Kokkos::MDRangePolicy<Kokkos::Rank<2>>(stream_.space(), {0, 0}, {extent, kColumns}),
          KOKKOS_LAMBDA(std::int64_t i, std::int64_t j) {
            u(i, j) = start_value(first + i - 1, j);
          });
  }

  kodo::Task steps() {
    const std::int64_t n = rows_.size, inner = n - 2;  // rows 2 .. n - 1 need no ghost row
    for (std::int64_t step = 0; step < kSteps; ++step) {
      above_.send(row(u_, 1));  // leave once the work enqueued on the stream so far is done
      below_.send(row(u_, n));
      if (inner > 0) {
        kodo::KernelBatch inner_rows(stream_);
        inner_rows.parallel_for("inner rows", 0, inner * (kColumns - 2),
                                UpdateRows{u_, u_new_, 2, 1});
        co_await launch(inner_rows);  // runs while the edge rows travel
      }
      co_await kodo::when_all(kodo::receive(below_, row(u_, n + 1)),
                              kodo::receive(above_, row(u_, 0)));
      kodo::KernelBatch edge_rows(stream_);
      edge_rows.parallel_for("edge rows", 0, 2 * (kColumns - 2), UpdateRows{u_, u_new_, 1, n - 1});
      co_await launch(edge_rows);
      std::swap(u_, u_new_);
    }
    co_await when_done(stream_);
    co_await all_reduce(distance_from_serial_loop(), kodo::Max{});
  }

 private:
  // The check: the same steps on the whole grid on the host, against this block's rows.
  double distance_from_serial_loop() const {
    std::vector<double> grid(kRows * kColumns), next(grid.size());
    auto at = [](std::int64_t i, std::int64_t j) { return ((i + kRows) % kRows) * kColumns + j; };
    for (std::int64_t i = 0; i < kRows; ++i)
      for (std::int64_t j = 0; j < kColumns; ++j) grid[at(i, j)] = start_value(i, j);
    next = grid;
    for (std::int64_t step = 0; step < kSteps; ++step) {
      for (std::int64_t i = 0; i < kRows; ++i)
        for (std::int64_t j = 1; j < kColumns - 1; ++j)
          next[at(i, j)] = grid[at(i, j)] + kDiffusion * (grid[at(i - 1, j)] + grid[at(i + 1, j)] +
                                                          grid[at(i, j - 1)] + grid[at(i, j + 1)] -
                                                          4 * grid[at(i, j)]);
      std::swap(grid, next);
    }
    const auto u = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, u_);
    double distance = 0;
    for (std::int64_t i = 1; i <= rows_.size; ++i)
      for (std::int64_t j = 0; j < kColumns; ++j)
        distance = std::fmax(distance, std::fabs(u(i, j) - grid[at(rows_.begin + i - 1, j)]));
    return distance;
  }

  kodo::Range rows_;  // of the whole grid's rows
  Rows u_, u_new_;
  kodo::Stream& stream_;
  kodo::Channel above_, below_;
};

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(
          "usage: overlapped_loop [--units N]\n"
          "200 explicit heat steps on a 48 x 24 grid whose rows wrap around; N units (8 by\n"
          "default, 1 to 24) each hold a block of rows and overlap their halo exchange with\n"
          "the update of their inner rows, as an MPI code does; checked against the same\n"
          "steps on one grid.\n"))
    return 0;
  std::int64_t units = 8;
  if (argc == 3 && std::string_view(argv[1]) == "--units")
    units = std::atoll(argv[2]);
  else if (argc != 1)
    units = 0;
  if (units < 1 || units > kRows / 2) {
    if (runtime.rank() == 0)
      std::fprintf(stderr, "overlapped_loop: expected [--units N], N in 1..24\n");
    return 1;
  }
  auto blocks = kodo::Collection<Block>::create(runtime, {units, 1, 1});
  blocks.broadcast_local<&Block::steps>();
  runtime.run();
  const double distance = blocks.reduced<double>();
  const kodo::RecordingReport recorded = runtime.recording();
  const bool equal = distance < 1e-12;
  if (runtime.rank() == 0) {
    if (recorded.turns > 0)
      std::printf("rank 0 recorded %" PRIu64 " turns as graphs, %" PRIu64 " of them built\n",
                  recorded.turns, recorded.instantiated);
    else
      std::printf("no turn recorded: %s\n", recorded.off_because.c_str());
    std::printf("overlapped_loop: %s after %" PRId64 " steps\n",
                equal ? "equal to the serial loop" : "NOT equal to the serial loop", kSteps);
  }
  return equal ? 0 : 1;
}
