// Step programs (tasking/step_program.hpp) on 1, 2 and 4 ranks: a periodic stencil whose
// units exchange their edges every step, with 1 to 3 phases, device and host-staged
// transfers, units that are their own neighbours; a program whose links are used in some
// phases only; steps asked for in pieces; and every bad plan refused on every rank.

#include "expect_error.hpp"
#include "test_runtime.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using kodo::Index3;
using Cells = Kokkos::View<std::int64_t*>;
constexpr std::int64_t kModulus = 1000003;

// The global update: new[j] = (old[j-1] + 2 old[j] + 3 old[j+1] + 1) mod kModulus on a
// periodic ring of cells.
std::int64_t initial(std::int64_t j) { return (j * 7919 + 13) % kModulus; }
std::vector<std::int64_t> reference(std::int64_t cells, std::int64_t steps) {
  std::vector<std::int64_t> a(static_cast<std::size_t>(cells)), b(a.size());
  for (std::int64_t j = 0; j < cells; ++j) a[static_cast<std::size_t>(j)] = initial(j);
  for (std::int64_t n = 0; n < steps; ++n) {
    for (std::int64_t j = 0; j < cells; ++j) {
      const auto at = [&](std::int64_t k) {
        return a[static_cast<std::size_t>((k + cells) % cells)];
      };
      b[static_cast<std::size_t>(j)] = (at(j - 1) + 2 * at(j) + 3 * at(j + 1) + 1) % kModulus;
    }
    std::swap(a, b);
  }
  return a;
}

// Kernels as free functions (nvcc has no device lambdas in member functions). Cells
// [begin, end) of the update; only the first and the last read a ghost.
void update(const kodo::ExecutionSpace& space, const Cells& from, const Cells& to,
            const Cells& left, const Cells& right, std::int64_t begin, std::int64_t end) {
  const auto n = static_cast<std::int64_t>(from.size());
  if (begin >= end) return;
  Kokkos::parallel_for(
      "step_test::update", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, begin, end),
      KOKKOS_LAMBDA(std::int64_t i) {
        const std::int64_t l = i == 0 ? left(0) : from(i - 1);
        const std::int64_t r = i == n - 1 ? right(0) : from(i + 1);
        to(i) = (l + 2 * from(i) + 3 * r + 1) % kModulus;
      });
}
void edges(const kodo::ExecutionSpace& space, const Cells& from, const Cells& first,
           const Cells& last) {
  const auto n = static_cast<std::int64_t>(from.size());
  Kokkos::parallel_for(
      "step_test::edges", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, 1),
      KOKKOS_LAMBDA(std::int64_t) {
        first(0) = from(0);
        last(0) = from(n - 1);
      });
}

// A run of `length` cells of the ring. Tag 0 travels right, tag 1 left. With one phase
// the step writes a scratch array and copies it back; with P >= 2 it moves from array
// q to array q + 1 (mod P). With `split`, the cells that read no ghost are updated by
// work_without_receives.
struct Arc final : kodo::WorkUnit<Arc> {
  Arc(const kodo::UnitInit<Arc>& init, std::int64_t length, int phases, bool split)
      : WorkUnit(init), phases_(phases), split_(split) {
    const std::int64_t first = init.shape.linear(init.index) * length;
    for (int q = 0; q < std::max(phases, 2); ++q) {
      cells_.emplace_back("cells", length);
      ghost_left_.emplace_back("ghost_left", 1);
      ghost_right_.emplace_back("ghost_right", 1);
      edge_left_.emplace_back("edge_left", 1);
      edge_right_.emplace_back("edge_right", 1);
    }
    auto h = Kokkos::create_mirror_view(cells_[0]);
    for (std::int64_t i = 0; i < length; ++i) h(i) = initial(first + i);
    Kokkos::deep_copy(cells_[0], h);
  }
  Index3 neighbour(int toward) const {
    const auto n = collection().shape().size(), me = collection().shape().linear(index());
    return collection().shape().delinear((me + (toward == 0 ? n - 1 : 1)) % n);
  }
  // The array a step of phase q reads, and the one it writes.
  std::size_t in(int q) const { return phases_ == 1 ? 0 : static_cast<std::size_t>(q); }
  std::size_t out(int q) const {
    return phases_ == 1 ? 1 : static_cast<std::size_t>((q + 1) % phases_);
  }

  void plan_step(kodo::StepPlan& plan) {
    const int q = plan.phase();
    const auto p = static_cast<std::size_t>(q);
    EXPECT_EQ(plan.phases(), phases_);
    plan.receive(ghost_left_[p], neighbour(0), 0);
    plan.receive(ghost_right_[p], neighbour(1), 1);
    plan.send(edge_left_[p], neighbour(0), 1);
    plan.send(edge_right_[p], neighbour(1), 0);
    const Cells from = cells_[in(q)], to = cells_[out(q)], gl = ghost_left_[p],
                gr = ghost_right_[p], el = edge_left_[p], er = edge_right_[p];
    const bool copy_back = phases_ == 1;
    const Cells home = cells_[0];
    const auto n = static_cast<std::int64_t>(from.size());
    if (split_) {
      plan.work_without_receives([=](const kodo::ExecutionSpace& space) {
        update(space, from, to, gl, gr, 1, n - 1);
      });
    }
    const bool split = split_;
    plan.work([=](const kodo::ExecutionSpace& space) {
      if (split) {
        update(space, from, to, gl, gr, 0, 1);
        update(space, from, to, gl, gr, std::max<std::int64_t>(1, n - 1), n);
      } else {
        update(space, from, to, gl, gr, 0, n);
      }
      if (copy_back) Kokkos::deep_copy(space, home, to);
      edges(space, copy_back ? home : to, el, er);
    });
    // The first step's ghosts: the edges of the initial cells.
    if (q == plan.phases() - 1)
      plan.prime([=](const kodo::ExecutionSpace& space) { edges(space, home, el, er); });
  }

  std::vector<std::int64_t> current(std::int64_t steps) const {
    const auto& a = cells_[phases_ == 1 ? 0 : static_cast<std::size_t>(steps % phases_)];
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a);
    return std::vector<std::int64_t>(h.data(), h.data() + h.size());
  }

  int phases_;
  bool split_;
  std::vector<Cells> cells_, ghost_left_, ghost_right_, edge_left_, edge_right_;
};

void check_segments(const kodo::Collection<Arc>& units, std::int64_t length, std::int64_t steps) {
  const auto expected = reference(units.size() * length, steps);
  units.for_each_local([&](Arc& u) {
    const auto got = u.current(steps);
    const std::int64_t first = units.shape().linear(u.index()) * length;
    for (std::int64_t i = 0; i < length; ++i)
      ASSERT_EQ(got[static_cast<std::size_t>(i)], expected[static_cast<std::size_t>(first + i)])
          << "unit " << u.index() << " cell " << i << " after " << steps << " steps";
  });
}

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
  EXPECT_EQ(program.replays_graphs(),
            c.graphs && std::string(KODO_BACKEND_NAME) != "host" && rt.rank() < c.units);
  // Steps in pieces: each run() ends with the steps asked for done.
  std::int64_t done = 0;
  for (std::int64_t piece : {3, 0, 1, 7}) {
    program.advance(piece);
    rt.run();
    done += piece;
    EXPECT_EQ(program.steps(), done);
    check_segments(units, length, done);
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

// Links used in some phases only, and a last phase that sends nothing (no prime): phase
// 0 adds one and sends right, phase 1 adds what came from the left and sends left, phase
// 2 doubles and adds what came from the right, phase 3 adds three.
void relay_kernel(const kodo::ExecutionSpace& space, const Cells& v, const Cells& in,
                  const Cells& out, int phase) {
  Kokkos::parallel_for(
      "step_test::relay", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, v.size()),
      KOKKOS_LAMBDA(std::size_t i) {
        std::int64_t x = v(i);
        if (phase == 0) x = x + 1;
        if (phase == 1) x = x + in(i);
        if (phase == 2) x = 2 * x + in(i);
        if (phase == 3) x = x + 3;
        v(i) = x % kModulus;
        if (phase == 0 || phase == 1) out(i) = v(i);
      });
}

struct Relay final : kodo::WorkUnit<Relay> {
  Relay(const kodo::UnitInit<Relay>& init)
      : WorkUnit(init),
        v_("v", 4),
        in_{Cells("in", 4), Cells("in", 4)},
        out_{Cells("out", 4), Cells("out", 4)} {
    const std::int64_t me = init.shape.linear(init.index);
    auto h = Kokkos::create_mirror_view(v_);
    for (int i = 0; i < 4; ++i) h(i) = me * 10 + i;
    Kokkos::deep_copy(v_, h);
  }
  Index3 neighbour(int toward) const {
    const auto n = collection().shape().size(), me = collection().shape().linear(index());
    return collection().shape().delinear((me + (toward == 0 ? n - 1 : 1)) % n);
  }
  void plan_step(kodo::StepPlan& plan) {
    const int q = plan.phase();
    Cells in = q == 1 ? in_[0] : in_[1], out = q == 0 ? out_[0] : out_[1], v = v_;
    if (q == 0) plan.send(out_[0], neighbour(1), 0);
    if (q == 1) {
      plan.receive(in_[0], neighbour(0), 0);
      plan.send(out_[1], neighbour(0), 1);
    }
    if (q == 2) plan.receive(in_[1], neighbour(1), 1);
    plan.work([=](const kodo::ExecutionSpace& space) { relay_kernel(space, v, in, out, q); });
  }
  Cells v_;
  std::vector<Cells> in_, out_;
};

TEST(StepPrograms, LinksUsedInSomePhasesCarryTheirOwnTransfers) {
  auto& rt = test_runtime();
  for (std::int64_t n : {1, 3, 5}) {
    auto units = kodo::Collection<Relay>::create(rt, {n, 1, 1});
    kodo::StepProgram<Relay> program(units, {.phases = 4});
    constexpr std::int64_t steps = 4 * 5 + 2;  // five whole rounds and two phases
    program.advance(steps);
    rt.run();
    // The same on the host, all units at once.
    std::vector<std::vector<std::int64_t>> v(static_cast<std::size_t>(n),
                                             std::vector<std::int64_t>(4)),
        out = v;
    for (std::int64_t u = 0; u < n; ++u)
      for (int i = 0; i < 4; ++i) v[static_cast<std::size_t>(u)][i] = u * 10 + i;
    for (std::int64_t s = 0; s < steps; ++s) {
      const auto old = out;
      for (std::int64_t u = 0; u < n; ++u)
        for (int i = 0; i < 4; ++i) {
          auto& x = v[static_cast<std::size_t>(u)][i];
          const auto left = static_cast<std::size_t>((u + n - 1) % n),
                     right = static_cast<std::size_t>((u + 1) % n);
          switch (s % 4) {
            case 0:
              x = (x + 1) % kModulus;
              out[static_cast<std::size_t>(u)][i] = x;
              break;
            case 1:
              x = (x + old[left][i]) % kModulus;
              out[static_cast<std::size_t>(u)][i] = x;
              break;
            case 2: x = (2 * x + old[right][i]) % kModulus; break;
            default: x = (x + 3) % kModulus;
          }
        }
    }
    units.for_each_local([&](Relay& u) {
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, u.v_);
      const auto me = static_cast<std::size_t>(units.shape().linear(u.index()));
      for (int i = 0; i < 4; ++i) ASSERT_EQ(h(i), v[me][i]) << "unit " << me << " value " << i;
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
