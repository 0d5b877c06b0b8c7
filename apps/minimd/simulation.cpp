// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "simulation.hpp"

#include "error.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

namespace minimd {
namespace {

double now() { return MPI_Wtime(); }

using Atoms = kodo::Collection<AtomUnit>;

void print_parameters(const kodo::Runtime& runtime, const Options& opt, const kodo::Extent3& units,
                      const Setup& setup, std::int64_t natoms) {
  const Problem& p = setup.problem;
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
              : opt.half_neighbor     ? " (the default on host backends, miniMD's)"
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

// A restart's checkpoint and step, checked against this run's problem (none: step 0).
struct Restart {
  std::int64_t step = 0;  // steps done
  std::optional<kodo::Checkpoint> saved;
};

Restart open_restart(kodo::Runtime& runtime, const Options& opt, const Problem& p) {
  Restart r;
  if (opt.restart_dir.empty()) return r;
  try {
    r.saved = kodo::Checkpoint::open(runtime, opt.restart_dir, "minimd");
    if (r.saved->value("problem") != problem_text(p))
      throw minimd::Error("checkpoint " + r.saved->path() + " is of another problem (" +
                          r.saved->value("problem") + ") than this run's (" + problem_text(p) +
                          ")");
    r.step = r.saved->integer("step");
    if (r.step < 0 || r.step > p.steps || r.step % p.reneighbor_every != 0)
      throw minimd::Error("checkpoint " + r.saved->path() + " is at step " +
                          std::to_string(r.step) + ": not a step of this run (-n " +
                          std::to_string(p.steps) + ") that rebuilt the lists");
  } catch (const kodo::Error& e) {  // the files, the keys
    throw CheckpointFailure(e.what());
  } catch (const minimd::Error& e) {  // a checkpoint of another run
    throw CheckpointFailure(e.what());
  }
  return r;
}

// The thermo: every reduction round's step, in order (the momentum and the kinetic energy,
// -1, not on a restart; the start, or the restored step; one per thermo step; -1 for the
// round of each balance that moved units), the rounds' results, the lines printed.
class Thermo {
 public:
  Thermo(const kodo::Runtime& runtime, const Setup& setup, std::int64_t natoms, const Restart& r)
      : root_(runtime.rank() == 0),
        natoms_(natoms),
        volume_(setup.length[0] * setup.length[1] * setup.length[2]),
        dof_(3.0 * static_cast<double>(natoms) - 3.0) {
    if (!r.saved) round_steps_ = {-1, -1};
    round_steps_.push_back(r.step);
    for (std::int64_t s = r.step + 1; s <= setup.problem.steps; ++s)
      if (setup.thermo_step(s)) round_steps_.push_back(s);
  }

  // A round's result (Collection::on_reduced): a thermo line where its step has one.
  void add(std::uint64_t round, const std::vector<double>& r) {
    results_.push_back(r);
    const std::int64_t step = round_steps_.at(round);
    if (step < 0) return;
    if (r.size() != 7 || r[3] != static_cast<double>(natoms_)) {
      if (root_)
        std::printf("FAILED: step %" PRId64 ": %.0f atoms where %" PRId64 " were created\n", step,
                    r.size() == 7 ? r[3] : -1.0, natoms_);
      failed = 1;
      return;
    }
    // In the frame of the centre of mass (which stays at rest without --drift): the
    // temperature does not depend on a uniform motion of the whole box.
    const double n = static_cast<double>(natoms_);
    const double t = (r[0] - (r[4] * r[4] + r[5] * r[5] + r[6] * r[6]) / n) / dof_;
    const double u = r[1] / n;
    const double pressure = (t * dof_ + r[2]) / (3.0 * volume_);
    if (!std::isfinite(t) || !std::isfinite(u) || !std::isfinite(pressure)) {
      // The same values on every rank (a reduction): every rank ends alike.
      if (root_)
        kodo::print_error(text("minimd: error: the thermo of step ", step, " is not finite (T ", t,
                               ", U ", u, ", P ", pressure,
                               "): the system blew up (a time step too large?)"));
      failed = 1;
      return;
    }
    char line[160];
    std::snprintf(line, sizeof line, "%" PRId64 " %e %e %e %6.3lf", step, t, u, pressure,
                  step == 0 ? 0.0 : now() - clock_start);
    printed_.add_line(line);
    if (root_) {
      std::printf("%s\n", line);
      std::fflush(stdout);
    }
  }
  // A balance moved units: their resume reduces once more, a round printed by no line.
  void add_unprinted_round() {
    round_steps_.insert(round_steps_.begin() + static_cast<std::ptrdiff_t>(results_.size()), -1);
  }
  const std::vector<double>& result(std::size_t k) const { return results_.at(k); }
  double dof() const { return dof_; }
  const ThermoLog& printed() const { return printed_; }

  double clock_start = 0;  // the time column's origin (checkpoints move it on)
  int failed = 0;

 private:
  bool root_;
  std::int64_t natoms_;
  double volume_, dof_;
  std::vector<std::int64_t> round_steps_;
  std::vector<std::vector<double>> results_;
  ThermoLog printed_;
};

// The atoms restored from the checkpoint and resumed, or started afresh: the drift
// removed, the velocities scaled to the temperature.
void start(kodo::Runtime& runtime, const Options& opt, const Setup& setup, std::int64_t natoms,
           Atoms& atoms, Thermo& thermo, Restart& restart) {
  const bool root = runtime.rank() == 0;
  if (restart.saved) {
    try {
      restart.saved->restore(atoms, [&](AtomUnit& unit, const kodo::SavedCollection& old) {
        unit.restore(old, restart.step);
      });
      std::int64_t restored = 0;
      atoms.for_each_local([&](const AtomUnit& unit) { restored += unit.own_atom_count(); });
      MPI_Allreduce(MPI_IN_PLACE, &restored, 1, MPI_INT64_T, MPI_SUM, runtime.comm());
      if (restored != natoms)
        throw minimd::Error("checkpoint " + restart.saved->path() + " holds " +
                            std::to_string(restored) + " atoms where the problem has " +
                            std::to_string(natoms));
    } catch (const kodo::Error& e) {  // the files, the units' restores
      throw CheckpointFailure(e.what());
    } catch (const minimd::Error& e) {  // atoms lost or gained, counted over every rank
      throw CheckpointFailure(e.what());
    }
    if (root) {
      std::printf("# Restarted from %s at step %" PRId64 " (written by %d rank(s))\n",
                  restart.saved->path().c_str(), restart.step, restart.saved->ranks());
      std::printf("# Starting dynamics ...\n# Timestep T U P Time\n");
      std::fflush(stdout);
    }
    thermo.clock_start = now();
    atoms.broadcast_local<&AtomUnit::resume>();
    runtime.run();
    return;
  }
  atoms.broadcast_local<&AtomUnit::report_momentum>();
  runtime.run();
  std::vector<double> mean = thermo.result(0);
  for (double& m : mean) m /= static_cast<double>(natoms);
  atoms.broadcast_local<&AtomUnit::remove_drift>(mean);
  runtime.run();
  const double t_initial = thermo.result(1).at(0) / thermo.dof();
  const double factor = std::sqrt(setup.problem.temperature / t_initial);
  if (root) {
    std::printf("# Starting dynamics ...\n# Timestep T U P Time\n");
    std::fflush(stdout);
  }
  atoms.broadcast_local<&AtomUnit::start>(factor, opt.drift);
  runtime.run();
}

// The steps after the start: runs of plain steps through the step program, reneighboring
// steps through the other where they run, the rest unit by unit; a checkpoint at every
// multiple of --checkpoint-every and a balance point at every multiple of --balance-every.
// The programs are built again when a unit's views change: every rank decides alike, as
// building one is collective.
class Steps {
 public:
  Steps(kodo::Runtime& runtime, const Options& opt, const Setup& setup, Atoms& atoms,
        Thermo& thermo, std::int64_t step)
      : runtime_(runtime),
        opt_(opt),
        setup_(setup),
        atoms_(atoms),
        thermo_(thermo),
        root_(runtime.rank() == 0),
        step_(step),
        first_step_(step),
        program_comm_(setup.host_staged ? kodo::CommMode::host_staged : kodo::CommMode::device) {
    if (!opt.lb_data_dir.empty()) lb_data_.emplace(runtime, opt.lb_data_dir);
  }

  // Up to the last step.
  void run_all() {
    const std::int64_t last = setup_.problem.steps;
    while (step_ < last) {
      const std::int64_t every = opt_.checkpoint_every;
      run_to(std::min(next_multiple(every), next_multiple(opt_.balance_every)));
      if (opt_.balance_every > 0 && step_ % opt_.balance_every == 0 && step_ < last) balance();
      if (every > 0 && step_ % every == 0) checkpoint();
    }
  }

  std::int64_t steps_run() const { return setup_.problem.steps - first_step_; }

  // What the balance points and the programs did (rank 0), the LB data written; `total`:
  // the seconds of all steps.
  void finish(double total) {
    if (root_ && balance_points_ > 0)
      std::printf("# balancing: %d balance point(s), %d applied, %" PRId64
                  " unit move(s), %.4f s moving\n",
                  balance_points_, balances_applied_, units_moved_, moving_seconds_);
    if (lb_data_) lb_data_->write();
    if (!root_ || !setup_.step_program) return;
    const std::string reneighbored =
        setup_.reneighbor_program
            ? text(", ", reneighboring_steps_ + reneighboring_redone_,
                   " reneighboring steps by their program (built ", reneighboring_builds_,
                   " time(s); ", reneighboring_redone_, " run again unit by unit",
                   reneighboring_ && reneighboring_->transfers_on_device()
                       ? "; its graphs make the transfers with other ranks"
                       : "",
                   ") in ", reneighboring_seconds_, " s")
            : std::string();
    std::printf("# step program: built %d time(s) in %.6f s%s%s; %" PRId64
                " plain steps in %.6f s%s, the other %" PRId64 " in %.6f s (rank 0)\n",
                programs_built_, build_seconds_,
                program_ && !program_->replays_graphs() ? ", its work called step by step" : "",
                program_ && program_->transfers_on_device()
                    ? ", its graphs make the transfers with other ranks"
                    : "",
                plain_steps_, plain_seconds_, reneighbored.c_str(),
                steps_run() - plain_steps_ - reneighboring_steps_ - reneighboring_redone_,
                total - plain_seconds_ - build_seconds_ - reneighboring_seconds_);
  }

 private:
  std::int64_t next_multiple(std::int64_t every) const {
    const std::int64_t last = setup_.problem.steps;
    return every > 0 ? std::min(last, (step_ / every + 1) * every) : last;
  }
  bool by_program(std::int64_t s) const { return setup_.step_program && setup_.plain_step(s); }
  bool by_reneighboring(std::int64_t s) const {
    return setup_.reneighbor_program && setup_.reneighbor_step(s);
  }

  // Steps up to `last`.
  void run_to(std::int64_t last) {
    while (step_ < last) {
      if (by_reneighboring(step_ + 1)) {
        run_reneighboring();
        ++step_;
        continue;
      }
      const bool plain = by_program(step_ + 1);
      std::int64_t n = 1;
      // A program's run ends at a thermo step, whose sums are taken after it.
      while (step_ + n < last && by_program(step_ + n + 1) == plain &&
             !by_reneighboring(step_ + n + 1) && !(plain && setup_.thermo_step(step_ + n)))
        ++n;
      if (plain) {
        run_program(n);
      } else {
        atoms_.broadcast_local<&AtomUnit::run>(n);
        runtime_.run();
      }
      step_ += n;
    }
  }

  // Whether a program must be built (again), agreed by every rank: it has none yet, or a
  // unit's views changed since its plan (`current`).
  bool must_build(bool exists, bool (AtomUnit::*current)() const) {
    int stale = exists ? 0 : 1;
    atoms_.for_each_local([&](const AtomUnit& unit) {
      if (!(unit.*current)()) stale = 1;
    });
    MPI_Allreduce(MPI_IN_PLACE, &stale, 1, MPI_INT, MPI_MAX, runtime_.comm());
    return stale != 0;
  }

  // The thermo round of `step` where it has one and a program ran it.
  void sum_thermo_after_program(std::int64_t step) {
    if (!setup_.thermo_step(step)) return;
    atoms_.broadcast_local<&AtomUnit::sum_thermo>();
    runtime_.run();
  }

  // `steps` plain steps as one device program per rank (atom_unit.hpp).
  void run_program(std::int64_t steps) {
    const bool stale = must_build(program_ != nullptr, &AtomUnit::plan_current);
    const double t0 = now();
    if (stale) {
      program_.reset();  // its graphs and channels go before the new one's
      program_ = std::make_unique<kodo::StepProgram<AtomUnit>>(
          atoms_,
          kodo::StepProgramOptions{.phases = AtomUnit::program_phases, .comm = program_comm_});
      ++programs_built_;
    }
    const double t1 = now();
    build_seconds_ += t1 - t0;
    // Before run(): a unit of another rank may finish these steps and send data of the
    // next one while this rank's run() still goes on.
    atoms_.for_each_local([&](AtomUnit& unit) { unit.program_runs(steps); });
    program_->advance(AtomUnit::program_phases * steps);
    runtime_.run();
    sum_thermo_after_program(step_ + steps);
    plain_seconds_ += now() - t1;
    plain_steps_ += steps;
  }

  // A reneighboring step as the second program (atom_unit.hpp): run again
  // unit by unit, on every rank, where a count outgrew its room on any.
  void run_reneighboring() {
    const bool stale = must_build(reneighboring_ != nullptr, &AtomUnit::reneighbor_plan_current);
    const double t0 = now();
    if (stale) {
      reneighboring_.reset();
      reneighboring_ = std::make_unique<kodo::StepProgram<AtomUnit>>(
          atoms_,
          kodo::StepProgramOptions{.phases = AtomUnit::reneighbor_phases, .comm = program_comm_},
          &AtomUnit::plan_reneighbor);
      ++reneighboring_builds_;
    }
    const double t1 = now();
    build_seconds_ += t1 - t0;
    atoms_.for_each_local([&](AtomUnit& unit) { unit.program_runs(1); });
    reneighboring_->advance(AtomUnit::reneighbor_phases);
    runtime_.run();
    int fitted = 1;
    atoms_.for_each_local([&](AtomUnit& unit) {
      if (!unit.reneighbor_program_fitted()) fitted = 0;
    });
    MPI_Allreduce(MPI_IN_PLACE, &fitted, 1, MPI_INT, MPI_MIN, runtime_.comm());
    if (fitted) {
      atoms_.for_each_local([&](AtomUnit& unit) { unit.take_reneighbor_counts(); });
      sum_thermo_after_program(step_ + 1);
      ++reneighboring_steps_;
    } else {  // (run unit by unit, a thermo step sums its thermo itself)
      atoms_.for_each_local([&](AtomUnit& unit) { unit.undo_reneighbor_program(); });
      atoms_.broadcast_local<&AtomUnit::run>(1);
      runtime_.run();
      ++reneighboring_redone_;
    }
    reneighboring_seconds_ += now() - t1;
  }

  // A balance point: each unit's load is its atoms. Where units moved, every unit was
  // rebuilt from its state (as by a restart), and resumes: ghosts, lists, force, and a
  // thermo round that is not printed (its step's line was).
  void balance() {
    atoms_.for_each_local([](AtomUnit& unit) {
      unit.set_load(static_cast<double>(unit.own_atom_count()));
    });
    const kodo::BalanceReport r = kodo::rebalance(atoms_, kodo::balancer_named(opt_.balancer),
                                                  {.always = opt_.balancer == "rotate"});
    if (lb_data_) lb_data_->add_phase(atoms_, r);
    ++balance_points_;
    if (!r.applied || r.moved == 0) return;
    ++balances_applied_;
    units_moved_ += r.moved;
    moving_seconds_ += r.migration.seconds;
    if (root_)
      std::printf("# balance at step %" PRId64 ": %s moved %" PRId64
                  " unit(s) (%.3f MB) in %.4f s; max/avg - 1 %.3f -> %.3f (%s)\n",
                  step_, opt_.balancer.c_str(), r.moved,
                  static_cast<double>(r.migration.bytes) / 1e6, r.migration.seconds, r.before,
                  r.after, kodo::describe_phases(r.migration).c_str());
    thermo_.add_unprinted_round();
    atoms_.broadcast_local<&AtomUnit::resume>();
    runtime_.run();
  }

  void checkpoint() {
    try {
      const auto r = kodo::write_checkpoint(runtime_, opt_.checkpoint_dir,
                                            {"minimd",
                                             {{"problem", problem_text(setup_.problem)},
                                              {"step", std::to_string(step_)}}},
                                            atoms_);
      thermo_.clock_start += r.seconds;  // the thermo's time column leaves checkpoints out
      if (root_)
        std::printf("# checkpoint at step %" PRId64 ": %s, %.3f MB in %.4f s (%.2f GB/s)\n", step_,
                    r.path.c_str(), static_cast<double>(r.bytes) / 1e6, r.seconds,
                    static_cast<double>(r.bytes) / 1e9 / r.seconds);
    } catch (const kodo::Error& e) {
      throw CheckpointFailure(e.what());
    }
  }

  kodo::Runtime& runtime_;
  const Options& opt_;
  const Setup& setup_;
  Atoms& atoms_;
  Thermo& thermo_;
  bool root_;
  std::int64_t step_, first_step_;  // steps done, now and at the start
  kodo::CommMode program_comm_;
  // (unique_ptr: GCC 14 warns of an optional of one as maybe uninitialized)
  std::unique_ptr<kodo::StepProgram<AtomUnit>> program_, reneighboring_;
  int programs_built_ = 0, reneighboring_builds_ = 0;
  std::int64_t plain_steps_ = 0, reneighboring_steps_ = 0, reneighboring_redone_ = 0;
  double plain_seconds_ = 0, build_seconds_ = 0, reneighboring_seconds_ = 0;  // this rank's
  std::optional<kodo::LbData> lb_data_;
  int balance_points_ = 0, balances_applied_ = 0;
  std::int64_t units_moved_ = 0;
  double moving_seconds_ = 0;
};

// The performance summary and the comparison with the reference (rank 0); 1 on every
// rank where a check failed.
int report(kodo::Runtime& runtime, const Options& opt, const Setup& setup, std::int64_t natoms,
           std::int64_t steps_run, double total, const Thermo& thermo, const ThermoLog& reference) {
  int failed = thermo.failed;
  // The time split: the longest over ranks (measured with --sync only).
  double split[3] = {setup.timers->force, setup.timers->neighbor, setup.timers->comm};
  MPI_Allreduce(MPI_IN_PLACE, split, 3, MPI_DOUBLE, MPI_MAX, runtime.comm());
  const double rate =
      total > 0 ? static_cast<double>(natoms) * static_cast<double>(steps_run) / total : 0;
  const kodo::RecordingReport recorded = runtime.recording();
  if (runtime.rank() == 0) {
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
      const int compared = thermo.printed().compare_with(reference, why);
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

int run(kodo::Runtime& runtime, const Options& opt, const kodo::Extent3& units, const Setup& setup,
        const ThermoLog& reference) {
  const std::int64_t natoms = created_atoms(setup);
  if (runtime.rank() == 0) print_parameters(runtime, opt, units, setup, natoms);
  Restart restart = open_restart(runtime, opt, setup.problem);
  Thermo thermo(runtime, setup, natoms, restart);
  auto atoms = Atoms::create(runtime, units, setup);
  atoms.on_reduced<std::vector<double>>([&](std::uint64_t round, const std::vector<double>& r) {
    thermo.add(round, r);
  });
  runtime.run();
  start(runtime, opt, setup, natoms, atoms, thermo, restart);
  thermo.clock_start = now();
  *setup.timers = Timers{};
  Steps steps(runtime, opt, setup, atoms, thermo, restart.step);
  steps.run_all();
  const double total = now() - thermo.clock_start;
  steps.finish(total);
  return report(runtime, opt, setup, natoms, steps.steps_run(), total, thermo, reference);
}

std::string problem_text(const Problem& p) {
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

}  // namespace minimd
