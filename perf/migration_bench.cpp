// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Migration's bandwidth: units that each hold one view of --bytes (device memory on a GPU
// build), --units of them per rank, moved by kodo::migrate. Each row is one migration:
//   one-way: rank 0's units go to rank 1, then back (one rank sends, one receives: the
//            same traffic as pingpong_bench's bandwidth test, which is one way);
//   rotate:  every unit goes to the next rank (every rank sends and receives at once).
// views_GBps: the views' bytes one sending rank moved over the views phase
// (MigrationReport::phases.views); whole_GBps: over the whole migration. The first
// migration each way of each size and pattern (staging allocated, peers' slots mapped) is
// marked `first`.
// Every unit's data is checked after the last migration.
//
//   mpiexec -n 2 migration_bench [--bytes 33554432,...] [--units 4] [--moves 6] [--csv FILE]

#include "options.hpp"
#include "report.hpp"

#include <kodo/kodo.hpp>

#include <cinttypes>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace {

struct Holder : kodo::WorkUnit<Holder> {
  Holder(const kodo::UnitInit<Holder>& init, std::int64_t bytes)
      : WorkUnit(init), data("data", bytes) {}
  template <class State>
  void state(State& s) {
    s("data", data);
  }
  std::uint8_t expected(std::int64_t i) const {
    return static_cast<std::uint8_t>(index().x * 131 + i * 7 + i / 4093);
  }
  void fill() {
    const auto d = data;
    const std::int64_t x = index().x;
    Kokkos::parallel_for(
        "migration_bench fill", Kokkos::RangePolicy<kodo::ExecutionSpace>(0, data.extent(0)),
        KOKKOS_LAMBDA(std::int64_t i) {
          d(i) = static_cast<std::uint8_t>(x * 131 + i * 7 + i / 4093);
        });
    Kokkos::fence();
  }
  bool holds() const {
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, data);
    for (std::size_t i = 0; i < h.extent(0); ++i)
      if (h(i) != expected(static_cast<std::int64_t>(i))) return false;
    return true;
  }
  Kokkos::View<std::uint8_t*> data;
};

}  // namespace

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  perf::Options options("migration_bench",
                        "Migration's bandwidth: units of one view each moved between ranks by "
                        "kodo::migrate, one way (rank 0 to rank 1 and back) and in a rotation "
                        "(every rank to the next), one row per migration.");
  const auto& sizes = options.integers("--bytes", "33554432,268435456", 1, std::int64_t{1} << 34,
                                       "bytes of each unit's view, comma-separated");
  const auto& units_per_rank = options.integer("--units", 4, 1, 1 << 12, "units per rank");
  const auto& moves = options.integer("--moves", 6, 2, 1 << 12,
                                      "migrations per size and pattern (the first included)");
  const auto& patterns = options.words("--patterns", {"one-way", "rotate"}, "one-way,rotate",
                                       "which to run, comma-separated");
  const auto& csv_file = options.file("--csv", "also write the rows to FILE");
  if (const auto exit = options.parse(runtime, argc, argv)) return *exit;
  if (runtime.size() < 2) {
    if (runtime.rank() == 0) std::fprintf(stderr, "migration_bench: run it on 2 ranks or more\n");
    return 2;
  }
  std::optional<perf::Csv> csv;  // rank 0 reports
  if (runtime.rank() == 0)
    csv.emplace(csv_file, argc, argv,
                "pattern,unit_bytes,move,first,units_moved,view_bytes,sending_ranks,seconds,"
                "views_s,views_GBps,whole_GBps,route");
  int failures = 0;
  try {
    for (const std::int64_t bytes : sizes) {
      for (const std::string& pattern : patterns) {
        auto units = kodo::Collection<Holder>::create(runtime,
                                                      {units_per_rank * runtime.size(), 1, 1},
                                                      bytes);
        units.for_each_local([](Holder& h) { h.fill(); });
        const std::int64_t n = units.size();
        std::vector<int> home(static_cast<std::size_t>(n));
        for (std::int64_t l = 0; l < n; ++l)
          home[static_cast<std::size_t>(l)] = units.owner(units.shape().delinear(l));
        for (std::int64_t move = 0; move < moves; ++move) {
          std::vector<int> owners(static_cast<std::size_t>(n));
          int senders = runtime.size();
          for (std::int64_t l = 0; l < n; ++l) {
            const int now = units.owner(units.shape().delinear(l));
            const std::size_t u = static_cast<std::size_t>(l);
            if (pattern == "rotate")
              owners[u] = (now + 1) % runtime.size();
            else  // rank 0's units to rank 1 at even moves, back at odd ones
              owners[u] = home[u] != 0 ? now : move % 2 == 0 ? 1 : 0;
          }
          if (pattern == "one-way") senders = 1;
          const kodo::MigrationReport r = kodo::migrate(units, owners);
          const double per_sender = static_cast<double>(r.view_bytes) / senders;
          if (csv) {
            char line[320];
            std::snprintf(line, sizeof line,
                          "%s,%" PRId64 ",%" PRId64 ",%d,%" PRId64 ",%" PRIu64
                          ",%d,%.6f,%.6f,%.1f,%.1f,%s",
                          pattern.c_str(), bytes, move + 1, move < (senders == 1 ? 2 : 1), r.moved,
                          r.view_bytes, senders, r.seconds, r.phases.views,
                          per_sender / r.phases.views / 1e9, per_sender / r.seconds / 1e9,
                          r.views_on_node ? "same-node" : "ucx");
            csv->row(line);
          }
        }
        units.for_each_local([&](const Holder& h) { failures += !h.holds(); });
      }
    }
  } catch (const kodo::Error& e) {  // the same error on every rank (migrate's agreement)
    kodo::print_error(std::string("migration_bench: ") + e.what());
    return 1;
  }
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, runtime.comm());
  if (all > 0) {
    if (runtime.rank() == 0)
      std::fprintf(stderr, "migration_bench: %d unit(s) hold other data than they were given\n",
                   all);
    return 1;
  }
  return 0;
}
