// jacobi3d: the 7-point Jacobi iteration on an overdecomposed 3D grid (see jacobi.hpp
// for the problem). Every rank runs this main program; the work happens in the blocks.

#include "baseline.hpp"
#include "block.hpp"
#include "options.hpp"

#include <kodo.hpp>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace {

double now() { return MPI_Wtime(); }

// `units`: the unit grid, already cut (and so checked) by main.
int run(kodo::Runtime& runtime, const jacobi::Options& opt, const kodo::Extent3& units) {
  const bool root = runtime.rank() == 0;
  const jacobi::Grid grid{opt.x, opt.y, opt.z};
  if (root) {
    std::printf("jacobi3d: grid %" PRId64 " x %" PRId64 " x %" PRId64 ", %d rank(s), odf %" PRId64
                ", %" PRId64 " units as %" PRId64 " x %" PRId64 " x %" PRId64
                ", backend %s, iterations %" PRId64 " (+%" PRId64
                " warm-up), completion %s, comm %s, fusion %s%s%s\n",
                grid.x, grid.y, grid.z, runtime.size(), opt.odf, units.size(), units.x, units.y,
                units.z, KODO_BACKEND_NAME, opt.iterations, opt.warmup,
                opt.baseline ? "none (bulk-synchronous MPI baseline)"
                : opt.sync   ? "sync (fence)"
                             : "engine",
                opt.baseline ? "MPI, host-staged" : opt.comm.c_str(),
                jacobi::fusion_name(opt.fusion), opt.graphs ? ", graphs" : "",
                opt.overlap ? ", overlap" : "");
  }
  // Where each rank runs, gathered to rank 0.
  const std::string where = kodo::describe(runtime.placement(), runtime.rank());
  std::vector<char> line(256, '\0');
  where.copy(line.data(), line.size() - 1);
  std::vector<char> all(root ? line.size() * runtime.size() : 0);
  MPI_Gather(line.data(), static_cast<int>(line.size()), MPI_CHAR, all.data(),
             static_cast<int>(line.size()), MPI_CHAR, 0, runtime.comm());
  if (root)
    for (int r = 0; r < runtime.size(); ++r) std::printf("  %s\n", all.data() + r * line.size());

  jacobi::RankReport report;
  double init_seconds = 0, total_seconds = 0;
  if (opt.baseline) {
    const auto result =
        jacobi::run_baseline(runtime.comm(), grid, units, opt.warmup, opt.iterations);
    total_seconds = result.seconds;
    report = result.report;
  } else {
    const jacobi::BlockConfig config{
        grid, opt.sync ? jacobi::Completion::sync : jacobi::Completion::engine,
        kodo::parse_comm_mode(opt.comm), &report, opt.fusion, opt.graphs, opt.overlap,
        // Units of a rank take its streams in turn: one each. On the host backend a wait
        // holds the rank, and with it the rank's other units: one unit per rank.
        opt.device_waits && opt.odf <= runtime.streams().per_priority() &&
            (opt.odf == 1 ||
             !std::is_same_v<kodo::ExecutionSpace::memory_space, Kokkos::HostSpace>)};
    const double t0 = now();
    auto blocks = kodo::Collection<jacobi::JacobiBlock>::create(runtime, units, config);
    runtime.run();
    init_seconds = now() - t0;
    if (opt.warmup > 0) {
      blocks.broadcast_local<&jacobi::JacobiBlock::iterate>(opt.warmup);
      runtime.run();
    }
    const double t1 = now();
    blocks.broadcast_local<&jacobi::JacobiBlock::iterate>(opt.iterations);
    runtime.run();
    total_seconds = now() - t1;
    blocks.broadcast_local<&jacobi::JacobiBlock::compute_checksum>();
    runtime.run();
    int waiting = 0;
    MPI_Reduce(&report.units_waiting_on_device, &waiting, 1, MPI_INT, MPI_SUM, 0, runtime.comm());
    if (root && opt.device_waits)
      std::printf("units whose stream awaited their faces on the device: %d of %" PRId64 "\n",
                  waiting, units.size());
  }

  int failed = 0;
  if (root) {
    std::printf("init time: %.6f s\n", init_seconds);
    std::printf("total time: %.6f s\n", total_seconds);
    std::printf("average iteration time: %.3f us\n",
                opt.iterations > 0 ? total_seconds / static_cast<double>(opt.iterations) * 1e6
                                   : 0.0);
    std::printf("checksum: 0x%016" PRIx64 "\n", report.checksum);
    if (report.have_residual)
      std::printf("residual: %.6e (L2 norm of the last update, by %s)\n", report.residual,
                  jacobi::residual_method());
    if (!std::isfinite(report.residual)) {  // the check that holds at every size
      std::printf("FAILED: the residual is not a finite number\n");
      failed = 1;
    }
    if (opt.verify) {
      const std::uint64_t expected =
          jacobi::serial_reference_checksum(grid, opt.warmup + opt.iterations);
      if (expected == report.checksum) {
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

}  // namespace

int main(int argc, char** argv) {
  // A rank that cannot start (no GPU, a UCX failure) says why; every rank then stops.
  std::unique_ptr<kodo::Runtime> started;
  try {
    started = std::make_unique<kodo::Runtime>(argc, argv);
  } catch (const kodo::Error& e) {
    std::fprintf(stderr, "jacobi3d: %s\n", e.what());
    return 1;
  }
  kodo::Runtime& runtime = *started;
  if (runtime.print_usage_if_requested(jacobi::usage())) return 0;
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
                         opt.sync || opt.comm != "device"))
      throw std::invalid_argument(
          "--baseline is its own method: it takes no --graphs, --overlap, --fusion, --sync or "
          "--comm");
    if (opt.overlap && (opt.graphs || opt.fusion != jacobi::Fusion::none))
      throw std::invalid_argument(
          "--overlap has its own kernels: it takes no --fusion or --graphs");
    units = kodo::split_grid({opt.x, opt.y, opt.z}, opt.odf * runtime.size());
  } catch (const std::exception& e) {
    if (root) std::fprintf(stderr, "jacobi3d: error: %s\n%s", e.what(), jacobi::usage().c_str());
    return 2;
  }
  try {
    return run(runtime, opt, units);
  } catch (const std::exception& e) {
    kodo::fatal(std::string("jacobi3d: ") + e.what());
  }
}
