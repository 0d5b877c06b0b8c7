// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Units for the tests of step programs (step_program_test.cpp, step_program_device.cpp),
// and what their steps must give, computed on the host.
//
// Arc: a run of cells of a periodic ring updated by a 3-point stencil, exchanging its
// edges every step, with 1, 2 or 3 phases, its inner cells optionally as
// work_without_receives. Relay: links used in some of 4 phases only. Chain: rounds of
// work_together that read what the round before wrote, and work after them.

#include <kodo/kodo.hpp>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace step_units {

using kodo::Index3;
using Cells = Kokkos::View<std::int64_t*>;
inline constexpr std::int64_t kModulus = 1000003;

// The global update: new[j] = (old[j-1] + 2 old[j] + 3 old[j+1] + 1) mod kModulus on a
// periodic ring of cells.
inline std::int64_t initial(std::int64_t j) { return (j * 7919 + 13) % kModulus; }
inline std::vector<std::int64_t> reference(std::int64_t cells, std::int64_t steps) {
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

// The unit before (toward 0) or after (toward 1) `unit` on the ring of its collection's
// units, in linear order.
template <class U>
Index3 ring_neighbour(const U& unit, int toward) {
  const auto& shape = unit.collection().shape();
  const auto n = shape.size(), me = shape.linear(unit.index());
  return shape.delinear((me + (toward == 0 ? n - 1 : 1)) % n);
}

// Kernels as free functions (nvcc has no device lambdas in member functions). Cells
// [begin, end) of the update; only the first and the last read a ghost.
inline void update(const kodo::ExecutionSpace& space, const Cells& from, const Cells& to,
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
inline void edges(const kodo::ExecutionSpace& space, const Cells& from, const Cells& first,
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
  Index3 neighbour(int toward) const { return ring_neighbour(*this, toward); }
  // The array a step of phase q reads, and the one it writes.
  std::size_t in(int q) const { return phases_ == 1 ? 0 : static_cast<std::size_t>(q); }
  std::size_t out(int q) const {
    return phases_ == 1 ? 1 : static_cast<std::size_t>((q + 1) % phases_);
  }

  void plan_step(kodo::StepPlan& plan) {
    const int q = plan.phase();
    const auto p = static_cast<std::size_t>(q);
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

// "" when every local unit holds the ring's cells after `steps`, else the first that does not.
inline std::string check_arcs(const kodo::Collection<Arc>& units, std::int64_t length,
                              std::int64_t steps) {
  const auto expected = reference(units.size() * length, steps);
  std::ostringstream wrong;
  units.for_each_local([&](Arc& u) {
    const auto got = u.current(steps);
    const std::int64_t first = units.shape().linear(u.index()) * length;
    for (std::int64_t i = 0; i < length && wrong.str().empty(); ++i)
      if (got[static_cast<std::size_t>(i)] != expected[static_cast<std::size_t>(first + i)])
        wrong << "unit " << u.index() << " cell " << i << " after " << steps << " steps holds "
              << got[static_cast<std::size_t>(i)] << ", not "
              << expected[static_cast<std::size_t>(first + i)];
  });
  return wrong.str();
}

// Links used in some phases only, and a last phase that sends nothing (no prime): phase
// 0 adds one and sends right, phase 1 adds what came from the left and sends left, phase
// 2 doubles and adds what came from the right, phase 3 adds three.
inline void relay_kernel(const kodo::ExecutionSpace& space, const Cells& v, const Cells& in,
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
  Relay(const kodo::UnitInit<Relay>& init) : WorkUnit(init), v_("v", 4) {
    for (int k = 0; k < 2; ++k) {
      in_.emplace_back("in", 4);
      out_.emplace_back("out", 4);
    }
    const std::int64_t me = init.shape.linear(init.index);
    auto h = Kokkos::create_mirror_view(v_);
    for (int i = 0; i < 4; ++i) h(i) = me * 10 + i;
    Kokkos::deep_copy(v_, h);
  }
  Index3 neighbour(int toward) const { return ring_neighbour(*this, toward); }
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

// "" when every local unit holds what `steps` relay steps give, else the first that does not.
inline std::string check_relays(const kodo::Collection<Relay>& units, std::int64_t steps) {
  const std::int64_t n = units.size();
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
  std::ostringstream wrong;
  units.for_each_local([&](Relay& u) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, u.v_);
    const auto me = static_cast<std::size_t>(units.shape().linear(u.index()));
    for (int i = 0; i < 4 && wrong.str().empty(); ++i)
      if (h(i) != v[me][static_cast<std::size_t>(i)])
        wrong << "relay unit " << me << " value " << i << " is " << h(i) << ", not "
              << v[me][static_cast<std::size_t>(i)];
  });
  return wrong.str();
}

// A ring of units, 2 phases. Phase 0: round 0 tmp = v + 1, round 1 out = 2 tmp (sent
// right, tag 0) and v = tmp. Phase 1: round 0 v = (v + what came from the left) mod
// kModulus, on units of even index a round 1 that leaves v as it is (rounds in some units
// only), then work v = 3 v mod kModulus. So every two steps v = 3 (v + 1 + 2 (left's v +
// 1)) mod kModulus. With `mixed`, units of odd index do the same otherwise: phase 0 as one
// work of their own (no rounds where the others have them), phase 1 in rounds alone (their
// receive read by rounds only), and units of even index add a work_without_receives that
// clears tmp.
inline void chain_first(kodo::KernelBatch& batch, const Cells& v, const Cells& tmp) {
  batch.parallel_for(
      "step_test::chain_first", 0, v.extent(0),
      KOKKOS_LAMBDA(std::int64_t i) { tmp(i) = v(i) + 1; });
}
inline void chain_second(kodo::KernelBatch& batch, const Cells& v, const Cells& tmp,
                         const Cells& out) {
  batch.parallel_for(
      "step_test::chain_double", 0, tmp.extent(0),
      KOKKOS_LAMBDA(std::int64_t i) { out(i) = 2 * tmp(i); });
  batch.parallel_for(
      "step_test::chain_keep", 0, tmp.extent(0), KOKKOS_LAMBDA(std::int64_t i) { v(i) = tmp(i); });
}
inline void chain_add(kodo::KernelBatch& batch, const Cells& v, const Cells& in, bool add) {
  batch.parallel_for(
      "step_test::chain_add", 0, v.extent(0),
      KOKKOS_LAMBDA(std::int64_t i) { v(i) = (v(i) + (add ? in(i) : 0)) % kModulus; });
}
inline void chain_triple(const kodo::ExecutionSpace& space, const Cells& v) {
  Kokkos::parallel_for(
      "step_test::chain_triple", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, v.extent(0)),
      KOKKOS_LAMBDA(std::int64_t i) { v(i) = 3 * v(i) % kModulus; });
}

inline void chain_whole(const kodo::ExecutionSpace& space, const Cells& v, const Cells& tmp,
                        const Cells& out) {
  Kokkos::parallel_for(
      "step_test::chain_whole", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, v.extent(0)),
      KOKKOS_LAMBDA(std::int64_t i) {
        tmp(i) = v(i) + 1;
        out(i) = 2 * tmp(i);
        v(i) = tmp(i);
      });
}
inline void chain_triple_together(kodo::KernelBatch& batch, const Cells& v) {
  batch.parallel_for(
      "step_test::chain_triple_together", 0, v.extent(0),
      KOKKOS_LAMBDA(std::int64_t i) { v(i) = 3 * v(i) % kModulus; });
}
inline void chain_clear(const kodo::ExecutionSpace& space, const Cells& tmp) {
  Kokkos::parallel_for(
      "step_test::chain_clear", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, tmp.extent(0)),
      KOKKOS_LAMBDA(std::int64_t i) { tmp(i) = 0; });
}

struct Chain final : kodo::WorkUnit<Chain> {
  explicit Chain(const kodo::UnitInit<Chain>& init, bool mixed = false)
      : WorkUnit(init), mixed_(mixed), v_("v", 8), tmp_("tmp", 8), in_("in", 8), out_("out", 8) {
    const std::int64_t me = init.shape.linear(init.index);
    auto h = Kokkos::create_mirror_view(v_);
    for (int i = 0; i < 8; ++i) h(i) = me * 100 + i;
    Kokkos::deep_copy(v_, h);
  }
  Index3 neighbour(int toward) const { return ring_neighbour(*this, toward); }
  void plan_step(kodo::StepPlan& plan) {
    const Cells v = v_, tmp = tmp_, in = in_, out = out_;
    const bool odd = collection().shape().linear(index()) % 2 == 1;
    if (mixed_ && odd) {
      if (plan.phase() == 0) {
        plan.send(out_, neighbour(1), 0);
        plan.work([=](const kodo::ExecutionSpace& space) { chain_whole(space, v, tmp, out); });
        return;
      }
      plan.receive(in_, neighbour(0), 0);
      plan.work_together([=](kodo::KernelBatch& batch) { chain_add(batch, v, in, true); });
      plan.work_together([=](kodo::KernelBatch& batch) { chain_triple_together(batch, v); });
      return;
    }
    if (mixed_ && plan.phase() == 1)
      plan.work_without_receives([=](const kodo::ExecutionSpace& space) {
        chain_clear(space, tmp);
      });
    if (plan.phase() == 0) {
      plan.send(out_, neighbour(1), 0);
      plan.work_together([=](kodo::KernelBatch& batch) { chain_first(batch, v, tmp); });
      plan.work_together([=](kodo::KernelBatch& batch) { chain_second(batch, v, tmp, out); });
      return;
    }
    plan.receive(in_, neighbour(0), 0);
    plan.work_together([=](kodo::KernelBatch& batch) { chain_add(batch, v, in, true); });
    if (collection().shape().linear(index()) % 2 == 0)
      plan.work_together([=](kodo::KernelBatch& batch) { chain_add(batch, v, in, false); });
    plan.work([=](const kodo::ExecutionSpace& space) { chain_triple(space, v); });
  }
  bool mixed_;
  Cells v_, tmp_, in_, out_;
};

// "" when every local unit holds what `steps` chain steps give, else the first that does not.
inline std::string check_chains(const kodo::Collection<Chain>& units, std::int64_t steps) {
  const std::int64_t n = units.size();
  std::vector<std::vector<std::int64_t>> v(static_cast<std::size_t>(n),
                                           std::vector<std::int64_t>(8));
  for (std::int64_t u = 0; u < n; ++u)
    for (int i = 0; i < 8; ++i)
      v[static_cast<std::size_t>(u)][static_cast<std::size_t>(i)] = u * 100 + i;
  for (std::int64_t s = 1; s < steps; s += 2) {
    const auto old = v;
    for (std::int64_t u = 0; u < n; ++u)
      for (std::size_t i = 0; i < 8; ++i)
        v[static_cast<std::size_t>(u)][i] =
            3 *
            ((old[static_cast<std::size_t>(u)][i] + 1 +
              2 * (old[static_cast<std::size_t>((u + n - 1) % n)][i] + 1)) %
             kModulus) %
            kModulus;
  }
  std::ostringstream wrong;
  units.for_each_local([&](const Chain& u) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, u.v_);
    const auto me = static_cast<std::size_t>(units.shape().linear(u.index()));
    for (std::size_t i = 0; i < 8 && wrong.str().empty(); ++i)
      if (h(i) != v[me][i])
        wrong << "chain unit " << me << " value " << i << " is " << h(i) << ", not " << v[me][i];
  });
  return wrong.str();
}

}  // namespace step_units
