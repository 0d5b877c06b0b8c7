// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// One cuboid of the periodic box: a kodo work unit owning the atoms inside it.
//
// A unit keeps its atoms in device views, rows [0, nlocal) its own and the ghosts
// (copies of other units' atoms within the neighbour cutoff of its box) after them.
// Ghosts come in three phases, x then y then z, each from the lower and the upper
// neighbour along that dimension; a phase forwards the ghosts of the phases before it,
// so edge and corner ghosts need no messages of their own (miniMD's scheme). A unit
// must be at least one neighbour cutoff wide along each dimension, so that every ghost
// comes from an adjacent unit (thinner units are refused). Along a dimension of one
// unit, the unit is its own neighbour: its ghosts are periodic images copied on the
// device, with no message.
//
// Each step (miniMD's order): initial integrate; every `reneighbor_every` steps,
// migration (atoms that left go to the adjacent unit, per dimension), a spatial sort
// of the own atoms, the ghost lists rebuilt (phases as above) and the neighbour lists
// rebuilt; on other steps the ghosts' positions are updated over the same lists (with
// full lists, while the force of the atoms whose lists hold no ghost already runs: the
// sort puts them first); force;
// with half lists and Newton's law across units, the ghosts' forces go back to their
// owners (phases z, y, x); final integrate; on thermo steps a reduction (kinetic
// energy, potential energy, virial, atom count, momentum) that the main program reads.
//
// Messages are entry-method calls carrying device views (or pinned host views with
// --comm host), of exactly the size sent: the receiver learns every count from them.
// Their entry method puts them in an inbox, by step, kind, dimension and side.
// Packing, unpacking and ghost copies run on the unit's communication stream, the rest
// on its compute stream. The unit's steps are a coroutine (kodo::Task, run): the step is
// written in miniMD's order, and where it needs a count from the device or its
// neighbours' data it awaits them (or, with --sync, fences), while the rank runs its
// other units; the rank never waits.
//
// The steps between reneighborings may instead run as a
// kodo::StepProgram (full lists, without --sync): every unit's work for a step recorded
// once and replayed as one device program per rank, with no host step per unit. A step
// is four program steps (phases): 0 initial integrate, pack x; 1 unpack x, pack y; 2
// unpack y, pack z; 3 unpack z, force, final integrate. A unit with a neighbour on
// another rank runs the force of its atoms with no ghost in their lists early in phase 1,
// while the x ghosts travel. Its kernels read the counts (own atoms, ghost rows,
// border lists) from the unit's Counters, written at each reneighboring, and its
// buffers have room to grow, so the program outlives the lists it serves; it is built
// again only when a view it captured is replaced (plan_current()).
//
// The reneighboring steps may run as a second program (plan_reneighbor,
// seven phases: 0 save the atoms, initial integrate, migrants along x; 1 and 2 those
// along y and z; 3 sort, borders along x; 4 and 5 along y and z; 6 lists, force, final
// integrate); its messages to other ranks go through the program's channels (tags 6-17,
// apart from the plain steps' 0-5). Its counts never
// leave the device: each kernel reads them from the Counters, messages carry theirs in
// element 0, and every kernel runs over a capacity kept with room to spare. A count that
// outgrows one sets counters(overflow); the host reads the counters back once the step
// is done and, should any unit of the job have overflowed, every unit takes back the
// atoms it saved and runs the step again unit by unit, which makes room
// (reneighbored_by_program, undo_reneighbor_program). On a thermo step either program
// runs, each unit then sums its thermo (sum_thermo) as the step would unit by unit.
//
// Buffers and message slots come in two by step parity. A neighbour cannot send the
// data of step n + 2 before it has ours of n + 1, which we send after our work on its
// data of n is done (same stream, earlier); so a buffer of step n may be written again,
// and a received view of step n dropped, once step n + 2 comes.

#include "kernels.hpp"
#include "options.hpp"

#include <kodo/kodo.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

namespace minimd {

using HostPayload = Kokkos::View<double*, Kokkos::SharedHostPinnedSpace>;

// Time the rank spends in each part of a step; measured in --sync mode only, where
// every part ends with a fence (otherwise the parts of different units overlap).
struct Timers {
  double force = 0, neighbor = 0, comm = 0;
};

// What every unit of a rank shares: the problem and how to run it.
struct Setup {
  Problem problem;
  double length[3];  // the periodic box
  ListKind list = ListKind::half_newton;
  bool host_staged = false;
  bool sync = false;
  bool step_program = false;  // plain steps run as a StepProgram (see AtomUnit)
  // Reneighboring steps run as a second StepProgram (see AtomUnit).
  bool reneighbor_program = false;
  double bin_size[3];
  Timers* timers = nullptr;
  bool thermo_step(std::int64_t step) const;  // 0, every thermo_every, the last
  // Rebuilds no lists: a step the program can run (a thermo step's sums taken after it).
  bool plain_step(std::int64_t step) const { return step % problem.reneighbor_every != 0; }
  // Rebuilds the lists: a step the reneighboring program can run (the same).
  bool reneighbor_step(std::int64_t step) const { return step % problem.reneighbor_every == 0; }
};

// The atoms the problem creates: the FCC lattice sites of the box (4 per unit cell), those
// in its lower fraction problem.slab in x only.
std::int64_t created_atoms(const Setup& setup);

// What a checkpoint holds of a unit: its step and its own atoms (rows 0 .. n - 1),
// saved between steps that rebuilt the lists, when every atom is inside its unit's box.
// M: the memory they are read into.
template <class M>
struct SavedAtoms {
  std::int64_t step = 0;
  Kokkos::View<double* [3], Kokkos::LayoutLeft, M> x, v;
  template <class State>
  void state(State& s) {
    s("step", step);
    s("x", x);
    s("v", v);
  }
};

class AtomUnit : public kodo::WorkUnit<AtomUnit> {
 public:
  // What checkpoints call this type (kodo/tasking/checkpoints/checkpoint.hpp).
  static constexpr const char* checkpoint_name = "minimd::AtomUnit";
  AtomUnit(const kodo::UnitInit<AtomUnit>& init, const Setup& setup);

  // Entry methods of the main program, in this order: each contributes one reduction
  // round (a std::vector<double>).
  void report_momentum();                       // sum of v over the unit's atoms
  void remove_drift(std::vector<double> mean);  // v -= mean; then sum of |v|^2
  // v = factor v + drift; ghosts, lists, force; thermo 0
  kodo::Task start(double factor, std::vector<double> drift);
  kodo::Task run(std::int64_t steps);  // thermo rounds as they come
  // After a restore, instead of start: ghosts, lists, force and thermo at the restored
  // step, the velocities as saved.
  kodo::Task resume();

  // Checkpoints (kodo's unit_state.hpp), between steps that rebuilt the lists.
  template <class State>
  void state(State& s) {
    SavedAtoms<Memory> atoms;
    if constexpr (!kodo::restoring<State>) atoms = own_atoms();
    atoms.state(s);
    if constexpr (kodo::restoring<State>) take_atoms(atoms.step, atoms.x, atoms.v);
  }
  // Restores this unit, before resume(), from the checkpoint's units at `step`: its own
  // saved atoms when the unit grid is the saved one, else the atoms inside its box from
  // every saved unit whose box overlaps it (another rank count or ODF).
  void restore(const kodo::SavedCollection& saved, std::int64_t step);
  int own_atom_count() const { return nlocal_; }

  // The step program (above): the plan of phase plan.phase() of a plain step.
  static constexpr int program_phases = 4;
  void plan_step(kodo::StepPlan& plan);
  // Whether every view the last plan_step captured is still the unit's own.
  bool plan_current() const;
  // The reneighboring program (above): the plan of phase plan.phase() of its step.
  static constexpr int reneighbor_phases = 7;
  void plan_reneighbor(kodo::StepPlan& plan);
  bool reneighbor_plan_current() const;
  // After the reneighboring program ran a step: reads its counts back; false where one
  // overflowed (then every unit of the job undoes the step). Throws where atoms were lost.
  bool reneighbor_program_fitted();
  // Then, on every unit: the counts it left (the lists as the host keeps them), with room
  // made for them; or the atoms as saved at the step's start, the step to run again.
  void take_reneighbor_counts();
  void undo_reneighbor_program();
  // The program runs the next `steps` steps of this unit (called before the run() that
  // runs them: messages of the step after may reach the unit during that run()).
  void program_runs(std::int64_t steps);
  // Entry method, after a program ran a thermo step: the step's thermo round, the sums a
  // thermo step unit by unit takes (its lists and positions, its velocities).
  void sum_thermo();

  // Entry methods of the neighbours: data of `step`, coming from the neighbour on
  // `side` (0 lower, 1 upper) of dimension `dim`.
  void receive(std::int64_t step, int kind, int dim, int side, Payload data);
  void receive_staged(std::int64_t step, int kind, int dim, int side, HostPayload data);

  // What travels between units.
  enum Kind : int { ghosts, forces, migrants, borders, kinds };

 private:
  using Key = std::tuple<std::int64_t, int, int, int>;  // step, kind, dim, side

  SavedAtoms<Memory> own_atoms() const;
  void take_atoms(std::int64_t step, const Vectors& x, const Vectors& v);
  // A step as a coroutine (atom_unit_steps.cpp): its start, then its parts, each
  // awaiting the counts and the neighbours' data it needs.
  kodo::Task setup_pass();
  void begin_step();
  kodo::Task step_body();
  kodo::Task migrate(int d);
  void sort_atoms();
  kodo::Task exchange_borders(int d);
  kodo::Task build_lists();
  kodo::Task update_ghosts(int d);
  void compute_force();
  kodo::Task return_forces(int d);
  void finish_step();
  // A thermo step's sums after its final integrate (thermo_'s energy and virial already
  // summed): kinetic energy, atoms, momentum; then the unit's contribution to the round.
  void contribute_thermo();
  void copy_own_images(int d);
  void pack_border_positions(Kind kind, int d);
  // The ghost positions that arrived along d (in[s]) into their rows, first_[d][s] on.
  void unpack_ghost_positions(const Payload (&in)[2], int d);
  // Whether this step's force starts, for the atoms with no ghost in their lists, before
  // the ghost update: full lists, a step that keeps the lists, and no energy to sum (one
  // kernel sums it). The same all through a step: interior_ changes only when the lists
  // are rebuilt.
  bool overlaps_ghosts() const {
    return setup_.list == ListKind::full && !reneighbor_ && !energy_ && interior_ > 0;
  }
  // Atoms this far inside the box, in units of the list cutoff, have no ghost in their
  // lists (the excess covers rounding in the distance test).
  static constexpr double interior_margin = 1.000001;
  Potential potential() const;

  bool self(int d) const { return (d == 0 ? units_.x : d == 1 ? units_.y : units_.z) == 1; }
  bool remote(int d, int toward) const;  // the neighbour toward a side is on another rank
  bool staged_to(int d, int toward) const;
  kodo::Index3 neighbour(int d, int toward) const;
  double shift(int d, int toward) const;  // periodic shift of what goes toward a side
  // The work enqueued on `stream` so far done (fenced with --sync); the counters read back.
  kodo::Task device_done(kodo::Stream& stream, const char* what);
  kodo::Task read_counters(kodo::Stream& stream, const char* what);
  // --sync: the time of each part of a step (Timers), less its waits for neighbours.
  struct Clock {
    double start, waited;
    double since() const;
  };
  Clock clock() const;
  void charge(double Timers::* part, const Clock& c);
  Payload& buffer(Kind kind, int d, int toward, std::size_t size);
  // The send buffers a selection scan may pack into as it lists (empty toward a side whose
  // data goes through the host), and whether it did: every count had room.
  void scan_buffers(Kind kind, int d, Payload (&outs)[2]) const;
  bool packed_by_scan(Kind kind, int d, std::size_t per_atom, const int (&count)[2]) const;
  void stage(const Payload& out, Kind kind, int d, int toward, std::size_t size);
  void send(Kind kind, int d, int toward, std::size_t size);
  void send_both(Kind kind, int d, std::size_t per_atom, const int (&count)[2]);
  void check_message(std::int64_t step, int kind, int dim, int side) const;
  kodo::Task arrivals(Kind kind, int d, std::size_t multiple, Payload (&in)[2]);
  void ensure_atoms(std::int64_t atoms, int keep);
  void ensure_locals(std::int64_t atoms, int keep);
  void spares_for(std::int64_t atoms);
  void lists_for_rows();
  void check_lost(const char* when, int lost);
  void publish_sizes();
  void grow_program_buffers();
  std::vector<std::uintptr_t> planned_views() const;
  std::vector<std::uintptr_t> reneighbor_views() const;
  // The reneighboring program's plan of a phase, part by part (atom_unit_programs.cpp).
  struct ReneighborPhase;
  void make_room_for_reneighbor_program(int rows);
  void plan_save_and_integrate(ReneighborPhase& phase);
  void plan_migrants_in(kodo::StepPlan& plan, ReneighborPhase& phase, int d);
  void plan_migration(kodo::StepPlan& plan, ReneighborPhase& phase, int d);
  void plan_bin_order(ReneighborPhase& phase);
  void plan_ghosts_in(kodo::StepPlan& plan, ReneighborPhase& phase, int d);
  void plan_borders(kodo::StepPlan& plan, ReneighborPhase& phase, int d);
  void plan_lists_force_integrate(ReneighborPhase& phase);
  Count sized(int slot, int bound) const { return {counters_, slot, bound}; }

  const Setup& setup_;
  kodo::Extent3 units_;
  Box box_;
  kodo::Stream* compute_;
  // The compute stream too when every dimension is one unit wide and lists are half
  // (with full lists the force overlaps the ghost copies).
  kodo::Stream* comm_;
  int parity() const { return static_cast<int>(step_ % 2); }

  // Atoms.
  Vectors x_, v_, f_, x_spare_, v_spare_;
  int nlocal_ = 0;
  int natoms_ = 0;  // own and ghosts
  // Ghost lists: border_[d][toward] lists what goes to the neighbour toward a side;
  // ghosts from the neighbour on `side` sit at rows [first_[d][side], + count_[d][side]).
  Indices border_[3][2];
  int border_count_[3][2] = {};
  int first_[3][2] = {}, count_[3][2] = {};
  // Scratch of the selection scans (as many rows as x_ has: the programs' fit too).
  Indices select_tiles_;
  // Bins and neighbour lists.
  BinGrid grid_;
  Stencil stencil_;
  Indices bin_of_, bin_start_, bin_fill_, bin_atoms_;
  NeighborList neighbors_;
  Indices neighbor_count_;
  int most_neighbors_ = 0;
  // Own atoms [0, interior_) have no ghost in their lists (full lists; else 0).
  int interior_ = 0;
  // Counts (read back by the host; read by the programs' kernels).
  Counters counters_;
  Kokkos::View<int*, Kokkos::SharedHostPinnedSpace> counters_host_;
  // Outgoing buffers by kind, parity, dimension and side; staging copies; the received
  // views still in use; and the data that arrived for a later phase.
  Payload out_[kinds][2][3][2];
  HostPayload staging_out_[kinds][2][3][2];
  Payload staged_in_[kinds][2][3][2];
  HostPayload held_staged_[kinds][2][3][2];
  Payload held_[kinds][2][3][2];
  kodo::Inbox<Key, Payload> arrived_;
  // The step program's view of the unit: ghost buffers by dimension and side with room for
  // out_room_ / in_room_ atoms after a count (element 0, which only the reneighboring
  // program uses), the same on both ends of a transfer (both grow with the same counts),
  // and what the last plan captured.
  Payload program_out_[3][2], program_in_[3][2];
  int out_room_[3][2] = {}, in_room_[3][2] = {};
  std::vector<std::uintptr_t> planned_;
  const double* program_x_ = nullptr;  // x_ as the programs read it
  // The reneighboring program's: migrants by dimension and side (a count, then room for
  // some atoms), the migrants sent and received at the last reneighboring, the atoms
  // saved at its step's start, what its last plan captured.
  Payload migrant_out_[3][2], migrant_in_[3][2];
  int migrants_[3][2] = {}, arrivals_[3][2] = {};
  Vectors x_saved_, v_saved_, f_saved_;
  Vectors thermo_forces_;  // sum_thermo's forces where f_saved_ has no room (never read)
  std::vector<std::uintptr_t> reneighbor_planned_;
  // Reductions.
  Payload thermo_;  // sum |v|^2, potential energy, virial, atoms, sum v (3)
  Payload setup_sums_;

  // Where the unit is.
  std::int64_t step_ = 0;       // the step being worked on (0: the start)
  std::int64_t completed_ = 0;  // steps whose device work is known done
  bool started_ = false;
  bool setup_pass_ = false;  // start or resume: no integration
  // Within one run(): the step after this one runs next, here, so the step's last
  // half-kick and the next one's start may be one pass (integrate_across), which
  // begin_step then skips (integrated_ahead_). Not where the thermo reads v in between.
  bool next_step_follows_ = false, integrated_ahead_ = false;
  bool in_step_ = false;  // a step's parts under way
  bool reneighbor_ = false, energy_ = false;
  // run() awaits the device when it is two steps ahead: a step's completion puts key 0.
  bool awaiting_device_ = false;
  kodo::Inbox<int, int> device_caught_up_;
  double waited_ = 0;  // --sync: seconds spent awaiting neighbours' data
};

}  // namespace minimd
