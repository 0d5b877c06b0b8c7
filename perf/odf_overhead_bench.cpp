// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What overdecomposition costs per unit and step when the work itself costs next to
// nothing: units of a 3D grid that, every step, check the faces their neighbours sent
// and send theirs (one small kernel per unit and step), run two ways:
//   rank: kodo::StepProgram, the rank's units as one device program (a graph per step);
//   unit: each unit on its own, as an application writes it with entry methods, receive
//         rings, channels and the completion engine (Jacobi3D's --path unit).
//   task: the unit path written as a loop, a coroutine per unit awaiting its faces
//         (kodo::AwaitableRing; Jacobi3D's --path task, the porting guide's way);
//   batch: the task path with its kernel launched as a kodo::KernelBatch, once for the
//         rank's units.
// Prints, per path and ODF, the time per step and per unit-step (time per step / units
// per rank): on one GPU, the host and device cost of a unit-iteration beyond its work.
//
//   odf_overhead_bench [--odfs 1,2,4,8,16] [--steps 2000] [--face 64]
//                      [--paths rank,unit,task,batch] [--csv FILE]

#include "options.hpp"
#include "report.hpp"

#include <kodo/kodo.hpp>

#include <cinttypes>
#include <memory>
#include <string>

namespace {

using Face = Kokkos::View<double*>;
using Errors = Kokkos::View<std::int64_t*>;

// The one kernel of a unit's step: every face that came in holds the step's parity (else
// an error is counted), and every face that goes out the next step's.
struct TickKernel {
  const double* in[6];
  double* out[6];
  std::int64_t count;
  double expected;
  std::int64_t* errors;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    for (int f = 0; f < 6; ++f) {
      if (in[f] && in[f][i] != expected) Kokkos::atomic_add(errors, std::int64_t{1});
      if (out[f]) out[f][i] = 1 - expected;
    }
  }
};

enum class Path { rank, unit, task, batch };

struct Setup {
  Path path;
  std::int64_t face;
};

class Tick : public kodo::WorkUnit<Tick> {
 public:
  Tick(const kodo::UnitInit<Tick>& init, const Setup& setup)
      : WorkUnit(init), setup_(setup), errors_("errors", 1) {
    const auto slot = static_cast<std::size_t>(init.shape.linear(init.index));
    stream_ = &streams().compute(slot);
    const std::int64_t at[3] = {init.index.x, init.index.y, init.index.z};
    const std::int64_t size[3] = {init.shape.x, init.shape.y, init.shape.z};
    for (int f = 0; f < 6; ++f) {
      const int d = f / 2;
      has_[f] = f % 2 == 0 ? at[d] > 0 : at[d] + 1 < size[d];
      if (!has_[f]) continue;
      ++neighbours_;
      for (int p = 0; p < 2; ++p) {
        in_[p][f] = Face("in", setup.face);
        out_[p][f] = Face("out", setup.face);  // zero: the faces of step 0
      }
      if (setup.path == Path::rank) continue;
      channel_[f] = open_channel(*stream_, peer(f));
      if (setup.path == Path::task || setup.path == Path::batch) {
        awaited_[f] = kodo::AwaitableRing<Face>(channel_[f], std::vector{in_[0][f], in_[1][f]});
        continue;
      }
      ring_[f] = channel_[f].open_ring(std::vector{in_[0][f], in_[1][f]},
                                       [this](const kodo::Arrival<Face>& a) {
                                         ++received_[a.transfer % 2];
                                         if (static_cast<std::int64_t>(a.transfer) == step_)
                                           advance();
                                       });
    }
    Kokkos::fence();
  }

  kodo::Index3 peer(int f) const {
    kodo::Index3 p = index();
    std::int64_t* c[3] = {&p.x, &p.y, &p.z};
    *c[f / 2] += f % 2 == 0 ? -1 : 1;
    return p;
  }
  TickKernel kernel(int p) const {
    TickKernel k{};
    for (int f = 0; f < 6; ++f) {
      k.in[f] = has_[f] ? in_[p][f].data() : nullptr;
      k.out[f] = has_[f] ? out_[1 - p][f].data() : nullptr;
    }
    k.count = setup_.face;
    k.expected = static_cast<double>(p);
    k.errors = errors_.data();
    return k;
  }

  // The rank program: step n (parity p) reads in_[p], writes out_[1 - p].
  void plan_step(kodo::StepPlan& plan) {
    const int p = plan.phase();
    for (int f = 0; f < 6; ++f) {
      if (!has_[f]) continue;
      plan.receive(in_[p][f], peer(f), f ^ 1);
      plan.send(out_[1 - p][f], peer(f), f);
    }
    plan.work([k = kernel(p), n = setup_.face](const kodo::ExecutionSpace& space) {
      Kokkos::parallel_for("odf_overhead::tick",
                           Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, n), k);
    });
    if (p == 1) plan.prime();  // out_[0] holds 0, the faces of step 0
  }

  // The unit path.
  void iterate(std::int64_t count) {
    target_ += count;
    advance();
  }
  void advance() {
    while (step_ < target_) {
      const int p = static_cast<int>(step_ % 2);
      if (sent_for_ < step_) {
        sent_for_ = step_;
        for (int f = 0; f < 6; ++f)
          if (has_[f]) channel_[f].send(out_[p][f]);  // once the kernel that filled it is done
      }
      if (received_[p] < neighbours_) return;
      received_[p] = 0;
      Kokkos::parallel_for("odf_overhead::tick",
                           Kokkos::RangePolicy<kodo::ExecutionSpace>(stream_->space(), 0,
                                                                     setup_.face),
                           kernel(p));
      for (int f = 0; f < 6; ++f)
        if (has_[f]) ring_[f].release(*stream_, static_cast<std::uint64_t>(step_));
      ++step_;
    }
  }
  // The task path: the same step as a loop that awaits each face.
  kodo::Task run_steps(std::int64_t count) {
    for (const std::int64_t end = step_ + count; step_ < end; ++step_) {
      const int p = static_cast<int>(step_ % 2);
      const auto n = static_cast<std::uint64_t>(step_);
      for (int f = 0; f < 6; ++f)
        if (has_[f]) channel_[f].send(out_[p][f]);  // once the kernel that filled it is done
      for (int f = 0; f < 6; ++f)
        if (has_[f]) co_await awaited_[f].transfer(n);
      if (setup_.path == Path::batch) {
        kodo::KernelBatch ticks(*stream_);
        ticks.parallel_for("odf_overhead::tick", 0, setup_.face, kernel(p));
        co_await launch(ticks);
      } else {
        Kokkos::parallel_for("odf_overhead::tick",
                             Kokkos::RangePolicy<kodo::ExecutionSpace>(stream_->space(), 0,
                                                                       setup_.face),
                             kernel(p));
      }
      for (int f = 0; f < 6; ++f)
        if (has_[f]) awaited_[f].release(*stream_, n);
    }
  }
  std::int64_t errors() const {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, errors_);
    return h(0);
  }

 private:
  Setup setup_;
  kodo::Stream* stream_;
  Errors errors_;
  bool has_[6] = {};
  int neighbours_ = 0;
  Face in_[2][6], out_[2][6];
  kodo::Channel channel_[6];
  kodo::ReceiveRing<Face> ring_[6];
  kodo::AwaitableRing<Face> awaited_[6];
  std::int64_t step_ = 0, target_ = 0, sent_for_ = -1;
  int received_[2] = {0, 0};
};

}  // namespace

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  perf::Options options(
      "odf_overhead_bench",
      "Time per step and per unit-step of units that do next to nothing: one small kernel per "
      "unit and step that checks the faces from its neighbours and writes its own.");
  const auto& odfs = options.integers("--odfs", "1,2,4,8,16", 1, 4096,
                                      "units per rank (the units form a 3D grid over all ranks)");
  const auto& steps = options.integer("--steps", 2000, 2, 1 << 30,
                                      "timed steps per run (after a tenth as many "
                                      "to warm up; an odd count loses its last)");
  const auto& face = options.integer("--face", 64, 1, 1 << 24, "doubles per face");
  const auto& paths = options.words(
      "--paths", {"rank", "unit", "task", "batch"}, "rank,unit,task,batch",
      "rank (kodo::StepProgram: a rank's units as one device program), unit (each unit on "
      "its own: entry methods, rings, channels, completion engine), task (the unit path as "
      "a coroutine per unit) and batch (the task path, its kernels as kodo::KernelBatch)");
  const auto& csv_file = options.file("--csv", "also write the rows to FILE");
  if (const auto exit = options.parse(runtime, argc, argv)) return *exit;
  const bool root = runtime.rank() == 0;
  std::unique_ptr<perf::Csv> csv;
  if (root)
    csv = std::make_unique<perf::Csv>(
        csv_file, argc, argv,
        "path,ranks,odf,units,face,steps,us_per_step,us_per_unit_step,graphs,build_ms,"
        "recorded_turns,errors");
  int failed = 0;
  for (const std::string& path : paths) {
    for (const std::int64_t odf : odfs) {
      const Setup setup{path == "rank"   ? Path::rank
                        : path == "unit" ? Path::unit
                        : path == "task" ? Path::task
                                         : Path::batch,
                        face};
      const kodo::Extent3 shape = kodo::split_grid({1024, 1024, 1024}, odf * runtime.size());
      auto units = kodo::Collection<Tick>::create(runtime, shape, setup);
      runtime.run();
      std::unique_ptr<kodo::StepProgram<Tick>> program;
      const double built_from = perf::seconds();
      if (setup.path == Path::rank)
        program =
            std::make_unique<kodo::StepProgram<Tick>>(units, kodo::StepProgramOptions{.phases = 2});
      const double build_ms = (perf::seconds() - built_from) * 1e3;
      auto run_steps = [&](std::int64_t n) {
        if (program)
          program->advance(n);
        else if (setup.path == Path::task || setup.path == Path::batch)
          units.broadcast_local<&Tick::run_steps>(n);
        else
          units.broadcast_local<&Tick::iterate>(n);
        runtime.run();
      };
      run_steps((steps / 10 + 2) / 2 * 2);  // warm-up, even: the faces alternate 0, 1, 0, ...
      MPI_Barrier(runtime.comm());
      const std::uint64_t recorded_before = runtime.recording().turns;
      const double t0 = perf::seconds();
      run_steps(steps - steps % 2);
      const double per_step = (perf::seconds() - t0) / static_cast<double>(steps - steps % 2) * 1e6;
      std::int64_t errors = 0, all = 0;
      units.for_each_local([&](Tick& t) { errors += t.errors(); });
      MPI_Reduce(&errors, &all, 1, MPI_INT64_T, MPI_SUM, 0, runtime.comm());
      if (root) {
        failed += all != 0;
        char line[256];
        std::snprintf(line, sizeof line,
                      "%s,%d,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                      ",%.2f,%.3f,%s,%.2f,%" PRIu64 ",%" PRId64,
                      path.c_str(), runtime.size(), odf, shape.size(), face, steps - steps % 2,
                      per_step, per_step / static_cast<double>(odf),
                      program && program->replays_graphs() ? "yes" : "no", build_ms,
                      runtime.recording().turns - recorded_before, all);
        csv->row(line);
      }
    }
  }
  if (root && failed) kodo::print_error("odf_overhead_bench: FAILED: faces held wrong values");
  MPI_Bcast(&failed, 1, MPI_INT, 0, runtime.comm());
  return failed ? 1 : 0;
}
