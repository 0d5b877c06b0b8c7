// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A unit's steps (atom_unit_parts.hpp).
#include "atom_unit.hpp"
#include "atom_unit_parts.hpp"
#include "error.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <string>

namespace minimd {
namespace {

const char axis[] = {'x', 'y', 'z'};

template <class V>
void grow(V& view, std::int64_t rows, int keep, const Device& space, const char* what) {
  if (static_cast<std::int64_t>(view.extent(0)) >= rows) return;
  V bigger(Kokkos::view_alloc(Kokkos::WithoutInitializing, view.label()), room_for(rows, what));
  if (keep > 0)
    Kokkos::deep_copy(space, Kokkos::subview(bigger, std::pair(0, keep), Kokkos::ALL),
                      Kokkos::subview(view, std::pair(0, keep), Kokkos::ALL));
  view = bigger;
}

double now() { return MPI_Wtime(); }

}  // namespace

// ---- progress --------------------------------------------------------------------------
//
// A unit's steps are a coroutine (run): the step reads as miniMD's, and where it needs a
// count from the device or its neighbours' data it awaits them while the rank runs its
// other units. With --sync the device work is fenced instead of awaited.

double AtomUnit::Clock::since() const { return now() - start; }

AtomUnit::Clock AtomUnit::clock() const { return {setup_.sync ? now() : 0.0, waited_}; }

// --sync: a part of a step is charged its time less what it spent awaiting its
// neighbours (the rank ran other units meanwhile).
void AtomUnit::charge(double Timers::* part, const Clock& c) {
  if (setup_.sync) setup_.timers->*part += c.since() - (waited_ - c.waited);
}

kodo::Task AtomUnit::device_done(kodo::Stream& stream, const char* what) {
  if (setup_.sync) {
    stream.space().fence(what);
    co_return;
  }
  co_await when_done(stream);
}

kodo::Task AtomUnit::read_counters(kodo::Stream& stream, const char* what) {
  Kokkos::deep_copy(stream.space(), counters_host_, counters_);
  co_await device_done(stream, what);
}

// This step's data of `kind` along d from both sides, each checked to hold whole records
// of `multiple` doubles, and held while the kernels enqueued now read it.
kodo::Task AtomUnit::arrivals(Kind kind, int d, std::size_t multiple, Payload (&in)[2]) {
  for (int side = 0; side < 2; ++side) {
    const double t = setup_.sync ? now() : 0.0;
    Payload data = co_await arrived_.take(Key{step_, kind, d, side});
    if (setup_.sync) waited_ += now() - t;
    if (data.size() % multiple != 0 || data.size() / multiple > INT_MAX)
      throw Error(text("minimd: ", kind_names[kind], " of ", data.size(), " values reached unit ",
                       index(), " along ", axis[d], ": not a whole number of ", multiple,
                       "-value records"));
    held_[kind][parity()][d][side] = data;
    in[side] = data;
  }
}

void AtomUnit::send_both(Kind kind, int d, std::size_t per_atom, const int (&count)[2]) {
  for (int toward = 0; toward < 2; ++toward)
    send(kind, d, toward, per_atom * static_cast<std::size_t>(count[toward]));
}

void AtomUnit::check_lost(const char* when, int lost) {
  if (lost == 0) return;
  throw Error(text(
      "minimd: ", lost, " atom(s) lost ", when, " at step ", step_, " in unit ", index(), " (box ",
      box_.lo[0], "..", box_.hi[0], " x ", box_.lo[1], "..", box_.hi[1], " x ", box_.lo[2], "..",
      box_.hi[2],
      "): an atom moved farther than the next unit in one "
      "reneighboring interval, or its position is no longer finite; use a smaller time step or "
      "reneighbor more often"));
}

void AtomUnit::ensure_atoms(std::int64_t atoms, int keep) {
  grow(x_, atoms, keep, comm_->space(), "atoms and ghosts");
  grow(f_, atoms, 0, comm_->space(), "atoms and ghosts");
}

void AtomUnit::ensure_locals(std::int64_t atoms, int keep) {
  grow(x_, atoms, keep, comm_->space(), "atoms");
  grow(v_, atoms, keep, comm_->space(), "atoms");
  grow(f_, atoms, 0, comm_->space(), "atoms");
}

// The border lists and the selections' scratch for as many atoms as the unit has rows,
// the lists' contents kept (the plain steps' program packs from them): the reneighboring
// program lists atoms and ghosts in them, so planning it leaves the views the other
// program captured be.
void AtomUnit::lists_for_rows() {
  const std::size_t rows = x_.extent(0);
  for (auto& side : border_)
    for (auto& list : side)
      if (list.size() < rows) Kokkos::resize(Kokkos::WithoutInitializing, list, rows);
  grow_flat(select_tiles_, static_cast<std::size_t>(select_tiles(static_cast<int>(rows))),
            "minimd::select_tiles");
}

// Room in the spare arrays for `atoms` rows (the next compaction or sort lands there).
void AtomUnit::spares_for(std::int64_t atoms) {
  grow(x_spare_, atoms, 0, comm_->space(), "atoms");
  grow(v_spare_, atoms, 0, comm_->space(), "atoms");
}

Potential AtomUnit::potential() const {
  const Problem& p = setup_.problem;
  const double s2 = p.sigma * p.sigma;
  return Potential{p.force_cutoff * p.force_cutoff, p.epsilon, s2 * s2 * s2};
}

// Along a dimension the unit spans alone, its ghosts are images of its own atoms: those
// near the upper face appear below the lower one, and the other way round.
void AtomUnit::copy_own_images(int d) {
  copy_positions(comm_->space(), x_, border_[d][1], count_[d][0], d, shift(d, 1), first_[d][0]);
  copy_positions(comm_->space(), x_, border_[d][0], count_[d][1], d, shift(d, 0), first_[d][1]);
}

// The positions of the atoms on both border lists along d, packed (and staged) for the
// neighbours; `kind` is borders at a reneighboring, ghosts on other steps.
void AtomUnit::pack_border_positions(Kind kind, int d) {
  const double shifts[2] = {shift(d, 0), shift(d, 1)};
  Payload outs[2];
  for (int toward = 0; toward < 2; ++toward)
    outs[toward] = buffer(kind, d, toward, 3 * static_cast<std::size_t>(border_count_[d][toward]));
  const int(&counts)[2] = border_count_[d];
  unpack_and_pack_positions(comm_->space(), {}, {0, 0}, {0, 0}, x_, border_[d],
                            {counts[0], counts[1]}, d, shifts, outs);
  for (int toward = 0; toward < 2; ++toward)
    stage(outs[toward], kind, d, toward, 3 * static_cast<std::size_t>(border_count_[d][toward]));
}

kodo::Task AtomUnit::run(std::int64_t steps) {
  for (std::int64_t k = 0; k < steps; ++k) {
    while (step_ - completed_ >= 2) {  // keep the device at most two steps ahead
      awaiting_device_ = true;
      co_await device_caught_up_.take(0);
    }
    next_step_follows_ = k + 1 < steps;
    begin_step();
    co_await step_body();
  }
  next_step_follows_ = false;
}

// The step's start: integration, and with full lists on a plain step the force of the
// atoms without ghosts in their lists.
void AtomUnit::begin_step() {
  ++step_;
  reneighbor_ = step_ % setup_.problem.reneighbor_every == 0;
  energy_ = setup_.thermo_step(step_);
  if (integrated_ahead_)  // by the last step's integrate_across
    integrated_ahead_ = false;
  else
    initial_integrate(compute_->space(), x_, v_, f_, nlocal_, setup_.problem.dt);
  if (comm_ != compute_) comm_->wait_for(*compute_);
  if (overlaps_ghosts()) {
    // Atoms without ghosts in their lists need only the positions just computed: their
    // force runs while the ghosts are updated on the communication stream.
    if (setup_.sync) compute_->space().fence("minimd::initial_integrate (sync)");
    const double t_force = setup_.sync ? now() : 0;
    force_full(compute_->space(), x_, f_, 0, interior_, nlocal_, neighbors_, neighbor_count_,
               potential(), false, {});
    if (setup_.sync) {
      compute_->space().fence("minimd::force (sync)");
      setup_.timers->force += now() - t_force;
    }
  }
  if (reneighbor_)  // the counts a reneighboring adds to (or leaves at 0)
    Kokkos::deep_copy(comm_->space(),
                      Kokkos::subview(counters_, std::make_pair(0, static_cast<int>(to_lo))), 0);
}

kodo::Task AtomUnit::step_body() {
  in_step_ = true;
  if (reneighbor_) {
    for (int d = 0; d < 3; ++d) co_await migrate(d);
    sort_atoms();
    for (int d = 0; d < 3; ++d) co_await exchange_borders(d);
    co_await build_lists();
  } else {
    for (int d = 0; d < 3; ++d) co_await update_ghosts(d);
  }
  compute_force();
  if (setup_.list == ListKind::half_newton) {
    if (comm_ != compute_) comm_->wait_for(*compute_);
    for (int d = 2; d >= 0; --d) co_await return_forces(d);  // z, then y, then x
  }
  finish_step();
  in_step_ = false;
}

// Own atoms in bin order, so neighbours sit near each other in memory.
void AtomUnit::sort_atoms() {
  const Clock c = clock();
  if (comm_ != compute_) compute_->wait_for(*comm_);
  count_outside(compute_->space(), x_, nlocal_, box_, counters_);
  grow_flat(bin_of_, static_cast<std::size_t>(nlocal_), "minimd::bin_of");
  grow_flat(bin_atoms_, static_cast<std::size_t>(nlocal_), "minimd::bin_atoms");
  if (setup_.list == ListKind::full)
    order_interior_first(compute_->space(), x_, nlocal_, grid_, box_,
                         interior_margin * setup_.problem.neighbor_cutoff(), bin_of_, bin_start_,
                         bin_fill_, bin_atoms_, counters_);
  else
    bin_atoms(compute_->space(), x_, nlocal_, grid_, bin_of_, bin_start_, bin_fill_, bin_atoms_);
  spares_for(nlocal_);
  gather_atoms(compute_->space(), x_, v_, bin_atoms_, nlocal_, x_spare_, v_spare_);
  if (x_.data() == program_x_) {
    // The step program reads x_ (and v_) where they are: the sorted atoms go back.
    const auto own = std::pair<std::size_t, std::size_t>(0, static_cast<std::size_t>(nlocal_));
    Kokkos::deep_copy(compute_->space(), Kokkos::subview(x_, own, Kokkos::ALL),
                      Kokkos::subview(x_spare_, own, Kokkos::ALL));
    Kokkos::deep_copy(compute_->space(), Kokkos::subview(v_, own, Kokkos::ALL),
                      Kokkos::subview(v_spare_, own, Kokkos::ALL));
  } else {
    std::swap(x_, x_spare_);
    std::swap(v_, v_spare_);
  }
  natoms_ = nlocal_;
  if (comm_ != compute_) comm_->wait_for(*compute_);
  charge(&Timers::neighbor, c);
}

void AtomUnit::compute_force() {
  const Clock c = clock();
  if (comm_ != compute_) compute_->wait_for(*comm_);
  if (energy_) Kokkos::deep_copy(compute_->space(), thermo_, 0.0);
  if (overlaps_ghosts())  // the inner atoms' force ran with the step's start
    force_full(compute_->space(), x_, f_, interior_, nlocal_, nlocal_, neighbors_, neighbor_count_,
               potential(), false, {});
  else
    force(compute_->space(), x_, f_, nlocal_, natoms_, neighbors_, neighbor_count_, setup_.list,
          potential(), energy_,
          Payload(Kokkos::subview(thermo_, std::pair<std::size_t, std::size_t>(1, 3))));
  if (setup_.sync) compute_->space().fence("minimd::force (sync)");
  charge(&Timers::force, c);
}

void AtomUnit::finish_step() {
  if (comm_ != compute_) compute_->wait_for(*comm_);
  if (!setup_pass_ && next_step_follows_ && !energy_) {
    integrate_across(compute_->space(), x_, v_, f_, nlocal_, setup_.problem.dt);
    integrated_ahead_ = true;
  } else if (!setup_pass_) {
    final_integrate(compute_->space(), v_, f_, nlocal_, setup_.problem.dt);
  }
  setup_pass_ = false;
  if (energy_) contribute_thermo();
  // The step's device work: done once the compute stream gets here.
  if (setup_.sync) {
    compute_->space().fence("minimd::step (sync)");
    completed_ = step_;
  } else {
    when_done(*compute_, [this, s = step_] {
      completed_ = std::max(completed_, s);
      if (awaiting_device_) {
        awaiting_device_ = false;
        device_caught_up_.put(0, 0);
      }
    });
  }
}

void AtomUnit::contribute_thermo() {
  kinetic(compute_->space(), v_, nlocal_, thermo_);
  Kokkos::deep_copy(compute_->space(), Kokkos::subview(thermo_, 3), static_cast<double>(nlocal_));
  momentum(compute_->space(), v_, nlocal_,
           Payload(Kokkos::subview(thermo_, std::pair<std::size_t, std::size_t>(4, 7))));
  contribute(*compute_, thermo_, kodo::Sum{});
}

void AtomUnit::unpack_ghost_positions(const Payload (&in)[2], int d) {
  unpack_and_pack_positions(comm_->space(), in, {count_[d][0], count_[d][1]},
                            {first_[d][0], first_[d][1]}, x_, {}, {0, 0}, d, {0, 0}, {});
}

// Migration along d: atoms below the box go to the lower neighbour, atoms above it to
// the upper one (shifted across the periodic boundary); the rest are compacted.
kodo::Task AtomUnit::migrate(int d) {
  if (self(d)) {
    wrap(comm_->space(), x_, nlocal_, d, setup_.length[d]);
    co_return;
  }
  const Clock c = clock();
  // One scan lists who leaves and who stays, moves the stayers to the spare arrays and
  // packs the leavers where the send buffers have room (as the last reneighboring's left
  // them): then the count read back finds them packed, and they go at once.
  lists_for_rows();
  spares_for(nlocal_);
  Payload outs[2];
  scan_buffers(migrants, d, outs);
  const double shifts[2] = {shift(d, 0), shift(d, 1)};
  select_migrants(comm_->space(), x_, v_, nlocal_, d, box_.lo[d], box_.hi[d], border_[d], outs,
                  shifts, x_spare_, v_spare_, counters_, select_tiles_);
  co_await read_counters(*comm_, "minimd::migrate (sync)");
  const auto lo = counters_host_(to_lo), hi = counters_host_(to_hi),
             stay = counters_host_(Counter::staying);
  if (lo + hi + stay != nlocal_)
    throw Error(text("minimd: ", nlocal_ - lo - hi - stay, " atom(s) of unit ", index(),
                     " at step ", step_, " have a position that is not a finite number"));
  const int counts[2] = {static_cast<int>(lo), static_cast<int>(hi)};
  border_count_[d][0] = migrants_[d][0] = counts[0];
  border_count_[d][1] = migrants_[d][1] = counts[1];
  const bool packed = packed_by_scan(migrants, d, 6, counts);
  if (!packed) {  // larger buffers (kept for the next time), or staged through the host
    for (int toward = 0; toward < 2; ++toward)
      outs[toward] = buffer(migrants, d, toward, 6 * static_cast<std::size_t>(counts[toward]));
    pack_atoms(comm_->space(), x_, v_, border_[d], counts, d, shifts, outs);
    for (int toward = 0; toward < 2; ++toward)
      stage(outs[toward], migrants, d, toward, 6 * static_cast<std::size_t>(counts[toward]));
  }
  std::swap(x_, x_spare_);  // the stayers, moved by the scan
  std::swap(v_, v_spare_);
  nlocal_ = natoms_ = static_cast<int>(stay);
  if (!packed) co_await device_done(*comm_, "minimd::migrate pack (sync)");
  send_both(migrants, d, 6, border_count_[d]);
  Payload in[2];
  co_await arrivals(migrants, d, 6, in);
  const int arrived[2] = {static_cast<int>(in[0].size() / 6), static_cast<int>(in[1].size() / 6)};
  arrivals_[d][0] = arrived[0];
  arrivals_[d][1] = arrived[1];
  ensure_locals(static_cast<std::int64_t>(nlocal_) + arrived[0] + arrived[1], nlocal_);
  unpack_atoms(comm_->space(), in, {arrived[0], arrived[1]}, x_, v_, nlocal_);
  nlocal_ += arrived[0] + arrived[1];
  natoms_ = nlocal_;
  charge(&Timers::comm, c);
}

// Ghost lists along d: own atoms and earlier ghosts within the cutoff of a face go to the
// neighbour across it; what comes back is appended as ghosts.
kodo::Task AtomUnit::exchange_borders(int d) {
  const Clock c = clock();
  const double cut = setup_.problem.neighbor_cutoff();
  // As in migration: the scan packs the positions where the buffers have room.
  lists_for_rows();
  Payload outs[2];
  if (!self(d)) scan_buffers(borders, d, outs);
  const double shifts[2] = {shift(d, 0), shift(d, 1)};
  select_borders(comm_->space(), x_, natoms_, d, box_.lo[d] + cut, box_.hi[d] - cut, border_[d],
                 outs, shifts, counters_, select_tiles_);
  co_await read_counters(*comm_, "minimd::borders (sync)");
  if (d == 0) check_lost("in migration", counters_host_(lost));
  for (int toward = 0; toward < 2; ++toward)
    border_count_[d][toward] = static_cast<int>(counters_host_(toward == 0 ? to_lo : to_hi));
  if (self(d)) {
    // Images of our own atoms: those near the upper face appear below the lower one.
    count_[d][0] = border_count_[d][1];
    count_[d][1] = border_count_[d][0];
    first_[d][0] = natoms_;
    first_[d][1] = natoms_ + count_[d][0];
    ensure_atoms(static_cast<std::int64_t>(natoms_) + count_[d][0] + count_[d][1], natoms_);
    copy_own_images(d);
    natoms_ += count_[d][0] + count_[d][1];
    charge(&Timers::comm, c);
    co_return;
  }
  if (!packed_by_scan(borders, d, 3, border_count_[d])) {
    pack_border_positions(borders, d);
    co_await device_done(*comm_, "minimd::borders pack (sync)");
  }
  send_both(borders, d, 3, border_count_[d]);
  Payload in[2];
  co_await arrivals(borders, d, 3, in);
  count_[d][0] = static_cast<int>(in[0].size() / 3);
  count_[d][1] = static_cast<int>(in[1].size() / 3);
  ensure_atoms(static_cast<std::int64_t>(natoms_) + count_[d][0] + count_[d][1], natoms_);
  first_[d][0] = natoms_;
  first_[d][1] = natoms_ + count_[d][0];
  unpack_ghost_positions(in, d);
  natoms_ += count_[d][0] + count_[d][1];
  charge(&Timers::comm, c);
}

// The neighbour lists, built again larger while a row overflows.
kodo::Task AtomUnit::build_lists() {
  const Clock c = clock();
  const double cut = setup_.problem.neighbor_cutoff();
  if (comm_ != compute_) compute_->wait_for(*comm_);
  grow_flat(bin_of_, static_cast<std::size_t>(natoms_), "minimd::bin_of");
  grow_flat(bin_atoms_, static_cast<std::size_t>(natoms_), "minimd::bin_atoms");
  bin_atoms(compute_->space(), x_, natoms_, grid_, bin_of_, bin_start_, bin_fill_, bin_atoms_);
  for (;;) {
    if (neighbors_.atoms() < nlocal_ || neighbors_.capacity() < most_neighbors_) {
      const int rows = room_for(nlocal_, "atoms");
      neighbors_ = NeighborList("minimd::neighbors", rows, most_neighbors_);
      neighbor_count_ =
          Indices(Kokkos::view_alloc(Kokkos::WithoutInitializing, "minimd::neighbor_count"), rows);
    }
    build_neighbors(compute_->space(), x_, nlocal_, grid_, stencil_, bin_of_, bin_start_,
                    bin_atoms_, cut, setup_.list, neighbors_, neighbor_count_, counters_);
    co_await read_counters(*compute_, "minimd::neighbors (sync)");
    const auto most = counters_host_(most_neighbors);
    if (most <= neighbors_.capacity()) break;
    most_neighbors_ = static_cast<int>(most + most / 5 + 8);
  }
  // Set by the sort's order (full lists; 0 otherwise) and read back with the counters.
  interior_ = static_cast<int>(counters_host_(interior));
  publish_sizes();
  charge(&Timers::neighbor, c);
}

// Ghost positions along d, over the lists of the last reneighboring.
kodo::Task AtomUnit::update_ghosts(int d) {
  const Clock c = clock();
  if (self(d)) {
    copy_own_images(d);
    charge(&Timers::comm, c);
    co_return;
  }
  pack_border_positions(ghosts, d);
  co_await device_done(*comm_, "minimd::ghosts pack (sync)");
  send_both(ghosts, d, 3, border_count_[d]);
  Payload in[2];
  co_await arrivals(ghosts, d, 3, in);
  for (int side = 0; side < 2; ++side)
    if (in[side].size() != 3 * static_cast<std::size_t>(count_[d][side]))
      throw Error(text("minimd: ", in[side].size() / 3, " ghost positions reached unit ", index(),
                       " along ", axis[d], " where ", count_[d][side], " were expected"));
  unpack_ghost_positions(in, d);
  charge(&Timers::comm, c);
}

// Forces on ghosts back to their owners, along d.
kodo::Task AtomUnit::return_forces(int d) {
  const Clock c = clock();
  if (self(d)) {
    // Our ghosts from the upper side are images of border_[d][0] (toward the lower one).
    add_ghost_forces(comm_->space(), f_, first_[d][1], border_[d][0], count_[d][1]);
    add_ghost_forces(comm_->space(), f_, first_[d][0], border_[d][1], count_[d][0]);
    charge(&Timers::comm, c);
    co_return;
  }
  for (int side = 0; side < 2; ++side) {
    const int count = count_[d][side];
    Payload& out = buffer(forces, d, side, 3 * static_cast<std::size_t>(count));
    pack_rows(comm_->space(), f_, first_[d][side], count, out);
    stage(out, forces, d, side, 3 * static_cast<std::size_t>(count));
  }
  co_await device_done(*comm_, "minimd::reverse pack (sync)");
  send_both(forces, d, 3, count_[d]);  // the ghosts from a side go back toward it
  Payload in[2];
  co_await arrivals(forces, d, 3, in);
  for (int side = 0; side < 2; ++side) {
    // From the lower neighbour: forces on the copies of what we sent toward it.
    if (in[side].size() != 3 * static_cast<std::size_t>(border_count_[d][side]))
      throw Error(text("minimd: ", in[side].size() / 3, " ghost forces reached unit ", index(),
                       " along ", axis[d], " where ", border_count_[d][side], " were expected"));
    add_forces(comm_->space(), in[side], border_[d][side], border_count_[d][side], f_);
  }
  charge(&Timers::comm, c);
}

}  // namespace minimd
