// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A unit's step programs (atom_unit_parts.hpp).
#include "atom_unit.hpp"
#include "atom_unit_parts.hpp"
#include "error.hpp"

#include <algorithm>
#include <string>

namespace minimd {
namespace {

// The records of a program's buffer: what follows its count (element 0).
Payload records(const Payload& buffer) {
  return Kokkos::subview(buffer, std::pair<std::size_t, std::size_t>(1, buffer.size()));
}
// How many records of `per` values a program's buffer has room for.
int records_in(const Payload& buffer, int per) {
  return buffer.size() > 1 ? static_cast<int>((buffer.size() - 1) / static_cast<std::size_t>(per))
                           : 0;
}

// into(k) = values[k]; the values travel as the kernel's argument (no host buffer to keep
// alive until the copy is done).
template <std::size_t N>
void write_values(const Device& space, const Kokkos::Array<int, N>& values, Indices into) {
  Kokkos::parallel_for(
      "minimd::write_values", Kokkos::RangePolicy<Device>(space, 0, N),
      KOKKOS_LAMBDA(int k) { into(k) = values[k]; });
}

}  // namespace

// ---- the step program ------------------------------------------------------------------

// Room in the programs' buffers for the counts of the lists just rebuilt. Both ends of a
// transfer see the same count (the sender's border list is the receiver's ghosts from that
// side, its migrants the receiver's arrivals), so their buffers grow alike. Migrants vary
// more from one reneighboring to the next than ghosts do (at the first, from a lattice,
// they all go down): their room is a quarter of the atoms within the cutoff of the face
// they cross (few move that far in an interval), or a quarter more than were counted.
void AtomUnit::grow_program_buffers() {
  auto buffer = [](const char* label, int room, int per) {
    return Payload(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)),
                   1 + static_cast<std::size_t>(per) * static_cast<std::size_t>(room));
  };
  auto migrant_room = [](int count, int near_face) {
    return std::max(room_for(count + count / 4, "migrants"), near_face / 4 + 64);
  };
  for (int d = 0; d < 3; ++d)
    for (int side = 0; side < 2; ++side) {
      // (a buffer of no room still holds its count)
      const bool in_grows = count_[d][side] > in_room_[d][side];
      if (in_grows) in_room_[d][side] = room_for(count_[d][side], "ghosts");
      if (self(d)) continue;
      if (in_grows || !program_in_[d][side].data())
        program_in_[d][side] = buffer("minimd::program_in", in_room_[d][side], 3);
      const bool out_grows = border_count_[d][side] > out_room_[d][side];
      if (out_grows) out_room_[d][side] = room_for(border_count_[d][side], "ghosts");
      if (out_grows || !program_out_[d][side].data())
        program_out_[d][side] = buffer("minimd::program_out", out_room_[d][side], 3);
      if (!setup_.reneighbor_program) continue;
      Payload& sent = migrant_out_[d][side];
      if (!sent.data() || migrants_[d][side] > records_in(sent, 6))
        sent = buffer("minimd::migrant_out",
                      migrant_room(migrants_[d][side], border_count_[d][side]), 6);
      Payload& received = migrant_in_[d][side];
      if (!received.data() || arrivals_[d][side] > records_in(received, 6))
        received =
            buffer("minimd::migrant_in", migrant_room(arrivals_[d][side], count_[d][side]), 6);
    }
}

// The counts of the lists just rebuilt, for the programs' kernels (the interior is in
// its slot already), and room in their buffers.
void AtomUnit::publish_sizes() {
  if (!setup_.step_program) return;
  grow_program_buffers();
  lists_for_rows();  // the rows may have grown with the ghosts after a list was made
  constexpr int slots = border_count + 6 - own;
  Kokkos::Array<int, slots> values{};
  values[own - own] = nlocal_;
  values[all_atoms - own] = natoms_;
  for (int d = 0; d < 3; ++d)
    for (int side = 0; side < 2; ++side) {
      values[ghost_first + 2 * d + side - own] = first_[d][side];
      values[ghost_count + 2 * d + side - own] = count_[d][side];
      values[border_count + 2 * d + side - own] = border_count_[d][side];
    }
  write_values(compute_->space(), values,
               Kokkos::subview(counters_, std::make_pair(static_cast<int>(own), own + slots)));
}

std::vector<std::uintptr_t> AtomUnit::planned_views() const {
  auto at = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
  std::vector<std::uintptr_t> views = {at(x_.data()),
                                       at(v_.data()),
                                       at(f_.data()),
                                       at(neighbors_.data()),
                                       at(neighbor_count_.data()),
                                       at(counters_.data())};
  for (int d = 0; d < 3; ++d)
    for (int side = 0; side < 2; ++side)
      for (const void* p : {static_cast<const void*>(border_[d][side].data()),
                            static_cast<const void*>(program_in_[d][side].data()),
                            static_cast<const void*>(program_out_[d][side].data())})
        views.push_back(at(p));
  for (int d = 0; d < 3; ++d)  // the bounds of the kernels over images (no buffer of their own)
    for (int side = 0; side < 2; ++side)
      views.push_back(static_cast<std::uintptr_t>(in_room_[d][side]));
  return views;
}

bool AtomUnit::plan_current() const { return !planned_.empty() && planned_ == planned_views(); }

// A step a program ran ends, as on every step, with the final integrate; the potential
// energy and virial come from its lists and positions, as the force of a thermo step unit
// by unit sums them, into forces of their own: f holds the program's, which the next step
// integrates.
void AtomUnit::sum_thermo() {
  const Device& space = compute_->space();
  const auto own = static_cast<std::size_t>(nlocal_);
  Vectors forces = f_saved_;
  if (forces.extent(0) < own) {
    if (thermo_forces_.extent(0) < own)
      thermo_forces_ = Vectors(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                                  std::string("minimd::thermo_forces")),
                               std::max(own, static_cast<std::size_t>(v_.extent(0))));
    forces = thermo_forces_;
  }
  Kokkos::deep_copy(space, thermo_, 0.0);
  force(space, x_, forces, nlocal_, natoms_, neighbors_, neighbor_count_, setup_.list, potential(),
        true, Payload(Kokkos::subview(thermo_, std::pair<std::size_t, std::size_t>(1, 3))));
  contribute_thermo();
}

void AtomUnit::program_runs(std::int64_t steps) {
  if (in_step_ || completed_ != step_)
    throw Error(text("minimd: unit ", index(), " runs the step program at step ", step_,
                     " in the middle of a step of its own"));
  step_ += steps;
  completed_ = step_;
}

// A plain step as four phases (atom_unit.hpp). Everything the work reads is captured
// here, by value: the program replays it as recorded. Its small kernels go out in rounds
// with the same kernels of the rank's other units (work_together), each round after the one
// before it: at ODF 8 a phase is one launch for the rank, not eight small ones.
void AtomUnit::plan_step(kodo::StepPlan& plan) {
  if (!setup_.step_program || setup_.list != ListKind::full)
    throw Error("minimd: the step program runs full lists only");
  const int q = plan.phase();
  planned_ = planned_views();
  program_x_ = x_.data();
  const Vectors x = x_, v = v_, f = f_;
  const NeighborList lists = neighbors_;
  const Indices list_sizes = neighbor_count_;
  const Potential pair = potential();
  const double dt = setup_.problem.dt;
  const int rows = neighbors_.atoms();
  const Count own_atoms = sized(own, static_cast<int>(v_.extent(0)));
  const Count inner = sized(interior, rows), own_rows = sized(own, rows);
  if (q == 0)
    plan.work_together([=](kodo::KernelBatch& b) { initial_integrate(b, x, v, f, own_atoms, dt); });
  // The ghosts along q - 1 that arrive (sent in the previous phase) and those along q sent
  // to neighbours, in one kernel; images of own atoms (a unit its own neighbour) after it.
  Payload ins[2], outs[2];
  Count in_counts[2] = {0, 0}, firsts[2] = {0, 0}, out_counts[2] = {0, 0};
  Indices borders[2];
  double shifts[2] = {0, 0};
  if (q >= 1 && !self(q - 1)) {
    const int d = q - 1;
    for (int side = 0; side < 2; ++side) {
      plan.receive(program_in_[d][side], neighbour(d, side), 2 * d + 1 - side);
      ins[side] = records(program_in_[d][side]);
      in_counts[side] = sized(ghost_count + 2 * d + side, in_room_[d][side]);
      firsts[side] = sized(ghost_first + 2 * d + side, 0);
    }
  }
  if (q <= 2 && !self(q)) {
    const int d = q;
    for (int side = 0; side < 2; ++side) {
      plan.send(program_out_[d][side], neighbour(d, side), 2 * d + side);  // toward `side`
      outs[side] = records(program_out_[d][side]);
      borders[side] = border_[d][side];
      out_counts[side] = sized(border_count + 2 * d + side, out_room_[d][side]);
      shifts[side] = shift(d, side);
    }
  }
  if (in_counts[0].bound + in_counts[1].bound + out_counts[0].bound + out_counts[1].bound > 0) {
    const int d = q;
    plan.work_together([=](kodo::KernelBatch& b) {
      unpack_and_pack_positions(b, ins, in_counts, firsts, x, borders, out_counts, d, shifts, outs);
    });
  }
  if (q <= 2 && self(q)) {
    // Both sides' images in one round: each writes ghost rows of its own from listed atoms
    // that are no ghosts along d.
    const int d = q;
    Indices lists_of[2];
    Count counts[2] = {0, 0}, starts[2] = {0, 0};
    double by[2] = {0, 0};
    for (int side = 0; side < 2; ++side) {
      lists_of[side] = border_[d][1 - side];
      counts[side] = sized(ghost_count + 2 * d + side, in_room_[d][side]);
      starts[side] = sized(ghost_first + 2 * d + side, 0);
      by[side] = shift(d, 1 - side);
    }
    plan.work_together([=](kodo::KernelBatch& b) {
      for (int side = 0; side < 2; ++side)
        copy_positions(b, x, lists_of[side], counts[side], d, by[side], starts[side]);
    });
  }
  // Atoms with no ghost in their lists need only their own positions: their force can run
  // while ghosts come from another rank. Within a rank the other units' work fills the
  // device meanwhile, and one launch over every atom costs less than two.
  bool split = false;
  for (int d = 0; d < 3; ++d) split = split || remote(d, 0) || remote(d, 1);
  if (q == 1 && split)
    plan.work_without_receives([=](const Device& s) {
      force_full(s, x, f, 0, inner, rows, lists, list_sizes, pair, false, {});
    });
  // The force, each unit's own kernel: it fills the device by itself from 16k atoms a unit
  // (launched together it ran 5% slower at 1M atoms: docs/performance.md).
  if (q == 3) {
    const Count first = split ? inner : Count(0);
    plan.work([=](const Device& s) {
      force_full(s, x, f, first, own_rows, rows, lists, list_sizes, pair, false, {});
      final_integrate(s, v, f, own_atoms, dt);
    });
  }
}

// ---- the reneighboring program -----------------------------------------------------------

std::vector<std::uintptr_t> AtomUnit::reneighbor_views() const {
  auto at = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
  std::vector<std::uintptr_t> views = planned_views();
  for (const void* p :
       {static_cast<const void*>(x_spare_.data()), static_cast<const void*>(v_spare_.data()),
        static_cast<const void*>(x_saved_.data()), static_cast<const void*>(bin_of_.data()),
        static_cast<const void*>(bin_atoms_.data()),
        static_cast<const void*>(select_tiles_.data())})
    views.push_back(at(p));
  for (int d = 0; d < 3; ++d)
    for (int side = 0; side < 2; ++side)
      for (const void* p : {static_cast<const void*>(migrant_out_[d][side].data()),
                            static_cast<const void*>(migrant_in_[d][side].data())})
        views.push_back(at(p));
  return views;
}

bool AtomUnit::reneighbor_plan_current() const {
  return !reneighbor_planned_.empty() && reneighbor_planned_ == reneighbor_views();
}

// What the work of a reneighboring program's phase captures, as it is when the phase is
// planned, and that work, part by part.
struct AtomUnit::ReneighborPhase {
  int rows, own_rows;  // capacities: atoms and ghosts, own atoms
  Vectors a_x, a_v, b_x, b_v, f;
  Vectors x_saved, v_saved, f_saved;
  Counters counters;
  Indices tiles;
  Count own_atoms = 0, all = 0;
  double dt, cut;
  Box box;
  // Migration moves the own atoms between (a_x, a_v) and the spares at each dimension of
  // more than one unit: whether they are in the spares once it has been along d.
  bool in_spares_after[3];
  std::vector<kodo::StepWork> parts;
};

// The step as seven phases (atom_unit.hpp). Tags: 6 + 2 d + toward, the migrants'; 12 + 2 d +
// toward, the ghosts' (apart from the plain steps' program, 2 d + toward: programs of one
// collection share its channels to other ranks).
void AtomUnit::plan_reneighbor(kodo::StepPlan& plan) {
  if (!setup_.reneighbor_program || setup_.list != ListKind::full)
    throw Error("minimd: the reneighboring program runs full lists only");
  const int q = plan.phase();
  ReneighborPhase phase;
  phase.rows = static_cast<int>(std::min(x_.extent(0), f_.extent(0)));
  if (q == 0) make_room_for_reneighbor_program(phase.rows);
  phase.own_rows =
      static_cast<int>(std::min({v_.extent(0), x_spare_.extent(0), v_spare_.extent(0),
                                 x_saved_.extent(0), static_cast<std::size_t>(neighbors_.atoms()),
                                 neighbor_count_.extent(0), static_cast<std::size_t>(phase.rows)}));
  phase.a_x = x_, phase.a_v = v_, phase.b_x = x_spare_, phase.b_v = v_spare_, phase.f = f_;
  phase.x_saved = x_saved_, phase.v_saved = v_saved_, phase.f_saved = f_saved_;
  phase.counters = counters_;
  phase.tiles = select_tiles_;
  phase.own_atoms = sized(own, phase.own_rows), phase.all = sized(all_atoms, phase.rows);
  phase.dt = setup_.problem.dt, phase.cut = setup_.problem.neighbor_cutoff();
  phase.box = box_;
  for (int d = 0, moves = 0; d < 3; ++d) {
    moves += self(d) ? 0 : 1;
    phase.in_spares_after[d] = moves % 2 == 1;
  }
  if (q == 0) plan_save_and_integrate(phase);
  if (q >= 1 && q <= 3 && !self(q - 1)) plan_migrants_in(plan, phase, q - 1);
  if (q <= 2) plan_migration(plan, phase, q);
  if (q == 3) plan_bin_order(phase);
  if (q >= 4 && !self(q - 4)) plan_ghosts_in(plan, phase, q - 4);
  if (q >= 3 && q <= 5) plan_borders(plan, phase, q - 3);
  if (q == 6) plan_lists_force_integrate(phase);
  plan.work([parts = std::move(phase.parts)](const Device& s) {
    for (const auto& part : parts) part(s);
  });
}

// Capacities for every array the step fills: bins, lists, spares and saved atoms made as
// large as the atoms' own arrays (`rows` atoms and ghosts).
void AtomUnit::make_room_for_reneighbor_program(int rows) {
  grow_flat(bin_of_, static_cast<std::size_t>(rows), "minimd::bin_of");
  grow_flat(bin_atoms_, static_cast<std::size_t>(rows), "minimd::bin_atoms");
  lists_for_rows();
  spares_for(static_cast<std::int64_t>(v_.extent(0)));
  const auto saved = static_cast<std::size_t>(v_.extent(0));
  if (x_saved_.extent(0) < saved) {
    auto alloc = [&](const char* label) {
      return Vectors(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), saved);
    };
    x_saved_ = alloc("minimd::x_saved");
    v_saved_ = alloc("minimd::v_saved");
    f_saved_ = alloc("minimd::f_saved");
  }
  reneighbor_planned_ = reneighbor_views();
  program_x_ = x_.data();
}

// Phase 0: the atoms saved (for undo_reneighbor_program), then the initial integrate.
void AtomUnit::plan_save_and_integrate(ReneighborPhase& phase) {
  const Vectors a_x = phase.a_x, a_v = phase.a_v, f = phase.f;
  const Vectors x_saved = phase.x_saved, v_saved = phase.v_saved, f_saved = phase.f_saved;
  const Counters counters = phase.counters;
  const Count own_atoms = phase.own_atoms;
  const double dt = phase.dt;
  phase.parts.push_back([=](const Device& s) {
    save_atoms(s, a_x, a_v, f, own_atoms, x_saved, v_saved, f_saved, counters);
    initial_integrate(s, a_x, a_v, f, own_atoms, dt);
  });
}

// The migrants along d arrive (phase d + 1).
void AtomUnit::plan_migrants_in(kodo::StepPlan& plan, ReneighborPhase& phase, int d) {
  const bool spares = phase.in_spares_after[d];
  const Vectors x = spares ? phase.b_x : phase.a_x, v = spares ? phase.b_v : phase.a_v;
  for (int side = 0; side < 2; ++side)
    plan.receive(migrant_in_[d][side], neighbour(d, side), 6 + 2 * d + 1 - side);
  const Payload ins[2] = {migrant_in_[d][0], migrant_in_[d][1]};
  const Payload packed[2] = {records(ins[0]), records(ins[1])};
  const Count counts[2] = {sized(arrived + 2 * d, records_in(ins[0], 6)),
                           sized(arrived + 2 * d + 1, records_in(ins[1], 6))};
  const int own_rows = phase.own_rows;
  const Count first = sized(staying, own_rows);
  const Counters counters = phase.counters;
  phase.parts.push_back([=](const Device& s) {
    count_arrivals(s, ins, d, own_rows, counters);
    unpack_atoms(s, packed, counts, x, v, first);
  });
}

// Migration along d (phase d).
void AtomUnit::plan_migration(kodo::StepPlan& plan, ReneighborPhase& phase, int d) {
  const bool spares = d > 0 && phase.in_spares_after[d - 1];
  const Vectors a_x = phase.a_x, a_v = phase.a_v, b_x = phase.b_x, b_v = phase.b_v;
  const Vectors x = spares ? b_x : a_x, v = spares ? b_v : a_v;
  const Count own_atoms = phase.own_atoms;
  if (self(d)) {
    const double length = setup_.length[d];
    phase.parts.push_back([=](const Device& s) { wrap(s, x, own_atoms, d, length); });
    return;
  }
  const Vectors x_stay = spares ? a_x : b_x, v_stay = spares ? a_v : b_v;
  for (int side = 0; side < 2; ++side)
    plan.send(migrant_out_[d][side], neighbour(d, side), 6 + 2 * d + side);
  const Indices lists[2] = {border_[d][0], border_[d][1]};
  const Payload outs[2] = {migrant_out_[d][0], migrant_out_[d][1]};
  const double shifts[2] = {shift(d, 0), shift(d, 1)};
  const double lo = box_.lo[d], hi = box_.hi[d];
  const Tally tally{migrant_count + 2 * d, migrant_count + 2 * d + 1, staying, true};
  const Counters counters = phase.counters;
  const Indices tiles = phase.tiles;
  phase.parts.push_back([=](const Device& s) {
    select_migrants(s, x, v, own_atoms, d, lo, hi, lists, outs, shifts, x_stay, v_stay, counters,
                    tiles, tally);
  });
}

// Phase 3: the own atoms in bin order, back in (a_x, a_v).
void AtomUnit::plan_bin_order(ReneighborPhase& phase) {
  const bool spares = phase.in_spares_after[2];
  const Vectors a_x = phase.a_x, a_v = phase.a_v, b_x = phase.b_x, b_v = phase.b_v;
  const Vectors x = spares ? b_x : a_x, v = spares ? b_v : a_v;
  const BinGrid grid = grid_;
  const double margin = interior_margin * phase.cut;
  const Indices bin_of = bin_of_, bin_start = bin_start_, bin_fill = bin_fill_, order = bin_atoms_;
  const Count own_atoms = phase.own_atoms;
  const Box box = phase.box;
  const Counters counters = phase.counters;
  phase.parts.push_back([=](const Device& s) {
    count_outside(s, x, own_atoms, box, counters);
    order_interior_first(s, x, own_atoms, grid, box, margin, bin_of, bin_start, bin_fill, order,
                         counters);
    if (spares) {
      gather_atoms(s, x, v, order, own_atoms, a_x, a_v);
    } else {
      gather_atoms(s, x, v, order, own_atoms, b_x, b_v);
      copy_atoms(s, b_x, b_v, own_atoms, a_x, a_v);
    }
    copy_count(s, counters, own, all_atoms);
  });
}

// The ghosts along d arrive (phase d + 4).
void AtomUnit::plan_ghosts_in(kodo::StepPlan& plan, ReneighborPhase& phase, int d) {
  for (int side = 0; side < 2; ++side)
    plan.receive(program_in_[d][side], neighbour(d, side), 12 + 2 * d + 1 - side);
  const Payload ins[2] = {program_in_[d][0], program_in_[d][1]};
  const int rooms[2] = {in_room_[d][0], in_room_[d][1]};
  const int rows = phase.rows;
  const Counters counters = phase.counters;
  phase.parts.push_back([=](const Device& s) { count_ghosts(s, ins, rooms, d, rows, counters); });
  const Vectors a_x = phase.a_x;
  const Payload records_in[2] = {records(ins[0]), records(ins[1])};
  const Count counts[2] = {sized(ghost_count + 2 * d, in_room_[d][0]),
                           sized(ghost_count + 2 * d + 1, in_room_[d][1])};
  const Count firsts[2] = {sized(ghost_first + 2 * d, 0), sized(ghost_first + 2 * d + 1, 0)};
  phase.parts.push_back([=](const Device& s) {  // both sides' rows in one kernel
    unpack_and_pack_positions(s, records_in, counts, firsts, a_x, {}, {0, 0}, d, {0, 0}, {});
  });
}

// Borders along d (phase d + 3).
void AtomUnit::plan_borders(kodo::StepPlan& plan, ReneighborPhase& phase, int d) {
  const Indices lists[2] = {border_[d][0], border_[d][1]};
  Payload outs[2];
  if (!self(d))
    for (int side = 0; side < 2; ++side) {
      plan.send(program_out_[d][side], neighbour(d, side), 12 + 2 * d + side);
      outs[side] = program_out_[d][side];
    }
  const double shifts[2] = {shift(d, 0), shift(d, 1)};
  const double below = box_.lo[d] + phase.cut, above = box_.hi[d] - phase.cut;
  const Tally tally{border_count + 2 * d, border_count + 2 * d + 1, staying, true};
  const Vectors a_x = phase.a_x;
  const Count all = phase.all;
  const Counters counters = phase.counters;
  const Indices tiles = phase.tiles;
  phase.parts.push_back([=](const Device& s) {
    select_borders(s, a_x, all, d, below, above, lists, outs, shifts, counters, tiles, tally);
  });
  if (!self(d)) return;
  // Images of the own atoms: from side s, those listed toward 1 - s.
  const int rooms[2] = {in_room_[d][0], in_room_[d][1]};
  const int rows = phase.rows;
  phase.parts.push_back([=](const Device& s) { count_ghosts(s, {}, rooms, d, rows, counters); });
  for (int side = 0; side < 2; ++side) {
    const Indices list = border_[d][1 - side];
    const Count count = sized(ghost_count + 2 * d + side, in_room_[d][side]);
    const Count first = sized(ghost_first + 2 * d + side, 0);
    const double by = shift(d, 1 - side);
    phase.parts.push_back([=](const Device& s) {
      copy_positions(s, a_x, list, count, d, by, first);
    });
  }
}

// Phase 6: lists, force, final integrate.
void AtomUnit::plan_lists_force_integrate(ReneighborPhase& phase) {
  const BinGrid grid = grid_;
  const Stencil stencil = stencil_;
  const Indices bin_of = bin_of_, bin_start = bin_start_, bin_fill = bin_fill_,
                bin_atoms_all = bin_atoms_;
  const NeighborList lists = neighbors_;
  const Indices list_sizes = neighbor_count_;
  const int width = neighbors_.capacity();
  const Potential pair = potential();
  const Vectors a_x = phase.a_x, a_v = phase.a_v, f = phase.f;
  const Count own_atoms = phase.own_atoms, all = phase.all;
  const int own_rows = phase.own_rows;
  const double cut = phase.cut, dt = phase.dt;
  const Counters counters = phase.counters;
  phase.parts.push_back([=](const Device& s) {
    bin_atoms(s, a_x, all, grid, bin_of, bin_start, bin_fill, bin_atoms_all);
    build_neighbors(s, a_x, own_atoms, grid, stencil, bin_of, bin_start, bin_atoms_all, cut,
                    ListKind::full, lists, list_sizes, counters);
    check_count(s, counters, most_neighbors, width);
    force_full(s, a_x, f, 0, own_atoms, own_rows, lists, list_sizes, pair, false, {});
    final_integrate(s, a_v, f, own_atoms, dt);
  });
}

bool AtomUnit::reneighbor_program_fitted() {
  Kokkos::deep_copy(counters_host_, counters_);
  check_lost("in migration", counters_host_(lost));
  return counters_host_(overflow) == 0;
}

void AtomUnit::take_reneighbor_counts() {
  const auto& c = counters_host_;
  nlocal_ = c(own);
  natoms_ = c(all_atoms);
  interior_ = c(interior);
  for (int d = 0; d < 3; ++d)
    for (int side = 0; side < 2; ++side) {
      first_[d][side] = c(ghost_first + 2 * d + side);
      count_[d][side] = c(ghost_count + 2 * d + side);
      border_count_[d][side] = c(border_count + 2 * d + side);
      if (self(d)) continue;
      migrants_[d][side] = c(migrant_count + 2 * d + side);
      arrivals_[d][side] = c(arrived + 2 * d + side);
    }
  grow_program_buffers();  // the counts are on the device already
}

void AtomUnit::undo_reneighbor_program() {
  const auto own_rows = std::pair<std::size_t, std::size_t>(0, static_cast<std::size_t>(nlocal_));
  Kokkos::deep_copy(compute_->space(), Kokkos::subview(x_, own_rows, Kokkos::ALL),
                    Kokkos::subview(x_saved_, own_rows, Kokkos::ALL));
  Kokkos::deep_copy(compute_->space(), Kokkos::subview(v_, own_rows, Kokkos::ALL),
                    Kokkos::subview(v_saved_, own_rows, Kokkos::ALL));
  Kokkos::deep_copy(compute_->space(), Kokkos::subview(f_, own_rows, Kokkos::ALL),
                    Kokkos::subview(f_saved_, own_rows, Kokkos::ALL));
  compute_->space().fence("minimd::undo_reneighbor_program");
  step_ = completed_ = step_ - 1;
}

}  // namespace minimd
