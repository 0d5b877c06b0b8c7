// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// jacobi3d: the 7-point Jacobi iteration on an overdecomposed 3D grid (see jacobi.hpp
// for the problem). Every rank runs this main program; the work happens in the blocks.

#include "baseline.hpp"
#include "block.hpp"
#include "error.hpp"
#include "options.hpp"

#include <kodo/kodo.hpp>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

double now() { return MPI_Wtime(); }

// A checkpoint that cannot be written or read fails alike on every rank: with a
// kodo::Error from kodo (which reports a block's failed restore so too), or with a
// jacobi::Error where the checkpoint is not of this run. Rank 0 says what is wrong, and
// every rank exits with status 1.
struct CheckpointFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CheckpointTotals {
  int count = 0;
  double seconds = 0, bytes = 0;
  void add(const kodo::CheckpointReport& r, bool root, std::int64_t step) {
    ++count;
    seconds += r.seconds;
    bytes += static_cast<double>(r.bytes);
    if (root)
      std::printf("checkpoint at update %" PRId64 ": %s, %.3f MB in %.4f s (%.2f GB/s)\n", step,
                  r.path.c_str(), static_cast<double>(r.bytes) / 1e6, r.seconds,
                  static_cast<double>(r.bytes) / 1e9 / r.seconds);
  }
};

struct BalanceTotals {
  int points = 0, applied = 0;
  std::int64_t moved = 0;
  double seconds = 0, first_before = 0, last_after = 0;
  void add(const kodo::BalanceReport& r, bool root, std::int64_t step, const std::string& name) {
    if (points++ == 0) first_before = r.before;
    last_after = r.after;
    if (!r.applied) return;
    ++applied;
    moved += r.moved;
    seconds += r.migration.seconds;
    if (root)
      std::printf("balance at update %" PRId64 ": %s moved %" PRId64
                  " block(s) (%.3f MB) in %.4f s; max/avg - 1 %.3f -> %.3f (%s)\n",
                  step, name.c_str(), r.moved, static_cast<double>(r.migration.bytes) / 1e6,
                  r.migration.seconds, r.before, r.after,
                  kodo::describe_phases(r.migration).c_str());
  }
};

kodo::CheckpointReport checkpoint(kodo::Runtime& runtime, const jacobi::Options& opt,
                                  const std::string& grid, std::int64_t step,
                                  const kodo::Collection<jacobi::JacobiBlock>& blocks) {
  try {
    return kodo::write_checkpoint(runtime, opt.checkpoint_dir,
                                  {"jacobi3d", {{"grid", grid}, {"step", std::to_string(step)}}},
                                  blocks);
  } catch (const kodo::Error& e) {
    throw CheckpointFailure(e.what());
  }
}

// Restores the blocks from the latest checkpoint in --restart's directory, on any rank
// count and ODF; returns its step.
std::int64_t restart(kodo::Runtime& runtime, const jacobi::Options& opt, const std::string& grid,
                     const kodo::Collection<jacobi::JacobiBlock>& blocks) {
  try {
    const double started = now();
    const auto saved = kodo::Checkpoint::open(runtime, opt.restart_dir, "jacobi3d");
    if (saved.value("grid") != grid)
      throw jacobi::Error("checkpoint " + saved.path() + " is of grid " + saved.value("grid") +
                          ", not this run's " + grid);
    const std::int64_t step = saved.integer("step");
    if (step < 0 || step > opt.warmup + opt.iterations)
      throw jacobi::Error("checkpoint " + saved.path() + " is at update " + std::to_string(step) +
                          ", past this run's last (" + std::to_string(opt.warmup + opt.iterations) +
                          ")");
    saved.restore(blocks, [&](jacobi::JacobiBlock& block, const kodo::SavedCollection& old) {
      block.restore(old, step);
    });
    // From the call until every rank restored its blocks (restore is collective).
    const double seconds = now() - started;
    if (runtime.rank() == 0)
      std::printf("restarted from %s at update %" PRId64 " (written by %d rank(s)) in %.4f s\n",
                  saved.path().c_str(), step, saved.ranks(), seconds);
    return step;
  } catch (const kodo::Error& e) {  // the files, the keys, the blocks' restores
    throw CheckpointFailure(e.what());
  } catch (const jacobi::Error& e) {  // a checkpoint of another run
    throw CheckpointFailure(e.what());
  }
}

void print_banner(const kodo::Runtime& runtime, const jacobi::Options& opt,
                  const jacobi::Grid& grid, const kodo::Extent3& units) {
  std::printf("jacobi3d: grid %" PRId64 " x %" PRId64 " x %" PRId64 ", %d rank(s), odf %" PRId64
              ", %" PRId64 " units as %" PRId64 " x %" PRId64 " x %" PRId64
              ", backend %s, iterations %" PRId64 " (+%" PRId64
              " warm-up), %s, completion %s, comm %s, fusion %s%s%s\n",
              grid.x, grid.y, grid.z, runtime.size(), opt.odf, units.size(), units.x, units.y,
              units.z, KODO_BACKEND_NAME, opt.iterations, opt.warmup,
              opt.baseline         ? "no kodo path"
              : opt.path == "rank" ? "path rank (one device program per rank)"
              : opt.path == "task" ? "path task (each block's loop a coroutine)"
                                   : "path unit (each block on its own)",
              opt.baseline ? "none (bulk-synchronous MPI baseline)"
              : opt.sync   ? "sync (fence)"
                           : "engine",
              opt.baseline ? "MPI, host-staged" : opt.comm.c_str(), jacobi::fusion_name(opt.fusion),
              opt.graphs ? ", graphs" : "", opt.overlap ? ", overlap" : "");
}

// What a run measured, for its report.
struct Measured {
  jacobi::RankReport report;
  double init_seconds = 0, total_seconds = 0;
  std::int64_t timed_iterations = 0, updates_run = 0;
};

jacobi::BlockConfig block_config(kodo::Runtime& runtime, const jacobi::Options& opt,
                                 const jacobi::Grid& grid) {
  const bool rank_program = opt.path == "rank";
  return {grid, opt.sync ? jacobi::Completion::sync : jacobi::Completion::engine,
          kodo::parse_comm_mode(opt.comm), opt.fusion, opt.graphs, opt.overlap,
          // Units of a rank take its streams in turn: one each. On the host backend a wait
          // holds the rank, and with it the rank's other units: one unit per rank.
          !rank_program && opt.path != "task" && opt.device_waits &&
              opt.odf <= runtime.streams().per_priority() && (opt.odf == 1 || !kodo::host_build),
          rank_program, opt.path == "task", opt.imbalance,
          opt.path == "task" ? opt.balance_every : 0, opt.measured_load, opt.batches};
}

using Blocks = kodo::Collection<jacobi::JacobiBlock>;

// The blocks' updates from `step` on: the path's calls, a checkpoint at every multiple of
// --checkpoint-every and a balance at every multiple of --balance-every on the way (the
// task path balances inside run(), at the points its blocks' tasks reach), the rank
// program built again after blocks moved.
class BlockRun {
 public:
  BlockRun(kodo::Runtime& runtime, const jacobi::Options& opt, Blocks& blocks, std::int64_t step,
           std::string grid_text)
      : runtime_(runtime),
        opt_(opt),
        blocks_(blocks),
        root_(runtime.rank() == 0),
        step_(step),
        grid_text_(std::move(grid_text)),
        program_options_{.phases = 2, .comm = kodo::parse_comm_mode(opt.comm)},
        balance_options_{.always = opt.balancer == "rotate"},
        points_in_run_(opt.path == "task" && opt.balance_every > 0) {
    if (!opt.lb_data_dir.empty()) lb_data_.emplace(runtime, opt.lb_data_dir);
    if (points_in_run_)
      kodo::balance_points(blocks, kodo::balancer_named(opt.balancer), balance_options_,
                           [this](const kodo::BalanceReport& r) {
                             last_point_ = (last_point_ / opt_.balance_every + 1) *
                                           opt_.balance_every;
                             balanced_at(last_point_, r);
                           });
  }

  // The rank program, from the blocks as they are now (A[0], restored or not).
  void build_program() {
    const double built_from = now();
    program_.emplace(blocks_, program_options_);
    const double build_ms = (now() - built_from) * 1e3;
    int replays = program_->replays_graphs() ? 1 : 0, ranks_replaying = 0;
    MPI_Reduce(&replays, &ranks_replaying, 1, MPI_INT, MPI_SUM, 0, runtime_.comm());
    if (root_ && kodo::host_build)
      std::printf(
          "rank program: the host backend runs each block's iteration in turn (built "
          "in %.2f ms on rank 0)\n",
          build_ms);
    else if (root_)
      std::printf(
          "rank program: %d of %d rank(s) launch each iteration as one device graph (built "
          "in %.2f ms on rank 0)\n",
          ranks_replaying, runtime_.size(), build_ms);
  }

  void advance_to(std::int64_t target) {
    while (step_ < target) {
      const std::int64_t every = opt_.checkpoint_every;
      const std::int64_t next =
          std::min(next_multiple(every, target),
                   next_multiple(points_in_run_ ? 0 : opt_.balance_every, target));
      run_updates(next - step_);
      step_ = next;
      if (every > 0 && step_ % every == 0)
        written_.add(checkpoint(runtime_, opt_, grid_text_, step_, blocks_), root_, step_);
      // (The task path's points inside run() come before a call's last update: one that
      // ends at a multiple balances here, as the other paths do.)
      if (opt_.balance_every > 0 && step_ % opt_.balance_every == 0) balance();
    }
  }

  std::int64_t step() const { return step_; }
  double checkpoint_seconds() const { return written_.seconds; }
  const std::optional<kodo::StepProgram<jacobi::JacobiBlock>>& program() const { return program_; }

  // The checkpoints' and balances' totals, on rank 0; the LB data written.
  void finish() {
    if (root_ && written_.count > 0)
      std::printf("checkpoints: %d written, %.3f s in all (%.2f GB/s)\n", written_.count,
                  written_.seconds, written_.bytes / 1e9 / written_.seconds);
    if (root_ && balanced_.points > 0)
      std::printf("balancing: %d balance point(s), %d applied, %" PRId64
                  " block move(s), %.4f s moving, max/avg - 1 of the ranks' loads %.3f "
                  "at the first, %.3f after the last\n",
                  balanced_.points, balanced_.applied, balanced_.moved, balanced_.seconds,
                  balanced_.first_before, balanced_.last_after);
    if (lb_data_) lb_data_->write();
  }

 private:
  std::int64_t next_multiple(std::int64_t every, std::int64_t target) const {
    return every > 0 ? std::min(target, (step_ / every + 1) * every) : target;
  }

  void run_updates(std::int64_t count) {
    if (program_) {
      program_->advance(count);
      runtime_.run();
      blocks_.for_each_local([&](jacobi::JacobiBlock& b) { b.ran(count); });
    } else if (opt_.path == "task") {
      last_point_ = step_;
      blocks_.broadcast_local<&jacobi::JacobiBlock::run_iterations>(count);
      runtime_.run();
    } else {
      blocks_.broadcast_local<&jacobi::JacobiBlock::iterate>(count);
      runtime_.run();
    }
  }

  void balance() {
    const kodo::BalanceReport r =
        kodo::rebalance(blocks_, kodo::balancer_named(opt_.balancer), balance_options_);
    balanced_at(step_, r);
    // The program recorded the blocks that were: it is built again for the new ones.
    if (program_ && r.applied && r.moved > 0) {
      program_.reset();
      program_.emplace(blocks_, program_options_);
    }
  }

  void balanced_at(std::int64_t at, const kodo::BalanceReport& r) {
    if (lb_data_) lb_data_->add_phase(blocks_, r);
    balanced_.add(r, root_, at, opt_.balancer);
  }

  kodo::Runtime& runtime_;
  const jacobi::Options& opt_;
  Blocks& blocks_;
  bool root_;
  std::int64_t step_;  // updates done
  std::string grid_text_;
  kodo::StepProgramOptions program_options_;
  kodo::BalanceOptions balance_options_;
  bool points_in_run_;
  std::int64_t last_point_ = 0;  // the update of the latest balance point
  std::optional<kodo::StepProgram<jacobi::JacobiBlock>> program_;
  CheckpointTotals written_;
  BalanceTotals balanced_;
  std::optional<kodo::LbData> lb_data_;
};

// Where the unit path's streams awaited faces on the device, and whether the rank
// programs moved faces between ranks in their graphs: on rank 0.
void print_device_use(kodo::Runtime& runtime, const jacobi::Options& opt, const Blocks& blocks,
                      const BlockRun& run, const kodo::Extent3& units) {
  const bool root = runtime.rank() == 0;
  int waiting_here = 0, waiting = 0;
  blocks.for_each_local([&](const jacobi::JacobiBlock& b) { waiting_here += b.waits_on_device(); });
  MPI_Reduce(&waiting_here, &waiting, 1, MPI_INT, MPI_SUM, 0, runtime.comm());
  const auto& program = run.program();
  int on_device = program && program->transfers_on_device() ? 1 : 0, ranks_on_device = 0;
  MPI_Reduce(&on_device, &ranks_on_device, 1, MPI_INT, MPI_SUM, 0, runtime.comm());
  if (root && program && runtime.size() > 1)
    std::printf(
        "rank program: %d of %d rank(s) made their transfers with other ranks in "
        "their graphs\n",
        ranks_on_device, runtime.size());
  if (root && opt.device_waits && opt.path == "unit")
    std::printf("units whose stream awaited their faces on the device: %d of %" PRId64 "\n",
                waiting, units.size());
}

// The kodo paths: the blocks created (and restored), the warm-up, the timed iterations.
Measured run_blocks(kodo::Runtime& runtime, const jacobi::Options& opt, const jacobi::Grid& grid,
                    const kodo::Extent3& units) {
  Measured m;
  const double t0 = now();
  auto blocks = Blocks::create(runtime, units, block_config(runtime, opt, grid));
  if (opt.measured_load) kodo::measure_loads(blocks);  // from the first phase on
  runtime.run();
  const std::string grid_text = std::to_string(grid.x) + " " + std::to_string(grid.y) + " " +
                                std::to_string(grid.z);
  const std::int64_t first_step =
      opt.restart_dir.empty() ? 0 : restart(runtime, opt, grid_text, blocks);
  BlockRun run(runtime, opt, blocks, first_step, grid_text);
  if (opt.path == "rank") run.build_program();
  m.init_seconds = now() - t0;
  run.advance_to(opt.warmup);
  const std::int64_t timed_from = run.step();  // warm-up done, or restarted past it
  const double t1 = now(), written_before = run.checkpoint_seconds();
  run.advance_to(opt.warmup + opt.iterations);
  // Checkpoints are timed apart (the drain before each one stays in).
  m.total_seconds = now() - t1 - (run.checkpoint_seconds() - written_before);
  m.timed_iterations = opt.warmup + opt.iterations - timed_from;
  m.updates_run = run.step() - first_step;
  run.finish();
  blocks.broadcast_local<&jacobi::JacobiBlock::compute_checksum>();
  runtime.run();
  const auto summary = blocks.reduced<jacobi::Summary>();
  m.report = {summary.checksum, true, summary.residual(), true};
  print_device_use(runtime, opt, blocks, run, units);
  return m;
}

// Rank 0 prints what was measured and checks it; every rank returns 1 if that failed.
int report(kodo::Runtime& runtime, const jacobi::Options& opt, const jacobi::Grid& grid,
           const Measured& m) {
  int failed = 0;
  const kodo::RecordingReport recorded = runtime.recording();
  if (runtime.rank() == 0) {
    if (recorded.turns > 0)
      std::printf("recorded turns (rank 0): %" PRIu64 ", %" PRIu64
                  " of them as an updated program, %" PRIu64 " programs built, %" PRIu64
                  " ended early%s%s\n",
                  recorded.turns, recorded.reused, recorded.instantiated, recorded.ended_early,
                  recorded.on ? "" : "; then stopped: ", recorded.off_because.c_str());
    else
      std::printf("recorded turns: none (%s)\n", recorded.off_because.c_str());
    std::printf("init time: %.6f s\n", m.init_seconds);
    std::printf("total time: %.6f s%s\n", m.total_seconds,
                opt.checkpoint_every > 0 ? " (checkpoint writing excluded)" : "");
    std::printf("average iteration time: %.3f us\n",
                m.timed_iterations > 0
                    ? m.total_seconds / static_cast<double>(m.timed_iterations) * 1e6
                    : 0.0);
    std::printf("checksum: 0x%016" PRIx64 "\n", m.report.checksum);
    if (m.report.have_residual && m.updates_run > 0)
      std::printf("residual: %.6e (L2 norm of the last update, by %s)\n", m.report.residual,
                  jacobi::residual_method());
    if (!std::isfinite(m.report.residual)) {  // the check that holds at every size
      std::printf("FAILED: the residual is not a finite number\n");
      failed = 1;
    }
    if (opt.verify) {
      const std::uint64_t expected =
          jacobi::serial_reference_checksum(grid, opt.warmup + opt.iterations);
      if (expected == m.report.checksum) {
        std::printf("verified: the checksum equals the serial reference's\n");
      } else {
        std::printf("FAILED: the serial reference's checksum is 0x%016" PRIx64 "\n", expected);
        failed = 1;
      }
    }
    std::fflush(stdout);
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, runtime.comm());
  return failed;
}

// `units`: the unit grid, already cut (and so checked) by main.
int run(kodo::Runtime& runtime, const jacobi::Options& opt, const kodo::Extent3& units) {
  const jacobi::Grid grid{opt.x, opt.y, opt.z};
  if (runtime.rank() == 0) print_banner(runtime, opt, grid, units);
  Measured m;
  if (opt.baseline) {
    const auto result =
        jacobi::run_baseline(runtime.comm(), grid, units, opt.warmup, opt.iterations);
    m.total_seconds = result.seconds;
    m.report = result.report;
    m.timed_iterations = opt.iterations;
    m.updates_run = opt.warmup + opt.iterations;
  } else {
    m = run_blocks(runtime, opt, grid, units);
  }
  return report(runtime, opt, grid, m);
}

}  // namespace

int main(int argc, char** argv) {
  // A rank that cannot start (no GPU, a UCX failure) says why; every rank then stops.
  std::unique_ptr<kodo::Runtime> started;
  try {
    started = std::make_unique<kodo::Runtime>(argc, argv);
  } catch (const kodo::Error& e) {
    kodo::print_error(std::string("jacobi3d: ") + e.what());
    return 1;
  }
  kodo::Runtime& runtime = *started;
  // -h is this program's short --help (kodo leaves -h to programs).
  const bool short_help =
      std::any_of(argv + 1, argv + argc, [](const char* a) { return std::string_view(a) == "-h"; });
  if (runtime.print_usage_if_requested(jacobi::usage(), short_help)) return 0;
  const bool root = runtime.rank() == 0;
  // Every rank parses and checks the same arguments and so reaches the same verdict:
  // on bad input they all stop at once, with the message printed by rank 0. Other
  // errors may strike one rank alone (e.g. memory for the serial reference); they end
  // the job (kodo::fatal) rather than leave the other ranks waiting.
  jacobi::Options opt;
  kodo::Extent3 units;
  try {
    opt = jacobi::parse_options(std::vector<std::string>(argv + 1, argv + argc));
    if (opt.baseline && opt.odf != 1)
      throw std::invalid_argument("--baseline runs one block per rank: --odf must be 1");
    if (opt.baseline && (opt.graphs || opt.overlap || opt.fusion != jacobi::Fusion::none ||
                         opt.sync || opt.comm != "device" || opt.waits_given))
      throw std::invalid_argument(
          "--baseline is its own method: it takes no --graphs, --overlap, --fusion, --sync, "
          "--waits, --comm or --path");
    if (opt.baseline && (opt.checkpoint_every > 0 || !opt.restart_dir.empty()))
      throw std::invalid_argument("--baseline writes no checkpoints and restarts from none");
    if (opt.overlap && (opt.graphs || opt.fusion != jacobi::Fusion::none))
      throw std::invalid_argument(
          "--overlap has its own kernels: it takes no --fusion or --graphs");
    if (opt.graphs && opt.path == "unit" && runtime.recording().on)
      throw std::invalid_argument(
          "--graphs submits Kokkos graphs on the blocks' streams, which CUDA refuses while kodo "
          "records a turn: run it with KODO_RECORD=off");
    units = kodo::split_grid({opt.x, opt.y, opt.z}, kodo::units_for_odf(opt.odf, runtime.size()),
                             jacobi::kCutCosts);
  } catch (const std::exception& e) {
    if (root)
      kodo::print_error(std::string("jacobi3d: error: ") + e.what() + "\n" + jacobi::usage());
    return 2;
  }
  try {
    return run(runtime, opt, units);
  } catch (const CheckpointFailure& e) {
    if (root) kodo::print_error(std::string("jacobi3d: ") + e.what());
    return 1;
  } catch (const std::exception& e) {
    kodo::fatal(std::string("jacobi3d: ") + e.what());
  }
}
