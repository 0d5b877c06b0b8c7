// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Step programs: the steps of every unit of a collection, run by the runtime as one
/// device program per rank rather than as many host-driven pieces.
///
/// ```
///   struct Block : kodo::WorkUnit<Block> {
///     // Called once per phase when a program is built: what a step of that phase reads,
///     // does and fills.
///     void plan_step(kodo::StepPlan& plan) {
///       const int p = plan.phase();
///       plan.receive(ghost_[p], left_, 0);    // filled by the left unit's previous step
///       plan.send(edge_[1 - p], right_, 0);   // filled by this step, for the right unit's next
///       plan.work([=, this](const kodo::ExecutionSpace& space) { update(space, p); });
///       if (p == plan.phases() - 1) plan.prime([=, this](const kodo::ExecutionSpace& space) {
///         fill_edge(space, 0); });           // the first step's data, made once
///     }
///   };
///   kodo::StepProgram<Block> program(blocks, {.phases = 2});   // every rank, main program
///   program.advance(100);                                      // the next 100 steps
///   runtime.run();                                             // ... run here
/// ```
///
/// Steps 0, 1, 2, ... of every unit are of phases 0, 1, ..., phases - 1, 0, 1, ...; a
/// unit plans each phase once. A view sent in a step of phase q is received, by the unit
/// it names, in that unit's next step (phase q + 1, or 0 after the last): declared there
/// with receive(view, sender, tag), the same tag. Before step 0 the sends of the last
/// phase are made once, as if a step of that phase had run: prime() fills their views.
///
/// A step's work may come in two parts: work_without_receives(f), which reads none of the
/// step's receive views and so may run while they travel (an inner box), then work(f).
///
/// How a rank runs its steps: the work of every local unit for a step, and the copies of
/// the views sent between them, form one device graph per phase (CUDA and HIP graphs),
/// recorded when the program is built and launched once per step: no host call per unit
/// or per transfer, and the units' kernels run side by side. Where no view crosses ranks,
/// whole periods of steps (8 to 32 steps, more for more units) are one graph, in which a unit's
/// next step starts as soon as its own views are in. Views sent to units on other ranks travel
/// through channels (receive rings; GPU-aware, or host-staged with CommMode::host_staged) once the
/// step's work is done; a step that receives from another rank launches its work_without_receives
/// at once and the rest once those views are in. Where every such channel of every rank takes the
/// same-node route (GPU-aware, ranks of one node on GPUs of their own, graphs on every rank),
/// the graphs make those transfers themselves: a node waits on the device for a view to land,
/// nodes copy a view into the peer's memory and publish it, and no host stands between the
/// steps of two ranks (transfers_on_device()). To know the routes, building such a program
/// runs the job until it is quiet, as run() does. Not where a step sends (or copies) a view it
/// also receives: such a view is read after the step's work, and the transfers stay with the
/// host. A device wait is bounded (KODO_DEVICE_WAIT_SECONDS, then the job ends naming the
/// link): that bound is also how long one rank's next run() may wait for a slower peer. The host
/// backend, and a program whose work cannot be recorded (a fence, a host read of device data), call
/// each unit's work every step instead, on one stream, with the same results; a program that could
/// not record its work says so once (rank 0). Work holding a kernel whose functor exceeds Kokkos'
/// 512 bytes of kernel arguments is refused, on every rank: Kokkos launches such a kernel through
/// constant memory, which neither a recording nor the launches after it survive.
///
/// The rules that follow:
/// - work(f), work_without_receives(f): f(space) only enqueues device work on `space`, the
///   same every time it is called: it may be called once and replayed, or called for
///   every step. No fences, no host reads of device data, no host state that changes from
///   step to step, no work on another instance (that would run once, while recorded, and
///   be missing from the replays). Each unit's work is recorded on an instance of its own,
///   so reductions and team scratch of different units do not share memory. A step's
///   work_without_receives runs after the unit's previous step and before its work; it
///   reads none of the step's receive views.
/// - Views are contiguous, in memory the device can address, and the same size on both
///   ends of a transfer. A receive view belongs to its transfer alone (receive views of a
///   rank's units never overlap). A view sent in step n is written again only by step
///   n + phases, after the transfer is done; a receive view is read by its step only
///   after its data has landed, and written by the next transfer only after that step.
/// - Between run() calls the program is idle: units may read their views, contribute to
///   reductions, write checkpoints. Entry methods and channels work beside it.
/// - Every plan is checked when the program is built, on every rank: a send without its
///   receive (or the other way round), views of different sizes, a tag outside
///   [0, 2^30), a peer outside the collection, a unit sending in the last phase without
///   prime(). Each is a kodo::Error naming the units, phase and tag, on every rank.
/// - Channels of a program use ports 2^30 + tag: a unit's own channels keep below 2^29
///   (neighbour channels take 2^29 + 0..26).
///   Programs of one collection may exist side by side (StepProgram(units, options, plan)
///   with another plan member), run one after another: a program's run() calls are done
///   before another's advance(); those whose views cross ranks keep their tags apart.
///   A program holds no data over from one run to the next where its last phase sends
///   nothing: another program may then change the views between its runs.

#include <kodo/backends/stream.hpp>
#include <kodo/comm/channel.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/index.hpp>
#include <kodo/tasking/collection.hpp>

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

/// How a step program runs (see this file's description).
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
  StepWork early;  // work_without_receives
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
  /// The step's device work (see the rules above).
  void work(StepWork enqueue) { plan_.work = std::move(enqueue); }
  /// Device work of the step that reads none of its receive views: it may run while they
  /// travel, before work().
  void work_without_receives(StepWork enqueue) { plan_.early = std::move(enqueue); }
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

/// The steps of every unit of a collection, run as one device program per rank (above).
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
  /// step of the first run() on; see above).
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
