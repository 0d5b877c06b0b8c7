// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// minimd: Lennard-Jones molecular dynamics (Mantevo miniMD's problem) on overdecomposed
// work units. Every rank runs this main program; the atoms live in the units
// (atom_unit.hpp), and the main program reads the thermo reductions they produce.

#include "atom_unit.hpp"
#include "options.hpp"
#include "thermo_log.hpp"

#include <kodo/core/numeric.hpp>
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
#include <vector>

namespace {

using minimd::Options;

double now() { return MPI_Wtime(); }

// A checkpoint that cannot be written or read is the same kodo::Error on every rank:
// rank 0 says what is wrong, and every rank exits with status 1.
struct CheckpointFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The physical problem, as a checkpoint records it: a restart must continue the same one.
std::string problem_text(const minimd::Problem& p) {
  char s[400];
  std::snprintf(s, sizeof s,
                "cells %lld %lld %lld density %.17g dt %.17g cutoff %.17g skin %.17g "
                "neighbor-every %lld epsilon %.17g sigma %.17g",
                static_cast<long long>(p.nx), static_cast<long long>(p.ny),
                static_cast<long long>(p.nz), p.density, p.dt, p.force_cutoff, p.skin,
                static_cast<long long>(p.reneighbor_every), p.epsilon, p.sigma);
  if (p.slab < 1) return std::string(s) + " slab " + std::to_string(p.slab);
  return s;
}

// The unit grid: ranks x odf units with the least cut surface, each at least one
// neighbour cutoff wide (so every ghost comes from an adjacent unit).
constexpr std::int64_t kMostUnits = std::int64_t{1} << 30;

kodo::Extent3 cut_box(const Options& opt, const double length[3], int ranks) {
  const double cut = opt.problem.neighbor_cutoff();
  std::int64_t most[3];
  for (int d = 0; d < 3; ++d) most[d] = static_cast<std::int64_t>(std::floor(length[d] / cut));
  if (opt.odf > kMostUnits / ranks)
    throw std::invalid_argument(minimd::text("--odf ", opt.odf, " on ", ranks,
                                             " rank(s) asks for more than 2^30 units"));
  const std::int64_t units = opt.odf * ranks;
  const auto fail = [&] {
    return std::invalid_argument(minimd::text(units, " units (--odf ", opt.odf, " on ", ranks,
                                              " rank(s)) do not fit the box of ", length[0], " x ",
                                              length[1], " x ", length[2],
                                              ": each unit must be at least the neighbour cutoff (",
                                              cut, ") wide, so at most ", most[0], " x ", most[1],
                                              " x ", most[2], " units"));
  };
  const auto fits =
      kodo::detail::checked_mul(static_cast<std::uint64_t>(std::max<std::int64_t>(most[0], 0)),
                                static_cast<std::uint64_t>(std::max<std::int64_t>(most[1], 0)));
  const auto room =
      fits ? kodo::detail::checked_mul(*fits,
                                       static_cast<std::uint64_t>(std::max<std::int64_t>(most[2],
                                                                                         0)))
           : fits;
  if (most[0] < 1 || most[1] < 1 || most[2] < 1 ||
      (room && static_cast<std::uint64_t>(units) > *room))
    throw fail();
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

int run(kodo::Runtime& runtime, const Options& opt, const kodo::Extent3& units,
        const minimd::Setup& setup, const minimd::ThermoLog& reference) {
  const bool root = runtime.rank() == 0;
  const minimd::Problem& p = setup.problem;
  const std::int64_t natoms = minimd::created_atoms(setup);
  const double volume = setup.length[0] * setup.length[1] * setup.length[2];
  const double dof = 3.0 * static_cast<double>(natoms) - 3.0;
  if (root) {
    std::printf("# minimd (kodo, backend %s) output ...\n", KODO_BACKEND_NAME);
    std::printf("# Systemparameters: \n");
    std::printf("\t# MPI processes: %d\n", runtime.size());
    std::printf("\t# Units: %" PRId64 " (odf %" PRId64 ") as %" PRId64 " x %" PRId64 " x %" PRId64
                "\n",
                units.size(), opt.odf, units.x, units.y, units.z);
    std::printf("\t# Inputfile: %s\n",
                opt.input_file.empty() ? "none (in.lj.miniMD's values)" : opt.input_file.c_str());
    std::printf("\t# ForceStyle: LJ\n\t# Units: LJ\n");
    std::printf("\t# Atoms: %" PRId64 "\n", natoms);
    if (p.slab < 1) std::printf("\t# Slab: the lower %g of the box in x\n", p.slab);
    if (opt.balance_every > 0)
      std::printf("\t# Balancing: every %" PRId64 " steps, %s (each unit's load: its atoms)\n",
                  opt.balance_every, opt.balancer.c_str());
    std::printf("\t# System size: %.2lf %.2lf %.2lf (unit cells: %" PRId64 " %" PRId64 " %" PRId64
                ")\n",
                setup.length[0], setup.length[1], setup.length[2], p.nx, p.ny, p.nz);
    std::printf("\t# Density: %lf\n", p.density);
    std::printf("\t# Force cutoff: %lf\n", p.force_cutoff);
    std::printf("\t# Neigh cutoff: %lf\n", p.neighbor_cutoff());
    std::printf("\t# Half neighborlists: %d%s\n", opt.half_neighbor ? 1 : 0,
                opt.half_neighbor_given ? ""
                : opt.half_neighbor
                    ? " (the default on host backends, miniMD's)"
                    : " (the default on GPU backends: --half_neigh 1 for miniMD's)");
    std::printf("\t# Neighbor bin size: %.3lf %.3lf %.3lf\n", setup.bin_size[0], setup.bin_size[1],
                setup.bin_size[2]);
    std::printf("\t# Neighbor frequency: %" PRId64 "\n", p.reneighbor_every);
    std::printf("\t# Timestep size: %lf\n", p.dt);
    std::printf("\t# Thermo frequency: %" PRId64 "\n", p.thermo_every);
    std::printf("\t# Ghost Newton: %d\n", opt.ghost_newton ? 1 : 0);
    std::printf("\t# Comm: %s, completion: %s\n", opt.comm.c_str(),
                opt.sync ? "sync (fence)" : "engine");
    std::printf("\t# Plain steps: %s\n",
                setup.step_program ? "step program (one device program per rank)" : "unit by unit");
    std::printf("\t# Reneighboring steps: %s\n",
                setup.reneighbor_program ? "reneighboring program (one device program per rank)"
                                         : "unit by unit");
    std::printf("\t# Size of float: 8\n");
    std::fflush(stdout);
  }

  // A restart: the checkpoint's step, checked against this run's problem.
  std::int64_t step = 0;  // steps done
  std::optional<kodo::Checkpoint> saved;
  if (!opt.restart_dir.empty()) {
    try {
      saved = kodo::Checkpoint::open(runtime, opt.restart_dir, "minimd");
      if (saved->value("problem") != problem_text(p))
        throw kodo::Error("checkpoint " + saved->path() + " is of another problem (" +
                          saved->value("problem") + ") than this run's (" + problem_text(p) + ")");
      step = saved->integer("step");
      if (step < 0 || step > p.steps || step % p.reneighbor_every != 0)
        throw kodo::Error("checkpoint " + saved->path() + " is at step " + std::to_string(step) +
                          ": not a step of this run (-n " + std::to_string(p.steps) +
                          ") that rebuilt the lists");
    } catch (const kodo::Error& e) {
      throw CheckpointFailure(e.what());
    }
  }
  // Every reduction round's step, in order: the momentum and the kinetic energy (-1;
  // not on a restart), the start (or the restored step), then one per thermo step.
  std::vector<std::int64_t> round_steps;
  if (!saved) round_steps = {-1, -1};
  round_steps.push_back(step);
  for (std::int64_t s = step + 1; s <= p.steps; ++s)
    if (setup.thermo_step(s)) round_steps.push_back(s);
  std::vector<std::vector<double>> results;
  minimd::ThermoLog printed;
  double clock_start = 0;
  int failed = 0;
  auto atoms = kodo::Collection<minimd::AtomUnit>::create(runtime, units, setup);
  atoms.on_reduced<std::vector<double>>([&](std::uint64_t round, const std::vector<double>& r) {
    results.push_back(r);
    const std::int64_t step = round_steps.at(round);
    if (step < 0) return;
    if (r.size() != 7 || r[3] != static_cast<double>(natoms)) {
      if (root)
        std::printf("FAILED: step %" PRId64 ": %.0f atoms where %" PRId64 " were created\n", step,
                    r.size() == 7 ? r[3] : -1.0, natoms);
      failed = 1;
      return;
    }
    // In the frame of the centre of mass (which stays at rest without --drift): the
    // temperature does not depend on a uniform motion of the whole box.
    const double t =
        (r[0] - (r[4] * r[4] + r[5] * r[5] + r[6] * r[6]) / static_cast<double>(natoms)) / dof;
    const double u = r[1] / static_cast<double>(natoms);
    const double pressure = (t * dof + r[2]) / (3.0 * volume);
    if (!std::isfinite(t) || !std::isfinite(u) || !std::isfinite(pressure)) {
      // The same values on every rank (a reduction): every rank ends alike.
      if (root)
        kodo::print_error(minimd::text("minimd: error: the thermo of step ", step,
                                       " is not finite (T ", t, ", U ", u, ", P ", pressure,
                                       "): the system blew up (a time step too large?)"));
      failed = 1;
      return;
    }
    char line[160];
    std::snprintf(line, sizeof line, "%" PRId64 " %e %e %e %6.3lf", step, t, u, pressure,
                  step == 0 ? 0.0 : now() - clock_start);
    printed.add_line(line);
    if (root) {
      std::printf("%s\n", line);
      std::fflush(stdout);
    }
  });
  runtime.run();

  if (saved) {
    try {
      saved->restore(atoms, [&](minimd::AtomUnit& unit, const kodo::SavedCollection& old) {
        unit.restore(old, step);
      });
      std::int64_t restored = 0;
      atoms.for_each_local([&](const minimd::AtomUnit& unit) {
        restored += unit.own_atom_count();
      });
      MPI_Allreduce(MPI_IN_PLACE, &restored, 1, MPI_INT64_T, MPI_SUM, runtime.comm());
      if (restored != natoms)
        throw kodo::Error("checkpoint " + saved->path() + " holds " + std::to_string(restored) +
                          " atoms where the problem has " + std::to_string(natoms));
    } catch (const kodo::Error& e) {
      throw CheckpointFailure(e.what());
    }
    if (root) {
      std::printf("# Restarted from %s at step %" PRId64 " (written by %d rank(s))\n",
                  saved->path().c_str(), step, saved->ranks());
      std::printf("# Starting dynamics ...\n# Timestep T U P Time\n");
      std::fflush(stdout);
    }
    clock_start = now();
    atoms.broadcast_local<&minimd::AtomUnit::resume>();
    runtime.run();
  } else {
    atoms.broadcast_local<&minimd::AtomUnit::report_momentum>();
    runtime.run();
    std::vector<double> mean = results.at(0);
    for (double& m : mean) m /= static_cast<double>(natoms);
    atoms.broadcast_local<&minimd::AtomUnit::remove_drift>(mean);
    runtime.run();
    const double t_initial = results.at(1).at(0) / dof;
    const double factor = std::sqrt(p.temperature / t_initial);
    if (root) {
      std::printf("# Starting dynamics ...\n# Timestep T U P Time\n");
      std::fflush(stdout);
    }
    atoms.broadcast_local<&minimd::AtomUnit::start>(factor, opt.drift);
    runtime.run();
  }
  const double setup_end = now();
  clock_start = setup_end;
  *setup.timers = minimd::Timers{};
  // The plain steps as one device program per rank (atom_unit.hpp), built again when a
  // unit's views change: every rank decides alike, as building it is collective.
  std::optional<kodo::StepProgram<minimd::AtomUnit>> program;
  int programs_built = 0;
  std::int64_t plain_steps = 0;
  double plain_seconds = 0, build_seconds = 0;  // this rank's
  // Whether a program must be built (again), agreed by every rank: it has none yet, or a
  // unit's views changed since its plan (`current`).
  auto must_build = [&](bool exists, bool (minimd::AtomUnit::*current)() const) {
    int stale = exists ? 0 : 1;
    atoms.for_each_local([&](const minimd::AtomUnit& unit) {
      if (!(unit.*current)()) stale = 1;
    });
    MPI_Allreduce(MPI_IN_PLACE, &stale, 1, MPI_INT, MPI_MAX, runtime.comm());
    return stale != 0;
  };
  const kodo::CommMode program_comm = setup.host_staged ? kodo::CommMode::host_staged
                                                        : kodo::CommMode::device;
  auto run_program = [&](std::int64_t steps) {
    const bool stale = must_build(program.has_value(), &minimd::AtomUnit::plan_current);
    const double t0 = now();
    if (stale) {
      program.reset();  // its graphs and channels go before the new one's
      program.emplace(atoms, kodo::StepProgramOptions{.phases = minimd::AtomUnit::program_phases,
                                                      .comm = program_comm});
      ++programs_built;
    }
    const double t1 = now();
    build_seconds += t1 - t0;
    // Before run(): a unit of another rank may finish these steps and send data of the
    // next one while this rank's run() still goes on.
    atoms.for_each_local([&](minimd::AtomUnit& unit) { unit.program_runs(steps); });
    program->advance(minimd::AtomUnit::program_phases * steps);
    runtime.run();
    plain_seconds += now() - t1;
    plain_steps += steps;
  };
  // A reneighboring step without thermo as the second program (atom_unit.hpp): run again
  // unit by unit, on every rank, where a count outgrew its room on any.
  std::optional<kodo::StepProgram<minimd::AtomUnit>> reneighboring;
  int reneighboring_builds = 0;
  std::int64_t reneighboring_steps = 0, reneighboring_redone = 0;
  double reneighboring_seconds = 0;
  auto run_reneighboring = [&] {
    const bool stale =
        must_build(reneighboring.has_value(), &minimd::AtomUnit::reneighbor_plan_current);
    const double t0 = now();
    if (stale) {
      reneighboring.reset();
      reneighboring.emplace(atoms,
                            kodo::StepProgramOptions{.phases = minimd::AtomUnit::reneighbor_phases,
                                                     .comm = program_comm},
                            &minimd::AtomUnit::plan_reneighbor);
      ++reneighboring_builds;
    }
    const double t1 = now();
    build_seconds += t1 - t0;
    atoms.for_each_local([&](minimd::AtomUnit& unit) { unit.program_runs(1); });
    reneighboring->advance(minimd::AtomUnit::reneighbor_phases);
    runtime.run();
    int fitted = 1;
    atoms.for_each_local([&](minimd::AtomUnit& unit) {
      if (!unit.reneighbor_program_fitted()) fitted = 0;
    });
    MPI_Allreduce(MPI_IN_PLACE, &fitted, 1, MPI_INT, MPI_MIN, runtime.comm());
    if (fitted) {
      atoms.for_each_local([&](minimd::AtomUnit& unit) { unit.take_reneighbor_counts(); });
      ++reneighboring_steps;
    } else {
      atoms.for_each_local([&](minimd::AtomUnit& unit) { unit.undo_reneighbor_program(); });
      atoms.broadcast_local<&minimd::AtomUnit::run>(1);
      runtime.run();
      ++reneighboring_redone;
    }
    reneighboring_seconds += now() - t1;
  };
  // Steps up to `last`: runs of plain steps through the program, reneighboring steps
  // through the other where it runs, the rest unit by unit.
  auto by_program = [&](std::int64_t s) { return setup.step_program && setup.plain_step(s); };
  auto by_reneighboring = [&](std::int64_t s) {
    return setup.reneighbor_program && setup.reneighbor_step(s);
  };
  auto run_to = [&](std::int64_t last) {
    while (step < last) {
      if (by_reneighboring(step + 1)) {
        run_reneighboring();
        ++step;
        continue;
      }
      const bool plain = by_program(step + 1);
      std::int64_t n = 1;
      while (step + n < last && by_program(step + n + 1) == plain &&
             !by_reneighboring(step + n + 1))
        ++n;
      if (plain) {
        run_program(n);
      } else {
        atoms.broadcast_local<&minimd::AtomUnit::run>(n);
        runtime.run();
      }
      step += n;
    }
  };
  // A balance point (--balance-every): each unit's load is its atoms. Where units moved,
  // every unit was rebuilt from its state (as by a restart), and resumes: ghosts, lists,
  // force, and a thermo round that is not printed (its step's line was).
  std::optional<kodo::LbData> lb_data;
  if (!opt.lb_data_dir.empty()) lb_data.emplace(runtime, opt.lb_data_dir);
  int balance_points = 0, balances_applied = 0;
  std::int64_t units_moved = 0;
  double moving_seconds = 0;
  auto balance = [&] {
    atoms.for_each_local([](minimd::AtomUnit& unit) {
      unit.set_load(static_cast<double>(unit.own_atom_count()));
    });
    const kodo::BalanceReport r = kodo::rebalance(atoms, kodo::balancer_named(opt.balancer),
                                                  {.always = opt.balancer == "rotate"});
    if (lb_data) lb_data->add_phase(atoms, r);
    ++balance_points;
    if (!r.applied || r.moved == 0) return;
    ++balances_applied;
    units_moved += r.moved;
    moving_seconds += r.migration.seconds;
    if (root)
      std::printf("# balance at step %" PRId64 ": %s moved %" PRId64
                  " unit(s) (%.3f MB) in %.4f s; max/avg - 1 %.3f -> %.3f (%s)\n",
                  step, opt.balancer.c_str(), r.moved, static_cast<double>(r.migration.bytes) / 1e6,
                  r.migration.seconds, r.before, r.after,
                  kodo::describe_phases(r.migration).c_str());
    round_steps.insert(round_steps.begin() + static_cast<std::ptrdiff_t>(results.size()), -1);
    atoms.broadcast_local<&minimd::AtomUnit::resume>();
    runtime.run();
  };
  // Up to the last step, with a checkpoint at every multiple of --checkpoint-every and a
  // balance point at every multiple of --balance-every.
  const std::int64_t first_step = step;
  auto next_multiple = [&](std::int64_t every) {
    return every > 0 ? std::min(p.steps, (step / every + 1) * every) : p.steps;
  };
  while (step < p.steps) {
    const std::int64_t every = opt.checkpoint_every;
    run_to(std::min(next_multiple(every), next_multiple(opt.balance_every)));
    if (opt.balance_every > 0 && step % opt.balance_every == 0 && step < p.steps) balance();
    if (every == 0 || step % every != 0) continue;
    try {
      const auto r =
          kodo::write_checkpoint(runtime, opt.checkpoint_dir,
                                 {"minimd",
                                  {{"problem", problem_text(p)}, {"step", std::to_string(step)}}},
                                 atoms);
      clock_start += r.seconds;  // the thermo's time column leaves checkpoints out
      if (root)
        std::printf("# checkpoint at step %" PRId64 ": %s, %.3f MB in %.4f s (%.2f GB/s)\n", step,
                    r.path.c_str(), static_cast<double>(r.bytes) / 1e6, r.seconds,
                    static_cast<double>(r.bytes) / 1e9 / r.seconds);
    } catch (const kodo::Error& e) {
      throw CheckpointFailure(e.what());
    }
  }
  const double total = now() - clock_start;
  if (root && balance_points > 0)
    std::printf("# balancing: %d balance point(s), %d applied, %" PRId64
                " unit move(s), %.4f s moving\n",
                balance_points, balances_applied, units_moved, moving_seconds);
  if (lb_data) lb_data->write();
  if (root && setup.step_program) {
    const std::string reneighbored =
        setup.reneighbor_program
            ? minimd::text(", ", reneighboring_steps + reneighboring_redone,
                           " reneighboring steps by their program (built ", reneighboring_builds,
                           " time(s); ", reneighboring_redone, " run again unit by unit",
                           reneighboring && reneighboring->transfers_on_device()
                               ? "; its graphs make the transfers with other ranks"
                               : "",
                           ") in ", reneighboring_seconds, " s")
            : std::string();
    std::printf("# step program: built %d time(s) in %.6f s%s%s; %" PRId64
                " plain steps in %.6f s%s, the other %" PRId64 " in %.6f s (rank 0)\n",
                programs_built, build_seconds,
                program && !program->replays_graphs() ? ", its work called step by step" : "",
                program && program->transfers_on_device()
                    ? ", its graphs make the transfers with other ranks"
                    : "",
                plain_steps, plain_seconds, reneighbored.c_str(),
                p.steps - first_step - plain_steps - reneighboring_steps - reneighboring_redone,
                total - plain_seconds - build_seconds - reneighboring_seconds);
  }
  const std::int64_t steps_run = p.steps - first_step;

  // The time split: the longest over ranks (measured with --sync only).
  double split[3] = {setup.timers->force, setup.timers->neighbor, setup.timers->comm};
  MPI_Allreduce(MPI_IN_PLACE, split, 3, MPI_DOUBLE, MPI_MAX, runtime.comm());
  const double rate =
      total > 0 ? static_cast<double>(natoms) * static_cast<double>(steps_run) / total : 0;
  const kodo::RecordingReport recorded = runtime.recording();
  if (root) {
    if (recorded.turns > 0)
      std::printf("# Recorded turns (rank 0): %" PRIu64 ", %" PRIu64 " programs built, %" PRIu64
                  " ended early%s%s\n",
                  recorded.turns, recorded.instantiated, recorded.ended_early,
                  recorded.on ? "" : "; then stopped: ", recorded.off_because.c_str());
    else
      std::printf("# Recorded turns: none (%s)\n", recorded.off_because.c_str());
    std::printf("\n# Performance Summary:\n");
    if (opt.sync)
      std::printf("# %.4e atom-steps/s: %" PRId64 " atoms, %" PRId64
                  " steps in %.6f s (force %.6f s, "
                  "neighbour %.6f s, communication %.6f s, other %.6f s)\n",
                  rate, natoms, steps_run, total, split[0], split[1], split[2],
                  total - split[0] - split[1] - split[2]);
    else
      std::printf("# %.4e atom-steps/s: %" PRId64 " atoms, %" PRId64
                  " steps in %.6f s (the parts of "
                  "a step overlap across units: run with --sync for the time split)\n",
                  rate, natoms, steps_run, total);
    std::printf(
        "# PERF_SUMMARY ranks odf steps natoms t_total t_force t_neigh t_comm t_other "
        "atom_steps_per_s\n");
    if (opt.sync)
      std::printf("PERF_SUMMARY %d %" PRId64 " %" PRId64 " %" PRId64
                  " %.6f %.6f %.6f %.6f %.6f %.6e\n",
                  runtime.size(), opt.odf, steps_run, natoms, total, split[0], split[1], split[2],
                  total - split[0] - split[1] - split[2], rate);
    else
      std::printf("PERF_SUMMARY %d %" PRId64 " %" PRId64 " %" PRId64 " %.6f nan nan nan nan %.6e\n",
                  runtime.size(), opt.odf, steps_run, natoms, total, rate);
    if (!reference.empty()) {
      std::string why;
      const int compared = printed.compare_with(reference, why);
      if (compared > 0 && why.empty()) {
        std::printf("verified: %d thermo line(s) equal the reference's to the last printed digit\n",
                    compared);
      } else {
        std::printf("FAILED: %s\n",
                    why.empty() ? "no thermo step in common with the reference" : why.c_str());
        failed = 1;
      }
    }
    std::fflush(stdout);
  }
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, runtime.comm());
  return failed;
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
  if (runtime.print_usage_if_requested(minimd::usage())) return 0;
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
    // By default on one rank only: on several, its build (device links) costs about what it
    // saves in a few hundred steps (docs/performance.md).
    setup.reneighbor_program =
        setup.step_program &&
        (opt.reneighbor_program < 0 ? runtime.size() == 1 : opt.reneighbor_program == 1);
    setup.timers = &timers;
    if (!opt.reference.empty()) reference = minimd::ThermoLog::read(opt.reference);
  } catch (const std::exception& e) {
    if (root) kodo::print_error(std::string("minimd: error: ") + e.what() + "\n" + minimd::usage());
    return 2;
  }
  try {
    return run(runtime, opt, units, setup, reference);
  } catch (const CheckpointFailure& e) {
    if (root) kodo::print_error(std::string("minimd: ") + e.what());
    return 1;
  } catch (const std::exception& e) {
    kodo::fatal(std::string("minimd: ") + e.what());
  }
}
