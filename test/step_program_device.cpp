// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Step programs on the backend of the build, without GoogleTest, so that a device build
// runs them too: the stencil and relay programs of step_program_test.cpp against the
// host (1 to 7 phases, work_without_receives, whole periods per graph, a period at a
// time, self and paired neighbours, rounds of work_together), more transfers between two
// units than a graph's copy node holds, a work that cannot be recorded (it fences) run without
// graphs with one notice and the same result, work whose team scratch grows in a later phase
// (recorded again, at the grown size), and with --large-functor a work whose kernel functor exceeds
// Kokkos' 512 bytes, which a device build refuses on every rank; with --device-fault a
// kernel that traps inside a program's graph, which ends the job on every rank naming the
// rank and the program (a device build; the host backend has no graphs to fault).
//
//   step_program_device [--large-functor | --device-transfers | --device-fault]

#include "step_units.hpp"

#include <kodo/backends/detail/native.hpp>
#include <kodo/kodo.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

using step_units::Arc;
using step_units::Cells;
using step_units::Relay;

// Work that fences its stream: no graph can hold it.
struct Fencing final : kodo::WorkUnit<Fencing> {
  explicit Fencing(const kodo::UnitInit<Fencing>& init) : WorkUnit(init), v_("v", 8) {}
  void plan_step(kodo::StepPlan& plan) {
    plan.work([v = v_](const kodo::ExecutionSpace& space) {
      step_units::relay_kernel(space, v, v, v, 3);  // v += 3
      space.fence("step_program_device: a fence inside a step's work");
    });
  }
  Cells v_;
};

// A kernel whose functor is larger than what Kokkos passes as kernel arguments.
struct Bulky {
  Cells v;
  double weights[80];
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    v(i) += static_cast<std::int64_t>(weights[i % 80]);
  }
};
struct Large final : kodo::WorkUnit<Large> {
  explicit Large(const kodo::UnitInit<Large>& init) : WorkUnit(init), v_("v", 8) {}
  void plan_step(kodo::StepPlan& plan) {
    Bulky k;
    k.v = v_;
    for (double& w : k.weights) w = 1;
    plan.work([k](const kodo::ExecutionSpace& space) {
      Kokkos::parallel_for("step_program_device::bulky",
                           Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, 8), k);
      Kokkos::parallel_for("step_program_device::bulky_again",
                           Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, 8), k);
    });
  }
  Cells v_;
};

// Each team fills `per_team` words of team scratch in device memory (level 1) with its
// league rank + 1 and adds their mean to v(league rank): v(l) += l + 1 a step.
inline void scratch_kernel(const kodo::ExecutionSpace& space, const Cells& v, int per_team) {
  using Policy = Kokkos::TeamPolicy<kodo::ExecutionSpace>;
  using Words = Kokkos::View<std::int64_t*, kodo::ExecutionSpace::scratch_memory_space,
                             Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const auto teams = static_cast<int>(v.extent(0));
  Kokkos::parallel_for(
      "step_program_device::scratch",
      Policy(space, teams, Kokkos::AUTO)
          .set_scratch_size(1, Kokkos::PerTeam(Words::shmem_size(per_team))),
      KOKKOS_LAMBDA(const Policy::member_type& team) {
        Words words(team.team_scratch(1), per_team);
        const std::int64_t l = team.league_rank();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, per_team),
                             [&](int k) { words(k) = l + 1; });
        team.team_barrier();
        std::int64_t sum = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, per_team), [&](int k, std::int64_t& s) { s += words(k); },
            sum);
        Kokkos::single(Kokkos::PerTeam(team), [&] { v(l) += sum / per_team; });
      });
}

// Phase 1's kernel takes more team scratch than phase 0's, so recording it has Kokkos
// allocate its instance's team scratch again: the graph of phase 0, recorded before, must
// not keep the freed one.
struct Scratchy final : kodo::WorkUnit<Scratchy> {
  explicit Scratchy(const kodo::UnitInit<Scratchy>& init) : WorkUnit(init), v_("v", 8) {}
  void plan_step(kodo::StepPlan& plan) {
    const int per_team = plan.phase() == 0 ? 64 : 8192;
    plan.work([v = v_, per_team](const kodo::ExecutionSpace& space) {
      scratch_kernel(space, v, per_team);
    });
  }
  Cells v_;
};

// More transfers of a phase to one unit than one copy node of a graph holds (64): phase
// 0 sends v + k to the right neighbour as kFanOut one-word views (tags k), phase 1 adds
// what came from the left: v = (v + sum_k (left's v + k)) mod kModulus.
constexpr int kFanOut = 70;
inline void fan_kernel(const kodo::ExecutionSpace& space, const Cells& v, const Cells& in,
                       const Cells& out, int phase) {
  Kokkos::parallel_for(
      "step_program_device::fan", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, 1),
      KOKKOS_LAMBDA(int) {
        if (phase == 0) {
          for (int k = 0; k < kFanOut; ++k) out(k) = v(0) + k;
          return;
        }
        std::int64_t x = v(0);
        for (int k = 0; k < kFanOut; ++k) x = (x + in(k)) % step_units::kModulus;
        v(0) = x;
      });
}
struct Fan final : kodo::WorkUnit<Fan> {
  explicit Fan(const kodo::UnitInit<Fan>& init)
      : WorkUnit(init), v_("v", 1), in_("in", kFanOut), out_("out", kFanOut) {
    Kokkos::deep_copy(v_, init.shape.linear(init.index) * 10 + 1);
  }
  kodo::Index3 neighbour(int toward) const { return step_units::ring_neighbour(*this, toward); }
  void plan_step(kodo::StepPlan& plan) {
    const int q = plan.phase();
    for (int k = 0; k < kFanOut; ++k) {
      const std::pair<int, int> word{k, k + 1};
      if (q == 0) plan.send(Kokkos::subview(out_, word), neighbour(1), k);
      if (q == 1) plan.receive(Kokkos::subview(in_, word), neighbour(0), k);
    }
    plan.work([v = v_, in = in_, out = out_, q](const kodo::ExecutionSpace& space) {
      fan_kernel(space, v, in, out, q);
    });
  }
  Cells v_, in_, out_;
};
// "" when every local unit holds what `steps` fan steps give, else the first that does not.
inline std::string check_fans(const kodo::Collection<Fan>& units, std::int64_t steps) {
  const std::int64_t n = units.size();
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::int64_t u = 0; u < n; ++u) v[static_cast<std::size_t>(u)] = u * 10 + 1;
  for (std::int64_t s = 1; s < steps; s += 2) {  // steps s - 1 (phase 0) and s (phase 1)
    const auto old = v;
    for (std::int64_t u = 0; u < n; ++u) {
      std::int64_t x = old[static_cast<std::size_t>(u)];
      for (int k = 0; k < kFanOut; ++k)
        x = (x + old[static_cast<std::size_t>((u + n - 1) % n)] + k) % step_units::kModulus;
      v[static_cast<std::size_t>(u)] = x;
    }
  }
  std::string problem;
  units.for_each_local([&](const Fan& u) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, u.v_);
    const auto want = v[static_cast<std::size_t>(units.shape().linear(u.index()))];
    if (problem.empty() && h(0) != want)
      problem = "unit " + std::to_string(units.shape().linear(u.index())) + " holds " +
                std::to_string(h(0)) + ", not " + std::to_string(want);
  });
  return problem;
}

// Counts the steps in v(0); at step `at` (unit 0's only) its kernel traps, a device fault
// inside the program's graph.
inline void faulting_kernel(const kodo::ExecutionSpace& space, const Cells& v, std::int64_t at) {
  Kokkos::parallel_for(
      "step_program_device::fault", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, 1),
      KOKKOS_LAMBDA(std::int64_t) {
        if (++v(0) == at) Kokkos::abort("step_program_device: a device fault, as asked");
      });
}
struct Faulty final : kodo::WorkUnit<Faulty> {
  explicit Faulty(const kodo::UnitInit<Faulty>& init) : WorkUnit(init), v_("v", 1) {}
  void plan_step(kodo::StepPlan& plan) {
    const std::int64_t at = collection().shape().linear(index()) == 0 ? 5 : -1;
    plan.work([v = v_, at](const kodo::ExecutionSpace& space) { faulting_kernel(space, v, at); });
  }
  Cells v_;
};

}  // namespace

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(
          "usage: step_program_device [--large-functor | --device-transfers | --device-fault]\n"
          "Runs step programs and checks them against the host; --large-functor builds one\n"
          "whose kernel functor exceeds 512 bytes (refused where steps are device graphs);\n"
          "--device-transfers also checks that every program whose units talk across ranks\n"
          "came to make those transfers in its graphs (ranks on GPUs of their own, one node);\n"
          "--device-fault runs a program whose graph faults on the device at step 5 (the job\n"
          "ends, naming the rank and the program).\n"))
    return 0;
  const bool root = runtime.rank() == 0;
  const bool large = argc > 1 && std::string(argv[1]) == "--large-functor";
  const bool device_transfers = argc > 1 && std::string(argv[1]) == "--device-transfers";
  const bool on_host = std::string(kodo::backend::name()) == "host";  // no graphs there
  if (argc > 1 && std::string(argv[1]) == "--device-fault") {
    auto units = kodo::Collection<Faulty>::create(runtime, {2 * runtime.size(), 1, 1});
    kodo::StepProgram<Faulty> program(units, {.phases = 1});
    if (on_host) {
      if (root) std::printf("step_program_device: no device graphs here, nothing to fault\n");
      return 0;
    }
    if (!program.replays_graphs()) {
      kodo::print_error("step_program_device: FAILED the program does not replay graphs");
      return 1;
    }
    program.advance(20);
    runtime.run();  // ends the job, on every rank, at unit 0's fault
    kodo::print_error("step_program_device: FAILED the job went on past a device fault");
    return 1;
  }
  int programs = 0, on_device = 0;  // programs with units on other ranks, and of those ...
  if (large) {
    auto units = kodo::Collection<Large>::create(runtime, {2 * runtime.size(), 1, 1});
    try {
      kodo::StepProgram<Large> program(units, {.phases = 1});
      program.advance(3);
      runtime.run();
      if (root) std::printf("step_program_device: the large functor ran (no graphs here)\n");
      return 0;
    } catch (const kodo::Error& e) {
      if (root) kodo::print_error(std::string("step_program_device: refused: ") + e.what());
      return 3;
    }
  }
  int failures = 0, checks = 0;
  auto expect = [&](const std::string& problem, const std::string& what) {
    ++checks;
    if (problem.empty()) return;
    ++failures;
    kodo::print_error("step_program_device: FAILED " + what + ": " + problem);
  };
  constexpr std::int64_t length = 6;
  for (const std::int64_t per_rank : {1, 2, 3, 8})
    for (const int phases : {1, 2, 3})
      for (const bool split : {false, true}) {
        const std::int64_t n = per_rank * runtime.size();
        if (root && device_transfers)  // where a hang would be
          std::fprintf(stderr, "step_program_device: %lld units per rank, %d phase(s)%s\n",
                       static_cast<long long>(per_rank), phases, split ? ", split" : "");
        auto units = kodo::Collection<Arc>::create(runtime, {n, 1, 1}, length, phases, split);
        kodo::StepProgram<Arc> program(units, {.phases = phases});
        std::int64_t done = 0;
        for (const std::int64_t piece : {5, 1, 6}) {
          program.advance(piece);
          runtime.run();
          if (piece == 6 && runtime.size() > 1) {
            ++programs;
            on_device += program.transfers_on_device() ? 1 : 0;
          }
          done += piece;
          expect(step_units::check_arcs(units, length, done),
                 "arcs of " + std::to_string(n) + " units, " + std::to_string(phases) +
                     " phase(s)" + (split ? ", split" : ""));
        }
      }
  // Many steps at once, for phase counts that do not divide the marks' spacing.
  for (const int phases : {3, 5, 7}) {
    auto units =
        kodo::Collection<Arc>::create(runtime, {2 * runtime.size(), 1, 1}, length, phases, false);
    kodo::StepProgram<Arc> program(units, {.phases = phases});
    program.advance(101);
    runtime.run();
    expect(step_units::check_arcs(units, length, 101),
           std::to_string(phases) + " phases, 101 steps at once");
  }
  // A period at a time, as MiniMD's reneighboring program runs (each step its phase's
  // graph: a period is shorter than the graph of whole periods), then many at once.
  for (const int phases : {4, 7}) {
    auto units =
        kodo::Collection<Arc>::create(runtime, {8 * runtime.size(), 1, 1}, length, phases, false);
    kodo::StepProgram<Arc> program(units, {.phases = phases});
    for (int period = 0; period < 3; ++period) {
      program.advance(phases);
      runtime.run();
    }
    program.advance(4 * phases + 2);
    runtime.run();
    expect(step_units::check_arcs(units, length, 7 * phases + 2),
           std::to_string(phases) + " phases, a period at a time");
  }
  for (const std::int64_t per_rank : {1, 3}) {
    auto units = kodo::Collection<Relay>::create(runtime, {per_rank * runtime.size(), 1, 1});
    kodo::StepProgram<Relay> program(units, {.phases = 4});
    program.advance(4 * 6 + 3);
    runtime.run();
    expect(step_units::check_relays(units, 4 * 6 + 3), "relay");
  }
  for (const std::int64_t per_rank : {1, 8})
    for (const bool mixed : {false, true}) {
      auto units = kodo::Collection<step_units::Chain>::create(runtime,
                                                               {per_rank * runtime.size(), 1, 1},
                                                               mixed);
      kodo::StepProgram<step_units::Chain> program(units, {.phases = 2});
      expect(program.replays_graphs() || on_host ? "" : "it runs without graphs",
             "rounds of work_together are replayed from graphs");
      for (const std::int64_t piece : {2, 1, 3, 40}) {
        program.advance(piece);
        runtime.run();
      }
      expect(step_units::check_chains(units, 46), "rounds of work_together, " +
                                                      std::to_string(per_rank) + " units per rank" +
                                                      (mixed ? ", mixed" : ""));
    }
  {
    auto units = kodo::Collection<Fan>::create(runtime, {3 * runtime.size(), 1, 1});
    kodo::StepProgram<Fan> program(units, {.phases = 2});
    for (const std::int64_t piece : {2, 1, 15}) {
      program.advance(piece);
      runtime.run();
    }
    expect(check_fans(units, 18), "70 transfers a phase between two units");
  }
  {
    auto units = kodo::Collection<Fencing>::create(runtime, {2 * runtime.size(), 1, 1});
    kodo::StepProgram<Fencing> program(units, {.phases = 1});
    expect(program.replays_graphs() ? "it replays graphs" : "",
           "a fencing work runs without graphs");
    program.advance(7);
    runtime.run();
    units.for_each_local([&](Fencing& u) {
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, u.v_);
      expect(h(0) == 21 ? "" : "v(0) is " + std::to_string(h(0)) + ", not 21",
             "a fencing work's result");
    });
  }
  {
    auto units = kodo::Collection<Scratchy>::create(runtime, {8 * runtime.size(), 1, 1});
    kodo::StepProgram<Scratchy> program(units, {.phases = 2});
    expect(program.replays_graphs() || on_host ? "" : "it runs without graphs",
           "work whose team scratch grows in a later phase is replayed from graphs");
    // Small views made after the build, where freed scratch would be given out again: a
    // graph that kept phase 0's first scratch writes into them (3242 words on an H200
    // before the fix: perf/results/step_program_scratch_h200x2_run80-81.txt).
    std::vector<Cells> bystanders;
    for (int i = 0; i < 16; ++i)
      for (const int n : {16, 64, 256, 496}) {
        bystanders.emplace_back("bystander", n);
        Kokkos::deep_copy(bystanders.back(), -1);
      }
    for (const std::int64_t piece : {3, 1, 20}) {
      program.advance(piece);
      runtime.run();
    }
    int spoilt = 0;
    for (const Cells& b : bystanders) {
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b);
      for (std::size_t i = 0; i < h.extent(0); ++i) spoilt += h(i) != -1 ? 1 : 0;
    }
    expect(spoilt == 0 ? "" : std::to_string(spoilt) + " words of views made after it changed",
           "work whose team scratch grows in a later phase writes only its own memory");
    units.for_each_local([&](Scratchy& u) {
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, u.v_);
      for (std::int64_t l = 0; l < 8; ++l)
        if (h(l) != 24 * (l + 1)) {
          expect("v(" + std::to_string(l) + ") is " + std::to_string(h(l)) + ", not " +
                     std::to_string(24 * (l + 1)),
                 "work whose team scratch grows in a later phase");
          return;
        }
      expect("", "work whose team scratch grows in a later phase");
    });
  }
  if (device_transfers)
    expect(on_device == programs ? ""
                                 : std::to_string(programs - on_device) + " of " +
                                       std::to_string(programs) + " programs moved them by host",
           "transfers with other ranks made in the graphs");
  if (root && runtime.size() > 1)
    std::printf(
        "step_program_device: %d of %d programs made their transfers with other ranks "
        "in their graphs (rank 0)\n",
        on_device, programs);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, runtime.comm());
  if (root)
    std::printf("step_program_device: %d checks on rank 0, %d failure(s) on all ranks\n", checks,
                all);
  return all == 0 ? 0 : 1;
}
