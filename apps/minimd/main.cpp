// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// minimd: Lennard-Jones molecular dynamics (Mantevo miniMD's problem) on overdecomposed
// work units. Every rank runs this main program; the atoms live in the units
// (atom_unit.hpp), and the main program reads the thermo reductions they produce.

#include "atom_unit.hpp"
#include "options.hpp"
#include "simulation.hpp"
#include "thermo_log.hpp"

#include <kodo/kodo.hpp>

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using minimd::Options;

// The unit grid: ranks x odf units with the least cut surface, each at least one
// neighbour cutoff wide (so every ghost comes from an adjacent unit).
kodo::Extent3 cut_box(const Options& opt, const double length[3], int ranks) {
  const double cut = opt.problem.neighbor_cutoff();
  std::int64_t most[3];
  for (int d = 0; d < 3; ++d) most[d] = static_cast<std::int64_t>(std::floor(length[d] / cut));
  const std::int64_t units = kodo::units_for_odf(opt.odf, ranks);
  const auto fail = [&] {
    return std::invalid_argument(minimd::text(units, " units (--odf ", opt.odf, " on ", ranks,
                                              " rank(s)) do not fit the box of ", length[0], " x ",
                                              length[1], " x ", length[2],
                                              ": each unit must be at least the neighbour cutoff (",
                                              cut, ") wide, so at most ", most[0], " x ", most[1],
                                              " x ", most[2], " units"));
  };
  // units <= most[0] * most[1] * most[2] (each at least 1), without forming the product:
  // divided up by each in turn, what is left is at most 1.
  const auto units_fit = [&] {
    auto left = static_cast<std::uint64_t>(units);
    for (const std::int64_t m : most) {
      const auto by = static_cast<std::uint64_t>(m);
      left = left / by + (left % by != 0);
    }
    return left <= 1;
  };
  if (most[0] < 1 || most[1] < 1 || most[2] < 1 || !units_fit()) throw fail();
  // A unit's atoms are indexed by 32-bit integers: the box's atoms, spread over the units,
  // must fit (a box too large for them would only be found after creating its atoms).
  if (opt.problem.atoms() / units > INT_MAX / 2)
    throw std::invalid_argument(minimd::text(
        opt.problem.atoms(), " atoms in ", units,
        " unit(s) are more than a unit's 32-bit indices hold (2^30 atoms each): use more units "
        "(--odf or ranks) or a smaller box"));
  try {
    return kodo::split_grid({most[0], most[1], most[2]}, units);
  } catch (const kodo::Error&) {
    throw fail();
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<kodo::Runtime> started;
  try {
    started = std::make_unique<kodo::Runtime>(argc, argv);
  } catch (const kodo::Error& e) {
    kodo::print_error(std::string("minimd: ") + e.what());
    return 1;
  }
  kodo::Runtime& runtime = *started;
  // -h is this program's short --help (kodo leaves -h to programs).
  const bool short_help =
      std::any_of(argv + 1, argv + argc, [](const char* a) { return std::string_view(a) == "-h"; });
  if (runtime.print_usage_if_requested(minimd::usage(), short_help)) return 0;
  const bool root = runtime.rank() == 0;
  // Every rank reads the same arguments and files and so reaches the same verdict.
  Options opt;
  kodo::Extent3 units;
  minimd::Timers timers;
  minimd::Setup setup;
  minimd::ThermoLog reference;
  try {
    opt = minimd::parse_options(std::vector<std::string>(argv + 1, argv + argc), !kodo::host_build);
    const minimd::Problem& p = opt.problem;
    setup.problem = p;
    const double lattice = std::pow(4.0 / p.density, 1.0 / 3.0);
    const std::int64_t cells[3] = {p.nx, p.ny, p.nz};
    for (int d = 0; d < 3; ++d) {
      setup.length[d] = static_cast<double>(cells[d]) * lattice;
      if (opt.bins > 8 * cells[d])  // more is no use, and the bins' count would overflow
        throw std::invalid_argument(minimd::text("-b ", opt.bins,
                                                 ": at most 8 neighbour bins per unit cell along "
                                                 "each dimension (",
                                                 8 * cells[d], " here)"));
      // Default: bins of about half the neighbour cutoff (fewer candidates per atom than
      // miniMD's 5/6 of a bin per unit cell, for the same lists).
      const std::int64_t bins =
          opt.bins > 0
              ? opt.bins
              : std::max<std::int64_t>(1, static_cast<std::int64_t>(setup.length[d] /
                                                                    (0.5 * p.neighbor_cutoff())));
      setup.bin_size[d] = setup.length[d] / static_cast<double>(bins);
    }
    units = cut_box(opt, setup.length, runtime.size());
    setup.list = !opt.half_neighbor ? minimd::ListKind::full
                 : opt.ghost_newton ? minimd::ListKind::half_newton
                                    : minimd::ListKind::half;
    setup.host_staged = opt.comm == "host";
    setup.sync = opt.sync;
    setup.step_program = (opt.step_program < 0 ? opt.odf > 1 : opt.step_program == 1) &&
                         setup.list == minimd::ListKind::full && !opt.sync;
    // By default with the step program, on any number of ranks (docs/performance.md: on two
    // GPUs, 1M and 4M atoms at ODF 4, 12% and 5% faster over 300 steps than unit by unit).
    setup.reneighbor_program = setup.step_program && opt.reneighbor_program != 0;
    setup.timers = &timers;
    if (!opt.reference.empty()) reference = minimd::ThermoLog::read(opt.reference);
  } catch (const std::exception& e) {
    if (root) kodo::print_error(std::string("minimd: error: ") + e.what() + "\n" + minimd::usage());
    return 2;
  }
  try {
    return minimd::run(runtime, opt, units, setup, reference);
  } catch (const minimd::CheckpointFailure& e) {
    if (root) kodo::print_error(std::string("minimd: ") + e.what());
    return 1;
  } catch (const std::exception& e) {
    kodo::fatal(std::string("minimd: ") + e.what());
  }
}
