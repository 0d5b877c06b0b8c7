// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Step programs (tasking/programs/step_program.hpp) on 1, 2 and 4 ranks: a periodic stencil whose
// units exchange their edges every step, with 1 to 3 phases, device and host-staged
// transfers, units that are their own neighbours; a program whose links are used in some
// phases only; steps asked for in pieces; two programs of one collection in turns; and
// every bad plan refused on every rank.

#include "expect_error.hpp"
#include "step_units.hpp"
#include "test_runtime.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace {

using kodo::Index3;
using step_units::Arc;
using step_units::Cells;
using step_units::Relay;

struct Case {
  std::int64_t units;
  int phases;
  kodo::CommMode comm;
  bool graphs;
  bool split = false;
};
std::string name_of(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return "units" + std::to_string(c.units) + "_phases" + std::to_string(c.phases) +
         (c.comm == kodo::CommMode::host_staged ? "_host" : "_device") +
         (c.graphs ? "" : "_nographs") + (c.split ? "_split" : "");
}

class StepProgramRuns : public testing::TestWithParam<Case> {};

TEST_P(StepProgramRuns, GiveTheSerialStencilWhateverTheUnitsAndRanks) {
  const Case c = GetParam();
  auto& rt = test_runtime();
  constexpr std::int64_t length = 5;
  auto units = kodo::Collection<Arc>::create(rt, {c.units, 1, 1}, length, c.phases, c.split);
  kodo::StepProgram<Arc> program(units, {.phases = c.phases, .comm = c.comm, .graphs = c.graphs});
  EXPECT_EQ(program.steps(), 0);
  // The host backend records no graphs; devices do unless told not to.
  EXPECT_EQ(program.replays_graphs(), c.graphs && !kodo::host_build && rt.rank() < c.units);
  // Graphs make the transfers with other ranks only on GPUs, GPU-aware, with graphs (and
  // same-node routes: verified on GPUs, perf/results/device_links_*).
  if (kodo::host_build || c.comm == kodo::CommMode::host_staged || !c.graphs) {
    EXPECT_FALSE(program.transfers_on_device());
  }
  // Steps in pieces: each run() ends with the steps asked for done.
  std::int64_t done = 0;
  for (std::int64_t piece : {3, 0, 1, 7}) {
    program.advance(piece);
    rt.run();
    done += piece;
    EXPECT_EQ(program.steps(), done);
    EXPECT_EQ(step_units::check_arcs(units, length, done), "");
  }
}

INSTANTIATE_TEST_SUITE_P(, StepProgramRuns,
                         testing::Values(Case{1, 2, kodo::CommMode::device, true},
                                         Case{2, 2, kodo::CommMode::device, true},
                                         Case{3, 2, kodo::CommMode::device, true},
                                         Case{8, 2, kodo::CommMode::device, true},
                                         Case{5, 1, kodo::CommMode::device, true},
                                         Case{1, 1, kodo::CommMode::device, true},
                                         Case{6, 3, kodo::CommMode::device, true},
                                         Case{6, 2, kodo::CommMode::host_staged, true},
                                         Case{4, 2, kodo::CommMode::device, false},
                                         Case{6, 2, kodo::CommMode::device, true, true},
                                         Case{1, 1, kodo::CommMode::device, true, true},
                                         Case{5, 3, kodo::CommMode::host_staged, true, true},
                                         Case{4, 2, kodo::CommMode::device, false, true}),
                         name_of);

// Many steps asked for at once, with phase counts that do not divide the completion
// marks' spacing (where whole periods are graphs, a launch covers P steps).
TEST(StepPrograms, ManyStepsAtOnceFinishForEveryPhaseCount) {
  auto& rt = test_runtime();
  for (const int phases : {1, 2, 3, 5, 7}) {
    auto units = kodo::Collection<Arc>::create(rt, {2 * rt.size(), 1, 1}, 5, phases, false);
    kodo::StepProgram<Arc> program(units, {.phases = phases});
    program.advance(101);
    rt.run();
    EXPECT_EQ(step_units::check_arcs(units, 5, 101), "") << phases << " phases";
  }
}

// Rounds of work_together: each reads what the round before it wrote, the step's receives
// before them and its work after them; units of one rank with different numbers of rounds.
TEST(StepPrograms, RoundsOfKernelsTogetherRunInOrderBetweenReceivesAndWork) {
  auto& rt = test_runtime();
  for (std::int64_t per_rank : {1, 3})
    for (const bool mixed : {false, true}) {
      auto units =
          kodo::Collection<step_units::Chain>::create(rt, {per_rank * rt.size(), 1, 1}, mixed);
      kodo::StepProgram<step_units::Chain> program(units, {.phases = 2});
      for (const std::int64_t piece : {2, 1, 9}) {
        program.advance(piece);
        rt.run();
      }
      EXPECT_EQ(step_units::check_chains(units, 12), "")
          << per_rank << " units per rank" << (mixed ? ", mixed" : "");
    }
}

// Links used in some phases only, and a last phase that sends nothing (no prime).
TEST(StepPrograms, LinksUsedInSomePhasesCarryTheirOwnTransfers) {
  auto& rt = test_runtime();
  for (std::int64_t n : {1, 3, 5}) {
    auto units = kodo::Collection<Relay>::create(rt, {n, 1, 1});
    kodo::StepProgram<Relay> program(units, {.phases = 4});
    constexpr std::int64_t steps = 4 * 5 + 2;  // five whole rounds and two phases
    program.advance(steps);
    rt.run();
    EXPECT_EQ(step_units::check_relays(units, steps), "");
  }
}

// Two programs of one collection, from two plans of the unit type, run in turns: each
// holds no data over between its runs (its last phase sends nothing), and their tags
// differ where they cross ranks. Plan "add": x + 1 sent right, then 2 x + left's. Plan
// "scale": 3 x sent left, then x + right's + 5.
inline void twin_kernel(const kodo::ExecutionSpace& space, const Cells& v, const Cells& in,
                        const Cells& out, int rule) {
  Kokkos::parallel_for(
      "step_test::twin", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, v.size()),
      KOKKOS_LAMBDA(std::size_t i) {
        std::int64_t x = v(i);
        if (rule == 0) x = x + 1;
        if (rule == 1) x = 2 * x + in(i);
        if (rule == 2) x = 3 * x;
        if (rule == 3) x = x + in(i) + 5;
        v(i) = x % step_units::kModulus;
        if (rule == 0 || rule == 2) out(i) = v(i);
      });
}

struct Twin final : kodo::WorkUnit<Twin> {
  explicit Twin(const kodo::UnitInit<Twin>& init)
      : WorkUnit(init), v_("v", 3), in_("in", 3), out_("out", 3) {
    auto h = Kokkos::create_mirror_view(v_);
    for (int i = 0; i < 3; ++i) h(i) = 7 * init.shape.linear(init.index) + i;
    Kokkos::deep_copy(v_, h);
  }
  Index3 neighbour(int toward) const {
    const auto n = collection().shape().size(), me = collection().shape().linear(index());
    return collection().shape().delinear((me + (toward == 0 ? n - 1 : 1)) % n);
  }
  void plan(kodo::StepPlan& plan, int first_rule, int toward, int tag) {
    const int q = plan.phase();
    if (q == 0) plan.send(out_, neighbour(toward), tag);
    if (q == 1) plan.receive(in_, neighbour(1 - toward), tag);
    const Cells v = v_, in = in_, out = out_;
    const int rule = first_rule + q;
    plan.work([=](const kodo::ExecutionSpace& space) { twin_kernel(space, v, in, out, rule); });
  }
  void plan_add(kodo::StepPlan& p) { plan(p, 0, 1, 0); }
  void plan_scale(kodo::StepPlan& p) { plan(p, 2, 0, 1); }
  Cells v_, in_, out_;
};

TEST(StepPrograms, TwoProgramsOfOneCollectionRunInTurns) {
  auto& rt = test_runtime();
  for (std::int64_t n : {1, 3, 2 * rt.size()}) {
    auto units = kodo::Collection<Twin>::create(rt, {n, 1, 1});
    kodo::StepProgram<Twin> add(units, {.phases = 2}, &Twin::plan_add);
    kodo::StepProgram<Twin> scale(units, {.phases = 2}, &Twin::plan_scale);
    std::vector<std::vector<std::int64_t>> v(static_cast<std::size_t>(n));
    for (std::int64_t u = 0; u < n; ++u)
      for (int i = 0; i < 3; ++i) v[static_cast<std::size_t>(u)].push_back(7 * u + i);
    // One step (two phases) of a rule on the host: each unit's new value, then the
    // neighbour's (right for add, left for scale).
    auto host_step = [&](bool adding) {
      auto sent = v;
      for (auto& unit : sent)
        for (auto& x : unit) x = (adding ? x + 1 : 3 * x) % step_units::kModulus;
      for (std::int64_t u = 0; u < n; ++u) {
        const auto from = static_cast<std::size_t>(adding ? (u + n - 1) % n : (u + 1) % n);
        for (int i = 0; i < 3; ++i) {
          const std::int64_t x = sent[static_cast<std::size_t>(u)][i], in = sent[from][i];
          v[static_cast<std::size_t>(u)][i] = (adding ? 2 * x + in : x + in + 5) %
                                              step_units::kModulus;
        }
      }
    };
    for (const auto& [adding, steps] :
         {std::pair(true, 2), std::pair(false, 1), std::pair(true, 1), std::pair(false, 3)}) {
      (adding ? add : scale).advance(2 * steps);
      rt.run();
      for (int k = 0; k < steps; ++k) host_step(adding);
    }
    EXPECT_EQ(add.steps(), 6);
    EXPECT_EQ(scale.steps(), 8);
    units.for_each_local([&](Twin& u) {
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, u.v_);
      const auto& want = v[static_cast<std::size_t>(units.shape().linear(u.index()))];
      for (int i = 0; i < 3; ++i) EXPECT_EQ(h(i), want[i]) << "unit " << u.index() << ", " << i;
    });
  }
}

// A unit whose plans are whatever the test says, for the bad plans below.
struct Planned final : kodo::WorkUnit<Planned> {
  using Plan = std::function<void(Planned&, kodo::StepPlan&)>;
  Planned(const kodo::UnitInit<Planned>& init, const Plan& plan)
      : WorkUnit(init), plan_(plan), a_("a", 4), b_("b", 4), small_("small", 2) {}
  void plan_step(kodo::StepPlan& plan) { plan_(*this, plan); }
  Index3 at(std::int64_t linear) const { return collection().shape().delinear(linear); }
  std::int64_t me() const { return collection().shape().linear(index()); }
  Plan plan_;
  Cells a_, b_, small_;
};

// The message every rank throws when the units of `shape` plan with `plan`.
std::string refusal(const kodo::Extent3& shape, const Planned::Plan& plan, int phases = 1) {
  auto units = kodo::Collection<Planned>::create(test_runtime(), shape, plan);
  return error_of([&] { kodo::StepProgram<Planned> program(units, {.phases = phases}); });
}

TEST(StepPrograms, BadPlansAreRefusedOnEveryRank) {
  const auto n = std::max<std::int64_t>(2, test_runtime().size());
  const kodo::Extent3 ring{n, 1, 1};
  // Unit 0 sends to unit 1, which receives nothing.
  const std::string lost_send = refusal(ring, [](Planned& u, kodo::StepPlan& p) {
    if (u.me() == 0) p.send(u.a_, u.at(1), 0);
    p.prime();
  });
  EXPECT_NE(lost_send.find("unit (0,0,0) (rank 0) sends to unit (1,0,0) (rank "), std::string::npos)
      << lost_send;
  EXPECT_NE(lost_send.find(") with tag 0 in phase 0, but that unit receives nothing from it"),
            std::string::npos)
      << lost_send;
  // Unit 1 receives from unit 0, which sends nothing.
  const std::string lost_receive = refusal(ring, [](Planned& u, kodo::StepPlan& p) {
    if (u.me() == 1) p.receive(u.a_, u.at(0), 0);
  });
  EXPECT_NE(lost_receive.find("receives from unit (0,0,0) (rank 0) with tag 0 in phase 0, but "
                              "that unit sends nothing to it with tag 0 in phase 0"),
            std::string::npos)
      << lost_receive;
  // Sizes differ.
  EXPECT_NE(refusal(ring,
                    [](Planned& u, kodo::StepPlan& p) {
                      if (u.me() == 0) p.send(u.a_, u.at(1), 0);
                      if (u.me() == 1) p.receive(u.small_, u.at(0), 0);
                      p.prime();
                    })
                .find("sends 32 bytes to unit (1,0,0)"),
            std::string::npos);
  // The last phase sends without prime().
  EXPECT_NE(refusal(ring,
                    [](Planned& u, kodo::StepPlan& p) {
                      p.send(u.a_, u.at((u.me() + 1) % u.collection().size()), 0);
                      p.receive(u.b_,
                                u.at((u.me() + u.collection().size() - 1) % u.collection().size()),
                                0);
                    })
                .find("the plan of that phase declares prime()"),
            std::string::npos);
  // prime() in a phase that is not the last.
  EXPECT_NE(refusal(
                ring, [](Planned&, kodo::StepPlan& p) { p.prime(); }, 2)
                .find("declares prime() in phase 0: it belongs to the plan of the last phase (1)"),
            std::string::npos);
  // Tags, peers, duplicates, overlapping receives.
  EXPECT_NE(refusal(ring, [](Planned& u, kodo::StepPlan& p) { p.send(u.a_, u.index(), 1 << 30); })
                .find("tags are 0 to 2^30 - 1"),
            std::string::npos);
  EXPECT_NE(refusal(ring,
                    [n](Planned& u, kodo::StepPlan& p) { p.receive(u.a_, Index3{n, 0, 0}, 0); })
                .find("outside its collection"),
            std::string::npos);
  EXPECT_NE(refusal(ring,
                    [](Planned& u, kodo::StepPlan& p) {
                      p.send(u.a_, u.index(), 0);
                      p.send(u.b_, u.index(), 0);
                      p.receive(u.small_, u.index(), 0);
                      p.prime();
                    })
                .find("twice with tag 0"),
            std::string::npos);
  EXPECT_NE(refusal(ring,
                    [](Planned& u, kodo::StepPlan& p) {
                      p.send(u.a_, u.index(), 0);
                      p.send(u.b_, u.index(), 1);
                      p.receive(u.a_, u.index(), 0);
                      p.receive(Cells(u.a_, std::pair(2, 4)), u.index(), 1);
                      p.prime();
                    })
                .find("overlap in memory"),
            std::string::npos);
  // A plan that throws on one rank only: every rank hears of it.
  EXPECT_NE(refusal(ring,
                    [](Planned& u, kodo::StepPlan&) {
                      if (u.me() == u.collection().size() - 1) throw kodo::Error("unit says no");
                    })
                .find("unit says no"),
            std::string::npos);
  // Phases and steps.
  EXPECT_NE(refusal(
                ring, [](Planned&, kodo::StepPlan&) {}, 0)
                .find("1 to 65536 phases, not 0"),
            std::string::npos);
  auto units = kodo::Collection<Planned>::create(test_runtime(), ring,
                                                 Planned::Plan([](Planned&, kodo::StepPlan&) {}));
  kodo::StepProgram<Planned> program(units);
  EXPECT_ERROR(program.advance(-1), "a count of steps, not -1");
  program.advance(2);
  test_runtime().run();  // units without work or transfers: steps that do nothing
  EXPECT_EQ(program.steps(), 2);
}

}  // namespace
