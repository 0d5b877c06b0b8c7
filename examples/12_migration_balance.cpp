// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Tutorial 12: units that move between ranks to even out the load (kodo::rebalance).
//
// A ring of cells cut into units of different sizes: unit u holds 4 (u + 1) cells, so
// the ranks that hold the last units have the most work. Each unit states its load (its
// cells: a GPU code knows its work better than a host clock does), and between phases of
// steps the main program calls kodo::rebalance, which gathers the loads, runs a balancer
// and moves units when the ranks are out of balance. A unit moves with what its state()
// names, its cells' device view among them; on its new rank its constructor runs again
// (opening its channels toward its neighbours, wherever they now are) and the state is
// restored. The loop goes on from the saved step, and the answer is that of the serial
// loop, wherever the units were.
//
//   mpiexec -n 2 migration_balance [--units N]
#include <kodo/kodo.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// Integer cells, so that the checksums compared at the end are exact.
constexpr std::int64_t kModulus = 1000003, kStepsPerPhase = 20, kPhases = 3;
using Cells = Kokkos::View<std::int64_t*>;  // in the default memory space (the GPU's, if any)
auto cell(const Cells& c, std::int64_t i) { return Kokkos::subview(c, std::pair(i, i + 1)); }

std::int64_t first_cell(std::int64_t unit) { return 2 * unit * (unit + 1); }  // 4 (1 + ... + u)
std::int64_t start_value(std::int64_t global_cell) { return (global_cell * 7717 + 11) % kModulus; }

// One step on cells 1..n of a unit (0 and n + 1 are the ghosts from its neighbours).
void update(const kodo::ExecutionSpace& space, const Cells& from, const Cells& to,
            std::int64_t step) {
  const auto n = static_cast<std::int64_t>(from.size()) - 2;
  Kokkos::parallel_for(
      "update", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 1, n + 1),
      KOKKOS_LAMBDA(std::int64_t i) {
        to(i) = (3 * from(i - 1) + from(i) + 5 * from(i + 1) + step) % kModulus;
      });
}

class Segment : public kodo::WorkUnit<Segment> {
 public:
  // Runs where the unit is created and again wherever it moves: everything that is not
  // state() is built here.
  explicit Segment(const kodo::UnitInit<Segment>& init)
      : WorkUnit(init),
        first_(first_cell(init.index.x)),
        cells_("cells", 4 * (init.index.x + 1) + 2),
        next_("next", cells_.size()),
        stream_(streams().compute(init.index.x)),
        left_(open_neighbour_channel(stream_, {-1, 0, 0}, {.x = true})),
        right_(open_neighbour_channel(stream_, {1, 0, 0}, {.x = true})) {
    set_load(static_cast<double>(cells_.size() - 2));
    auto start = Kokkos::create_mirror_view(cells_);
    for (std::size_t i = 1; i + 1 < start.size(); ++i)
      start(i) = start_value(first_ + static_cast<std::int64_t>(i) - 1);
    Kokkos::deep_copy(cells_, start);  // a restore after a move overwrites it
  }

  // What moves with the unit (and what a checkpoint would hold): the step it is at and its
  // cells. `next_` is scratch, and the channels are opened again by the constructor.
  template <class State>
  void state(State& s) {
    s("step", step_);
    s("cells", cells_);  // a device view: it travels device to device where it can
  }

  // The steps up to `until`: send the edge cells, await the ghosts, update.
  kodo::Task steps(std::int64_t until) {
    const auto n = static_cast<std::int64_t>(cells_.size()) - 2;
    for (; step_ < until; ++step_) {
      left_.send(cell(cells_, 1));  // leaves once the stream's work so far is done
      right_.send(cell(cells_, n));
      co_await kodo::when_all(kodo::receive(left_, cell(cells_, 0)),
                              kodo::receive(right_, cell(cells_, n + 1)));
      update(stream_.space(), cells_, next_, step_);
      std::swap(cells_, next_);
    }
    co_await when_done(stream_);
  }

  // Its part of the check: its cells weighed by their place in the ring.
  void add_checksum() {
    const auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, cells_);
    std::int64_t sum = 0;
    for (std::size_t i = 1; i + 1 < c.size(); ++i)
      sum += c(i) * (first_ + static_cast<std::int64_t>(i));
    contribute(sum, kodo::Sum{});
  }

 private:
  std::int64_t first_;  // of the ring's cells
  std::int64_t step_ = 0;
  Cells cells_, next_;
  kodo::Stream& stream_;
  kodo::Channel left_, right_;
};

// The independent check: the same steps as one serial loop over the whole ring.
std::int64_t serial_checksum(std::int64_t units, std::int64_t steps) {
  const std::int64_t n = first_cell(units);
  std::vector<std::int64_t> ring(n), next(n);
  for (std::int64_t j = 0; j < n; ++j) ring[j] = start_value(j);
  for (std::int64_t step = 0; step < steps; ++step) {
    for (std::int64_t j = 0; j < n; ++j)
      next[j] = (3 * ring[(j + n - 1) % n] + ring[j] + 5 * ring[(j + 1) % n] + step) % kModulus;
    ring.swap(next);
  }
  std::int64_t sum = 0;
  for (std::int64_t j = 0; j < n; ++j) sum += ring[j] * (j + 1);
  return sum;
}

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(
          "usage: migration_balance [--units N]\n"
          "A ring of cells in N units (8 by default, 1 to 64), unit u holding 4 (u + 1) cells,\n"
          "runs 3 phases of 20 steps with kodo::rebalance between them, which moves units to\n"
          "even out the ranks' cells; checked against the same steps as one serial loop.\n"))
    return 0;
  std::int64_t units = 8;
  if (argc == 3 && std::string_view(argv[1]) == "--units")
    units = std::atoll(argv[2]);
  else if (argc != 1)
    units = 0;
  if (units < 1 || units > 64) {
    if (runtime.rank() == 0)
      std::fprintf(stderr, "migration_balance: expected [--units N], N in 1..64\n");
    return 1;
  }
  auto segments = kodo::Collection<Segment>::create(runtime, {units, 1, 1});
  std::int64_t moved = 0;
  // [rebalance] (the API reference quotes the lines between these marks)
  for (std::int64_t phase = 1; phase <= kPhases; ++phase) {
    segments.broadcast_local<&Segment::steps>(phase * kStepsPerPhase);
    runtime.run();
    if (phase == kPhases) break;
    // Collective, between run() calls. refine_balance moves units off the ranks above
    // the average, few of them; the units' Segment& references are invalid after a move
    // (indices and UnitRefs stay valid).
    const kodo::BalanceReport report = kodo::rebalance(segments, kodo::refine_balance);
    moved += report.moved;
    const std::string what =
        report.applied ? "units moved: " + std::to_string(report.moved) + ", out of balance by " +
                             std::to_string(std::lround(100 * report.after)) + "% now"
                       : report.why;
    if (runtime.rank() == 0)
      std::printf("after phase %lld: the ranks' loads out of balance by %ld%%; %s\n",
                  static_cast<long long>(phase), std::lround(100 * report.before), what.c_str());
  }
  // [rebalance]
  segments.broadcast_local<&Segment::add_checksum>();
  runtime.run();

  const std::int64_t steps = kPhases * kStepsPerPhase;
  const bool equal = segments.reduced<std::int64_t>() == serial_checksum(units, steps);
  const bool balanced = runtime.size() == 1 || moved > 0;  // one rank has nowhere to move to
  if (runtime.rank() == 0) {
    if (!balanced) std::printf("migration_balance: NO unit moved\n");
    std::printf("migration_balance: %s after %lld steps (units moved: %lld)\n",
                equal ? "equal to the serial loop" : "NOT equal to the serial loop",
                static_cast<long long>(steps), static_cast<long long>(moved));
  }
  return equal && balanced ? 0 : 1;
}
