// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Step programs: the steps of every unit of a collection, run by the runtime as one
/// device program per rank (a CUDA or HIP graph per phase) rather than as many
/// host-driven pieces. A unit plans each phase once, in plan_step(kodo::StepPlan&): the
/// views a step receives and sends, and its device work (examples/11_step_program.cpp):
/// @snippet 11_step_program.cpp plan
/// The main program of every rank builds the program, collectively, once the units exist,
/// and advances it between run() calls: `kodo::StepProgram<Block> program(blocks,
/// {.phases = 2}); program.advance(100); runtime.run();` runs the next 100 steps.
/// The rules a step's work and views keep: docs/concepts.md, "Step programs and recorded
/// turns"; a port, step by step: docs/porting.md, section 7; how a rank runs a program:
/// docs/architecture.md, "Step programs".

#include <kodo/backends/stream.hpp>
#include <kodo/comm/channel.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/index.hpp>
#include <kodo/tasking/tasks/kernel_batch.hpp>
#include <kodo/tasking/units/collection.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kodo {

/// Device work of a step: enqueues kernels (or copies) on the instance it is given.
using StepWork = std::function<void(const ExecutionSpace&)>;
/// Kernels of a step launched with the same kernels of the rank's other units: adds
/// them to the batch it is given.
using StepKernels = std::function<void(KernelBatch&)>;

/// How a step program runs (docs/concepts.md, "Step programs and recorded turns").
struct StepProgramOptions {
  int phases = 1;                    ///< steps cycle through this many plans
  CommMode comm = CommMode::device;  ///< views sent to units on other ranks
  bool graphs = true;                ///< false: call the work every step, never record it
};

namespace detail {

class RankProgram;

struct PlannedView {
  detail::Segment segment;
  std::size_t element = 1;  // bytes per element
  std::string label;
  std::shared_ptr<const void> keep;  // the view itself
};
struct PlannedTransfer {
  Index3 peer;
  int tag = 0;
  PlannedView view;
};
// One unit's plan of one phase.
struct PlannedPhase {
  std::vector<PlannedTransfer> receives, sends;
  StepWork early;                     // work_without_receives
  std::vector<StepKernels> together;  // work_together, round by round
  StepWork work;
  bool primes = false;
  StepWork prime;
};

}  // namespace detail

/// What a unit declares of the steps of one phase (WorkUnit::plan_step).
class StepPlan {
 public:
  /// The phase this plan is of (0, 1, ...), and the number of phases.
  ///@{
  int phase() const { return phase_; }
  int phases() const { return phases_; }
  ///@}

  /// This step reads `view`, which unit `from` filled in its previous step and sent with
  /// send(view', this unit, tag).
  template <class V>
  void receive(const V& view, const Index3& from, int tag = 0) {
    plan_.receives.push_back({from, tag, planned(view)});
  }
  /// This step fills `view`, whose contents then go to unit `to`, for its next step.
  template <class V>
  void send(const V& view, const Index3& to, int tag = 0) {
    plan_.sends.push_back({to, tag, planned(view)});
  }
  /// The step's device work: it only enqueues work on the instance it is given, the same
  /// every time (docs/concepts.md, "Step programs and recorded turns").
  void work(StepWork enqueue) { plan_.work = std::move(enqueue); }
  /// Device work of the step that reads none of its receive views: it may run while they
  /// travel, before work().
  void work_without_receives(StepWork enqueue) { plan_.early = std::move(enqueue); }
  /// Kernels of the step launched together with the same kernels of the rank's other
  /// units (one launch per functor type for the rank, as kodo::KernelBatch does in a
  /// task): what fills the GPU where each unit's own kernel is small. Each call adds a
  /// round: the rounds of a phase run in order, each once every unit's round before it
  /// is done, after work_without_receives and the step's receives, before work(). A
  /// round's kernels do not depend on each other. `add_kernels` only adds kernels to the
  /// batch it is given (the batch's stream() is not what a step runs on).
  void work_together(StepKernels add_kernels) { plan_.together.push_back(std::move(add_kernels)); }
  /// In the last phase: the work that fills this phase's send views before the first
  /// step (once per program), or none when they hold the data already.
  void prime(StepWork enqueue = {}) {
    plan_.primes = true;
    plan_.prime = std::move(enqueue);
  }

 private:
  template <class U>
  friend class StepProgram;
  StepPlan(int phase, int phases) : phase_(phase), phases_(phases) {}

  template <class V>
  static detail::PlannedView planned(const V& view) {
    static_assert(Kokkos::is_view<V>::value, "kodo: a step program's transfers are Kokkos views");
    static_assert(Kokkos::SpaceAccessibility<ExecutionSpace, typename V::memory_space>::accessible,
                  "kodo: a step program's views live in memory its execution space can address");
    return {detail::view_segment(view, "a view sent or received by a step program"),
            sizeof(typename V::value_type), view.label(), std::make_shared<V>(view)};
  }

  int phase_, phases_;
  detail::PlannedPhase plan_;
};

namespace detail {

// The part of a step program that does not depend on the unit type (step_program.cpp;
// its state and build: detail/step_program_impl.hpp).
class RankProgram {
 public:
  RankProgram(Runtime& runtime, std::uint32_t collection, const Extent3& shape,
              const StepProgramOptions& options);
  ~RankProgram();
  RankProgram(const RankProgram&) = delete;
  RankProgram& operator=(const RankProgram&) = delete;

  // Every local unit's plans, slot by slot and phase by phase, then build() (collective).
  void add(const Index3& unit, std::vector<PlannedPhase> phases);
  // A plan that threw on this rank: build() then fails on every rank, naming it.
  void fail_planning(const std::string& problem);
  void build();
  void advance(std::int64_t steps);
  std::int64_t steps() const { return target_; }
  bool replays_graphs() const;
  bool transfers_on_device() const;

 private:
  struct Impl;
  // Waits for its work, stops its rings and drops its graphs (its destructor; and before
  // its collection's units move, after which it no longer runs).
  void let_go();
  void pump();
  void launch_early(std::int64_t step);
  void launch(std::int64_t step, std::int64_t span);
  void step_done(std::int64_t step);
  void send_remote(std::size_t phase, std::int64_t step);
  void prime();

  Runtime& runtime_;
  std::unique_ptr<Impl> impl_;
  std::int64_t target_ = 0, launched_ = 0, completed_ = 0;
  std::int64_t early_launched_ = 0;  // steps whose work_without_receives is launched
  std::int64_t unmarked_ = 0;        // the first step no completion mark covers
  bool primed_ = false;
};

}  // namespace detail

/// The steps of every unit of a collection, run as one device program per rank (this
/// file's description).
/// U has a member void plan_step(kodo::StepPlan&), or the program is given another.
template <class U>
class StepProgram {
 public:
  using Plan = void (U::*)(StepPlan&);  ///< a member of the unit type that plans a phase

  /// Collective: the main program of every rank builds it, between run() calls, after the
  /// units exist. Calls plan_step on each local unit once per phase, checks every plan
  /// and records each phase's work. Throws kodo::Error, on every rank, on a bad plan.
  explicit StepProgram(const Collection<U>& units, StepProgramOptions options = {})
      : StepProgram(units, options, default_plan()) {}
  /// The same with another plan of the unit's: a unit type may have several programs (a
  /// collection may hold several programs at a time, their tags apart where they cross
  /// ranks), e.g. one for its plain steps and one for the steps that do more.
  StepProgram(const Collection<U>& units, StepProgramOptions options, Plan plan_step) {
    if (plan_step == nullptr) throw Error("a StepProgram needs a plan: a member of its unit type");
    core_ =
        std::make_unique<detail::RankProgram>(units.runtime(), units.id(), units.shape(), options);
    try {
      units.for_each_local([&](U& unit) {
        std::vector<detail::PlannedPhase> phases;
        for (int q = 0; q < options.phases; ++q) {
          StepPlan plan(q, options.phases);
          (unit.*plan_step)(plan);
          phases.push_back(std::move(plan.plan_));
        }
        core_->add(unit.index(), std::move(phases));
      });
    } catch (...) {
      core_->fail_planning(detail::what_of_current());  // the other ranks hear of it
    }
    core_->build();
  }

  /// The main program of every rank: every unit's next `steps` steps, run by the
  /// following run() calls (run() returns once they are done).
  void advance(std::int64_t steps) { core_->advance(steps); }
  /// Steps asked for so far (all done once run() returns).
  std::int64_t steps() const { return core_->steps(); }
  /// Whether this rank launches each step as one recorded device graph.
  bool replays_graphs() const { return core_->replays_graphs(); }
  /// Whether this rank's graphs make its transfers with other ranks themselves (from some
  /// step of the first run() on): where every rank records graphs and every view that
  /// crosses ranks takes the same-node route (ranks of one node, each on a GPU of its own).
  bool transfers_on_device() const { return core_->transfers_on_device(); }

 private:
  static Plan default_plan() {
    constexpr bool planned = requires(U& u, StepPlan& p) { u.plan_step(p); };
    static_assert(planned,
                  "kodo: a unit of a StepProgram has a member void plan_step(kodo::StepPlan&)");
    if constexpr (planned)
      return &U::plan_step;
    else
      return nullptr;
  }

  std::unique_ptr<detail::RankProgram> core_;
};

}  // namespace kodo
