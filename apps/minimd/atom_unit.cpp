// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "atom_unit.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>

namespace minimd {
namespace {

const char* const kind_names[] = {"ghost positions", "ghost forces", "migrating atoms",
                                  "new ghosts"};
const char axis[] = {'x', 'y', 'z'};

// Park and Miller's minimal standard generator, as miniMD uses it (without masking).
double park_miller(std::int64_t& seed) {
  constexpr std::int64_t a = 16807, m = 2147483647, q = 127773, r = 2836;
  const std::int64_t k = seed / q;
  seed = a * (seed - k * q) - r * k;
  if (seed < 0) seed += m;
  return (1.0 / m) * static_cast<double>(seed);
}

// The box of unit `index` of a grid of `units`. Both neighbours compute a shared face the
// same way, so they agree on it exactly.
Box unit_box(const double length[3], const kodo::Extent3& units, const kodo::Index3& index) {
  const std::int64_t c[3] = {index.x, index.y, index.z};
  const std::int64_t u[3] = {units.x, units.y, units.z};
  Box box;
  for (int d = 0; d < 3; ++d) {
    box.lo[d] = length[d] * static_cast<double>(c[d]) / static_cast<double>(u[d]);
    box.hi[d] = c[d] + 1 == u[d]
                    ? length[d]
                    : length[d] * static_cast<double>(c[d] + 1) / static_cast<double>(u[d]);
  }
  return box;
}

// Rows 0 .. n - 1 of `into` from `xyz` (n triples, on the host).
void fill_rows(const Vectors& into, const std::vector<double>& xyz) {
  auto host = Kokkos::create_mirror_view(into);
  for (std::size_t a = 0; a < xyz.size() / 3; ++a)
    for (int d = 0; d < 3; ++d) host(a, d) = xyz[3 * a + d];
  Kokkos::deep_copy(into, host);
}

// A capacity with room to grow, within the int indices of a unit.
int room_for(std::int64_t atoms, const char* what) {
  const std::int64_t wanted = atoms + atoms / 5 + 64;
  if (wanted > INT_MAX)
    throw std::runtime_error(text("minimd: a unit would hold ", atoms, " ", what,
                                  ", more than its 32-bit indices allow: use more units "
                                  "(--odf or ranks)"));
  return static_cast<int>(wanted);
}

template <class V>
void grow(V& view, std::int64_t rows, int keep, const Device& space, const char* what) {
  if (static_cast<std::int64_t>(view.extent(0)) >= rows) return;
  V bigger(Kokkos::view_alloc(Kokkos::WithoutInitializing, view.label()), room_for(rows, what));
  if (keep > 0)
    Kokkos::deep_copy(space, Kokkos::subview(bigger, std::pair(0, keep), Kokkos::ALL),
                      Kokkos::subview(view, std::pair(0, keep), Kokkos::ALL));
  view = bigger;
}

template <class V>
void grow_flat(V& view, std::size_t size, const char* label) {
  if (view.size() >= size) return;
  view =
      V(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), size + size / 5 + 64);
}

double now() { return MPI_Wtime(); }

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

bool Setup::thermo_step(std::int64_t step) const {
  const auto every = problem.thermo_every;
  return step == 0 || step == problem.steps || (every > 0 && step % every == 0);
}

namespace {
// Half a lattice constant: the spacing of the FCC sites along each dimension.
double half_lattice(const Problem& p) { return 0.5 * std::pow(4.0 / p.density, 1.0 / 3.0); }
// Whether sites of x index i lie in the slab (--slab): the same test where sites are
// made and where they are counted.
bool in_slab(const Setup& s, std::int64_t i) {
  const Problem& p = s.problem;
  return p.slab >= 1 || half_lattice(p) * static_cast<double>(i) < p.slab * s.length[0];
}
}  // namespace

std::int64_t created_atoms(const Setup& setup) {
  const Problem& p = setup.problem;
  const std::int64_t all = p.atoms();  // checks the size
  if (p.slab >= 1) return all;
  std::int64_t rows = 0;  // of sites along x; half of each row's (y, z) sites are FCC
  for (std::int64_t i = 0; i < 2 * p.nx; ++i) rows += in_slab(setup, i);
  return rows * 2 * p.ny * p.nz;
}

AtomUnit::AtomUnit(const kodo::UnitInit<AtomUnit>& init, const Setup& setup)
    : WorkUnit(init), setup_(setup), units_(init.shape) {
  box_ = unit_box(setup.length, units_, init.index);
  auto& streams = this->streams();
  // The rank's units take its streams in turn (by local slot: moved units too).
  const auto slot = static_cast<std::size_t>(local_slot());
  compute_ = &streams.compute(slot);
  // One stream for a unit alone along every dimension, unless its force can overlap the
  // ghost update (full lists: see overlaps_ghosts).
  comm_ = self(0) && self(1) && self(2) && setup.list != ListKind::full
              ? compute_
              : &streams.communication(slot);

  // The FCC lattice sites inside the box, with miniMD's velocities: each a function of
  // the site's lattice coordinates only, whatever the decomposition.
  const Problem& p = setup.problem;
  const double half = half_lattice(p);
  const std::int64_t sites[3] = {2 * p.nx, 2 * p.ny, 2 * p.nz};
  std::int64_t from[3], to[3];
  for (int d = 0; d < 3; ++d) {
    from[d] = std::max<std::int64_t>(0, static_cast<std::int64_t>(box_.lo[d] / half) - 1);
    to[d] = std::min<std::int64_t>(sites[d] - 1, static_cast<std::int64_t>(box_.hi[d] / half) + 1);
  }
  std::vector<double> xs, vs;
  for (std::int64_t k = from[2]; k <= to[2]; ++k)
    for (std::int64_t j = from[1]; j <= to[1]; ++j)
      for (std::int64_t i = from[0]; i <= to[0]; ++i) {
        if ((i + j + k) % 2 != 0) continue;
        const double r[3] = {half * static_cast<double>(i), half * static_cast<double>(j),
                             half * static_cast<double>(k)};
        bool inside = true;
        for (int d = 0; d < 3; ++d) inside = inside && r[d] >= box_.lo[d] && r[d] < box_.hi[d];
        if (!inside || !in_slab(setup, i)) continue;
        // miniMD's seed (k * 2ny + j) * 2nx + i + 1, kept within the generator's range.
        std::int64_t seed = ((k * sites[1] + j) * sites[0] + i) % 2147483646 + 1;
        double vel[3];
        for (double& w : vel) {
          for (int m = 0; m < 5; ++m) park_miller(seed);
          w = park_miller(seed);
        }
        xs.insert(xs.end(), r, r + 3);
        vs.insert(vs.end(), vel, vel + 3);
      }
  const std::int64_t n = static_cast<std::int64_t>(xs.size() / 3);
  const int capacity = room_for(n, "atoms");
  auto alloc = [](const char* label) { return Kokkos::view_alloc(std::string(label)); };
  x_ = Vectors(alloc("minimd::x"), capacity);
  v_ = Vectors(alloc("minimd::v"), capacity);
  f_ = Vectors(alloc("minimd::f"), capacity);
  x_spare_ = Vectors(alloc("minimd::x_spare"), capacity);
  v_spare_ = Vectors(alloc("minimd::v_spare"), capacity);
  fill_rows(x_, xs);
  fill_rows(v_, vs);
  nlocal_ = natoms_ = static_cast<int>(n);
  for (auto& side : border_)
    for (auto& list : side) list = Indices(alloc("minimd::border"), capacity);

  const double cut = p.neighbor_cutoff();
  for (int d = 0; d < 3; ++d) {
    grid_.origin[d] = box_.lo[d] - cut;
    grid_.inverse_size[d] = 1.0 / setup.bin_size[d];
    grid_.count[d] = std::max(1, static_cast<int>(std::ceil((box_.hi[d] - box_.lo[d] + 2 * cut) /
                                                            setup.bin_size[d])));
  }
  stencil_ = make_stencil(grid_, cut);
  // Twice the bins: the order for the force's overlap sorts into two groups of bins.
  bin_start_ = Indices(alloc("minimd::bin_start"), 2 * grid_.total() + 1);
  bin_fill_ = Indices(alloc("minimd::bin_fill"), 2 * grid_.total());
  most_neighbors_ = setup.list == ListKind::full ? 128 : 64;
  counters_ = Counters(alloc("minimd::counters"), counter_slots);
  counters_host_ = decltype(counters_host_)(alloc("minimd::counters_host"), counter_slots);
  thermo_ = Payload(alloc("minimd::thermo"), 7);
  setup_sums_ = Payload(alloc("minimd::setup_sums"), 3);
  Kokkos::fence("minimd::AtomUnit");
}

// ---- the main program's entry methods ------------------------------------------------

void AtomUnit::report_momentum() {
  momentum(compute_->space(), v_, nlocal_, setup_sums_);
  contribute(*compute_, setup_sums_, kodo::Sum{});
}

void AtomUnit::remove_drift(std::vector<double> mean) {
  if (mean.size() != 3) throw std::runtime_error("minimd: the mean velocity needs 3 components");
  subtract(compute_->space(), v_, nlocal_, mean[0], mean[1], mean[2]);
  Kokkos::deep_copy(compute_->space(), setup_sums_, 0.0);
  kinetic(compute_->space(), v_, nlocal_, setup_sums_);
  contribute(*compute_, setup_sums_, kodo::Sum{});
}

kodo::Task AtomUnit::start(double factor, std::vector<double> drift) {
  if (drift.size() != 3) throw std::runtime_error("minimd: the drift needs 3 components");
  scale(compute_->space(), v_, nlocal_, factor);
  subtract(compute_->space(), v_, nlocal_, -drift[0], -drift[1], -drift[2]);
  step_ = 0;
  co_await setup_pass();
}

kodo::Task AtomUnit::resume() { co_await setup_pass(); }

// The step the unit is at (0, or a restored one): the ghosts and lists from scratch, the
// force, thermo; no integration.
kodo::Task AtomUnit::setup_pass() {
  if (comm_ != compute_) comm_->wait_for(*compute_);  // migration packs v on comm_
  started_ = true;
  setup_pass_ = true;
  reneighbor_ = true;
  energy_ = true;
  Kokkos::deep_copy(comm_->space(), counters_, 0);
  co_await step_body();
}

// ---- checkpoints ---------------------------------------------------------------------

SavedAtoms<Memory> AtomUnit::own_atoms() const {
  SavedAtoms<Memory> a;
  a.step = step_;
  const auto own = std::pair<std::size_t, std::size_t>(0, static_cast<std::size_t>(nlocal_));
  a.x = Vectors(Kokkos::view_alloc(Kokkos::WithoutInitializing, "minimd::saved_x"), nlocal_);
  a.v = Vectors(Kokkos::view_alloc(Kokkos::WithoutInitializing, "minimd::saved_v"), nlocal_);
  Kokkos::deep_copy(compute_->space(), a.x, Kokkos::subview(x_, own, Kokkos::ALL));
  Kokkos::deep_copy(compute_->space(), a.v, Kokkos::subview(v_, own, Kokkos::ALL));
  compute_->space().fence("minimd::own_atoms");
  return a;
}

void AtomUnit::take_atoms(std::int64_t step, const Vectors& x, const Vectors& v) {
  if (started_) throw std::runtime_error("minimd: a unit is restored before it starts");
  if (x.extent(0) != v.extent(0))
    throw std::runtime_error(text("minimd: unit ", index(), " was saved with ", x.extent(0),
                                  " positions and ", v.extent(0), " velocities"));
  const auto n = static_cast<std::int64_t>(x.extent(0));
  // Saved atoms are input: each finite, and inside this unit's box.
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, x);
  auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  for (std::int64_t a = 0; a < n; ++a)
    for (int d = 0; d < 3; ++d)
      if (!std::isfinite(hv(a, d)) || !(hx(a, d) >= box_.lo[d] && hx(a, d) < box_.hi[d]))
        throw std::runtime_error(text("minimd: a restored atom of unit ", index(), " at (",
                                      hx(a, 0), ", ", hx(a, 1), ", ", hx(a, 2), ") with velocity (",
                                      hv(a, 0), ", ", hv(a, 1), ", ", hv(a, 2),
                                      ") is not a finite atom inside the unit's box"));
  ensure_locals(n, 0);
  spares_for(n);
  comm_->space().fence("minimd::take_atoms");
  const auto own = std::pair<std::size_t, std::size_t>(0, static_cast<std::size_t>(n));
  Kokkos::deep_copy(compute_->space(), Kokkos::subview(x_, own, Kokkos::ALL), x);
  Kokkos::deep_copy(compute_->space(), Kokkos::subview(v_, own, Kokkos::ALL), v);
  compute_->space().fence("minimd::take_atoms");
  nlocal_ = natoms_ = static_cast<int>(n);
  step_ = completed_ = step;
}

void AtomUnit::restore(const kodo::SavedCollection& saved, std::int64_t step) {
  auto wrong_step = [&](std::int64_t found, const kodo::Index3& unit) {
    return std::runtime_error(text("minimd: saved unit ", unit, " is at step ", found,
                                   ", the checkpoint at step ", step));
  };
  if (saved.shape() == units_) {
    saved.read(index(), *this);
    if (step_ != step) throw wrong_step(step_, index());
    return;
  }
  // The atoms inside this box, from every saved unit whose box overlaps it.
  std::vector<double> xs, vs;
  for (std::int64_t l = 0; l < saved.shape().size(); ++l) {
    const kodo::Index3 at = saved.shape().delinear(l);
    const Box old = unit_box(setup_.length, saved.shape(), at);
    bool overlaps = true;
    for (int d = 0; d < 3; ++d)
      overlaps = overlaps && old.lo[d] < box_.hi[d] && box_.lo[d] < old.hi[d];
    if (!overlaps) continue;
    SavedAtoms<Kokkos::HostSpace> a;
    saved.read(at, a);
    if (a.step != step) throw wrong_step(a.step, at);
    if (a.x.extent(0) != a.v.extent(0))
      throw std::runtime_error(text("minimd: saved unit ", at, " holds ", a.x.extent(0),
                                    " positions and ", a.v.extent(0), " velocities"));
    for (std::size_t i = 0; i < a.x.extent(0); ++i) {
      // Each saved atom inside its own unit's box (so in exactly one new box), finite.
      for (int d = 0; d < 3; ++d)
        if (!std::isfinite(a.v(i, d)) || !(a.x(i, d) >= old.lo[d] && a.x(i, d) < old.hi[d]))
          throw std::runtime_error(text("minimd: saved unit ", at, " holds an atom at (", a.x(i, 0),
                                        ", ", a.x(i, 1), ", ", a.x(i, 2), ") with velocity (",
                                        a.v(i, 0), ", ", a.v(i, 1), ", ", a.v(i, 2),
                                        "): not a finite atom inside its box"));
      bool inside = true;
      for (int d = 0; d < 3; ++d)
        inside = inside && a.x(i, d) >= box_.lo[d] && a.x(i, d) < box_.hi[d];
      if (!inside) continue;
      for (int d = 0; d < 3; ++d) {
        xs.push_back(a.x(i, d));
        vs.push_back(a.v(i, d));
      }
    }
  }
  const auto n = static_cast<std::int64_t>(xs.size() / 3);
  Vectors x(Kokkos::view_alloc(Kokkos::WithoutInitializing, "minimd::restored_x"), n);
  Vectors v(Kokkos::view_alloc(Kokkos::WithoutInitializing, "minimd::restored_v"), n);
  fill_rows(x, xs);
  fill_rows(v, vs);
  take_atoms(step, x, v);
}

// ---- messages ------------------------------------------------------------------------

// Bytes from another unit are input: every field is checked before it is used.
void AtomUnit::check_message(std::int64_t step, int kind, int dim, int side) const {
  if (kind < 0 || kind >= kinds || dim < 0 || dim > 2 || side < 0 || side > 1)
    throw std::runtime_error(text("minimd: a message of kind ", kind, ", dimension ", dim,
                                  ", side ", side, " reached unit ", index()));
  if (step < step_ || step > step_ + 2)
    throw std::runtime_error(text("minimd: ", kind_names[kind], " of step ", step, " reached unit ",
                                  index(), " at step ", step_));
  if (arrived_.holds(Key{step, kind, dim, side}))
    throw std::runtime_error(text("minimd: ", kind_names[kind], " of step ", step,
                                  " arrived twice from one side at unit ", index()));
}

void AtomUnit::receive(std::int64_t step, int kind, int dim, int side, Payload data) {
  check_message(step, kind, dim, side);
  arrived_.put(Key{step, kind, dim, side}, data);
}

void AtomUnit::receive_staged(std::int64_t step, int kind, int dim, int side, HostPayload data) {
  check_message(step, kind, dim, side);
  // Onto the device, on the communication stream; the host copy is kept until the
  // slot comes round again (see atom_unit.hpp).
  const int p = static_cast<int>(step % 2);
  Payload& in = staged_in_[kind][p][dim][side];
  grow_flat(in, data.size(), "minimd::staged_in");
  auto part = Kokkos::subview(in, std::pair<std::size_t, std::size_t>(0, data.size()));
  Kokkos::deep_copy(comm_->space(), part, data);
  held_staged_[kind][p][dim][side] = data;
  arrived_.put(Key{step, kind, dim, side}, Payload(part));
}

kodo::Index3 AtomUnit::neighbour(int d, int toward) const {
  kodo::Index3 n = index();
  std::int64_t* c[3] = {&n.x, &n.y, &n.z};
  const std::int64_t u[3] = {units_.x, units_.y, units_.z};
  *c[d] = (*c[d] + (toward == 0 ? u[d] - 1 : 1)) % u[d];
  return n;
}

double AtomUnit::shift(int d, int toward) const {
  const std::int64_t c[3] = {index().x, index().y, index().z};
  const std::int64_t u[3] = {units_.x, units_.y, units_.z};
  if (toward == 0 && c[d] == 0) return setup_.length[d];
  if (toward == 1 && c[d] == u[d] - 1) return -setup_.length[d];
  return 0.0;
}

bool AtomUnit::remote(int d, int toward) const {
  return collection().owner(neighbour(d, toward)) != collection().owner(index());
}

bool AtomUnit::staged_to(int d, int toward) const {
  return setup_.host_staged && remote(d, toward);
}

Payload& AtomUnit::buffer(Kind kind, int d, int toward, std::size_t size) {
  Payload& out = out_[kind][parity()][d][toward];
  grow_flat(out, size, "minimd::out");
  return out;
}

void AtomUnit::scan_buffers(Kind kind, int d, Payload (&outs)[2]) const {
  const bool direct = !staged_to(d, 0) && !staged_to(d, 1);
  for (int toward = 0; toward < 2; ++toward)
    outs[toward] = direct ? out_[kind][parity()][d][toward] : Payload();
}

bool AtomUnit::packed_by_scan(Kind kind, int d, std::size_t per_atom, const int (&count)[2]) const {
  Payload outs[2];
  scan_buffers(kind, d, outs);
  return outs[0].size() >= per_atom * static_cast<std::size_t>(count[0]) &&
         outs[1].size() >= per_atom * static_cast<std::size_t>(count[1]);
}

// With --comm host toward another rank: the packed values also go to pinned host memory,
// on the communication stream (they are sent from there).
void AtomUnit::stage(const Payload& out, Kind kind, int d, int toward, std::size_t size) {
  if (!staged_to(d, toward)) return;
  HostPayload& host = staging_out_[kind][parity()][d][toward];
  grow_flat(host, out.size(), "minimd::staging");
  const auto first = std::pair<std::size_t, std::size_t>(0, size);
  Kokkos::deep_copy(comm_->space(), Kokkos::subview(host, first), Kokkos::subview(out, first));
}

// Sends the first `size` values of the packed buffer toward a side; the receiver gets
// them from the other side.
void AtomUnit::send(Kind kind, int d, int toward, std::size_t size) {
  const auto peer = unit(neighbour(d, toward));
  const int side = 1 - toward;
  if (staged_to(d, toward)) {
    peer.send<&AtomUnit::receive_staged>(
        step_, static_cast<int>(kind), d, side,
        HostPayload(Kokkos::subview(staging_out_[kind][parity()][d][toward],
                                    std::pair<std::size_t, std::size_t>(0, size))));
  } else {
    peer.send<&AtomUnit::receive>(
        step_, static_cast<int>(kind), d, side,
        Payload(Kokkos::subview(out_[kind][parity()][d][toward],
                                std::pair<std::size_t, std::size_t>(0, size))));
  }
}

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
      throw std::runtime_error(text("minimd: ", kind_names[kind], " of ", data.size(),
                                    " values reached unit ", index(), " along ", axis[d],
                                    ": not a whole number of ", multiple, "-value records"));
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
  throw std::runtime_error(text(
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
  pack_positions(comm_->space(), x_, border_[d], border_count_[d], d, shifts, outs);
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
  if (energy_) {
    kinetic(compute_->space(), v_, nlocal_, thermo_);
    Kokkos::deep_copy(compute_->space(), Kokkos::subview(thermo_, 3), static_cast<double>(nlocal_));
    momentum(compute_->space(), v_, nlocal_,
             Payload(Kokkos::subview(thermo_, std::pair<std::size_t, std::size_t>(4, 7))));
    contribute(*compute_, thermo_, kodo::Sum{});
  }
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
    throw std::runtime_error(text("minimd: ", nlocal_ - lo - hi - stay, " atom(s) of unit ",
                                  index(), " at step ", step_,
                                  " have a position that is not a finite number"));
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
  unpack_rows(comm_->space(), in, count_[d], first_[d], x_);
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
      throw std::runtime_error(text("minimd: ", in[side].size() / 3,
                                    " ghost positions reached unit ", index(), " along ", axis[d],
                                    " where ", count_[d][side], " were expected"));
  unpack_rows(comm_->space(), in, count_[d], first_[d], x_);
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
      throw std::runtime_error(text("minimd: ", in[side].size() / 3, " ghost forces reached unit ",
                                    index(), " along ", axis[d], " where ", border_count_[d][side],
                                    " were expected"));
    add_forces(comm_->space(), in[side], border_[d][side], border_count_[d][side], f_);
  }
  charge(&Timers::comm, c);
}

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

void AtomUnit::program_runs(std::int64_t steps) {
  if (in_step_ || completed_ != step_)
    throw std::runtime_error(text("minimd: unit ", index(), " runs the step program at step ",
                                  step_, " in the middle of a step of its own"));
  step_ += steps;
  completed_ = step_;
}

// A plain step as four phases (atom_unit.hpp). Everything the work reads is captured
// here, by value: the program replays it as recorded.
void AtomUnit::plan_step(kodo::StepPlan& plan) {
  if (!setup_.step_program || setup_.list != ListKind::full)
    throw std::runtime_error("minimd: the step program runs full lists only");
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
  std::vector<kodo::StepWork> parts;
  if (q == 0)
    parts.push_back([=](const Device& s) { initial_integrate(s, x, v, f, own_atoms, dt); });
  if (q >= 1 && !self(q - 1)) {  // the ghosts along q - 1, sent in the previous phase
    const int d = q - 1;
    for (int side = 0; side < 2; ++side) {
      plan.receive(program_in_[d][side], neighbour(d, side), 2 * d + 1 - side);
      const Payload in = records(program_in_[d][side]);
      const Count count = sized(ghost_count + 2 * d + side, in_room_[d][side]);
      const Count first = sized(ghost_first + 2 * d + side, 0);
      parts.push_back([=](const Device& s) { unpack_rows(s, in, count, x, first); });
    }
  }
  if (q <= 2) {  // the ghosts along q: images of own atoms, or positions for the neighbours
    const int d = q;
    for (int side = 0; side < 2; ++side) {
      const Indices list = border_[d][self(d) ? 1 - side : side];
      if (self(d)) {
        const Count count = sized(ghost_count + 2 * d + side, in_room_[d][side]);
        const Count first = sized(ghost_first + 2 * d + side, 0);
        const double by = shift(d, 1 - side);
        parts.push_back([=](const Device& s) { copy_positions(s, x, list, count, d, by, first); });
      } else {
        plan.send(program_out_[d][side], neighbour(d, side), 2 * d + side);  // toward `side`
        const Payload out = records(program_out_[d][side]);
        const Count count = sized(border_count + 2 * d + side, out_room_[d][side]);
        const double by = shift(d, side);
        parts.push_back([=](const Device& s) { pack_positions(s, x, list, count, d, by, out); });
      }
    }
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
  if (q == 3) {
    const Count first = split ? inner : Count(0);
    parts.push_back([=](const Device& s) {
      force_full(s, x, f, first, own_rows, rows, lists, list_sizes, pair, false, {});
      final_integrate(s, v, f, own_atoms, dt);
    });
  }
  plan.work([parts](const Device& s) {
    for (const auto& part : parts) part(s);
  });
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

// The step as seven phases (atom_unit.hpp). Tags: 6 + 2 d + toward, the migrants'; 12 + 2 d +
// toward, the ghosts' (apart from the plain steps' program, 2 d + toward: programs of one
// collection share its channels to other ranks).
void AtomUnit::plan_reneighbor(kodo::StepPlan& plan) {
  if (!setup_.reneighbor_program || setup_.list != ListKind::full)
    throw std::runtime_error("minimd: the reneighboring program runs full lists only");
  const int q = plan.phase();
  // Capacities: `rows` atoms and ghosts, `own_rows` own atoms, for every array the step
  // fills (bins, lists, spares and saved atoms made as large as the atoms' own arrays).
  const int rows = static_cast<int>(std::min(x_.extent(0), f_.extent(0)));
  if (q == 0) {
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
  const int own_rows =
      static_cast<int>(std::min({v_.extent(0), x_spare_.extent(0), v_spare_.extent(0),
                                 x_saved_.extent(0), static_cast<std::size_t>(neighbors_.atoms()),
                                 neighbor_count_.extent(0), static_cast<std::size_t>(rows)}));
  const Vectors a_x = x_, a_v = v_, b_x = x_spare_, b_v = v_spare_, f = f_;
  const Vectors x_saved = x_saved_, v_saved = v_saved_, f_saved = f_saved_;
  const Counters counters = counters_;
  const Indices tiles = select_tiles_;
  const Count own_atoms = sized(own, own_rows), all = sized(all_atoms, rows);
  const double dt = setup_.problem.dt, cut = setup_.problem.neighbor_cutoff();
  const Box box = box_;
  // Migration moves the own atoms between (a_x, a_v) and the spares at each dimension of
  // more than one unit: whether they are in the spares once it has been along d.
  auto in_spares_after = [&](int d) {
    int moves = 0;
    for (int e = 0; e <= d; ++e) moves += self(e) ? 0 : 1;
    return moves % 2 == 1;
  };
  std::vector<kodo::StepWork> parts;
  if (q == 0)
    parts.push_back([=](const Device& s) {
      save_atoms(s, a_x, a_v, f, own_atoms, x_saved, v_saved, f_saved, counters);
      initial_integrate(s, a_x, a_v, f, own_atoms, dt);
    });
  if (q >= 1 && q <= 3 && !self(q - 1)) {  // the migrants along q - 1 arrive
    const int d = q - 1;
    const bool spares = in_spares_after(d);
    const Vectors x = spares ? b_x : a_x, v = spares ? b_v : a_v;
    for (int side = 0; side < 2; ++side)
      plan.receive(migrant_in_[d][side], neighbour(d, side), 6 + 2 * d + 1 - side);
    const Payload ins[2] = {migrant_in_[d][0], migrant_in_[d][1]};
    const Payload packed[2] = {records(ins[0]), records(ins[1])};
    const Count counts[2] = {sized(arrived + 2 * d, records_in(ins[0], 6)),
                             sized(arrived + 2 * d + 1, records_in(ins[1], 6))};
    const Count first = sized(staying, own_rows);
    parts.push_back([=](const Device& s) {
      count_arrivals(s, ins, d, own_rows, counters);
      unpack_atoms(s, packed, counts, x, v, first);
    });
  }
  if (q <= 2) {  // migration along d = q
    const int d = q;
    const bool spares = d > 0 && in_spares_after(d - 1);
    const Vectors x = spares ? b_x : a_x, v = spares ? b_v : a_v;
    if (self(d)) {
      const double length = setup_.length[d];
      parts.push_back([=](const Device& s) { wrap(s, x, own_atoms, d, length); });
    } else {
      const Vectors x_stay = spares ? a_x : b_x, v_stay = spares ? a_v : b_v;
      for (int side = 0; side < 2; ++side)
        plan.send(migrant_out_[d][side], neighbour(d, side), 6 + 2 * d + side);
      const Indices lists[2] = {border_[d][0], border_[d][1]};
      const Payload outs[2] = {migrant_out_[d][0], migrant_out_[d][1]};
      const double shifts[2] = {shift(d, 0), shift(d, 1)};
      const double lo = box_.lo[d], hi = box_.hi[d];
      const Tally tally{migrant_count + 2 * d, migrant_count + 2 * d + 1, staying, true};
      parts.push_back([=](const Device& s) {
        select_migrants(s, x, v, own_atoms, d, lo, hi, lists, outs, shifts, x_stay, v_stay,
                        counters, tiles, tally);
      });
    }
  }
  if (q == 3) {  // the own atoms in bin order, back in (a_x, a_v)
    const bool spares = in_spares_after(2);
    const Vectors x = spares ? b_x : a_x, v = spares ? b_v : a_v;
    const BinGrid grid = grid_;
    const double margin = interior_margin * cut;
    const Indices bin_of = bin_of_, bin_start = bin_start_, bin_fill = bin_fill_,
                  order = bin_atoms_;
    parts.push_back([=](const Device& s) {
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
  if (q >= 4 && !self(q - 4)) {  // the ghosts along q - 4 arrive
    const int d = q - 4;
    for (int side = 0; side < 2; ++side)
      plan.receive(program_in_[d][side], neighbour(d, side), 12 + 2 * d + 1 - side);
    const Payload ins[2] = {program_in_[d][0], program_in_[d][1]};
    const int rooms[2] = {in_room_[d][0], in_room_[d][1]};
    parts.push_back([=](const Device& s) { count_ghosts(s, ins, rooms, d, rows, counters); });
    for (int side = 0; side < 2; ++side) {
      const Payload in = records(ins[side]);
      const Count count = sized(ghost_count + 2 * d + side, in_room_[d][side]);
      const Count first = sized(ghost_first + 2 * d + side, 0);
      parts.push_back([=](const Device& s) { unpack_rows(s, in, count, a_x, first); });
    }
  }
  if (q >= 3 && q <= 5) {  // borders along d = q - 3
    const int d = q - 3;
    const Indices lists[2] = {border_[d][0], border_[d][1]};
    Payload outs[2];
    if (!self(d))
      for (int side = 0; side < 2; ++side) {
        plan.send(program_out_[d][side], neighbour(d, side), 12 + 2 * d + side);
        outs[side] = program_out_[d][side];
      }
    const double shifts[2] = {shift(d, 0), shift(d, 1)};
    const double below = box_.lo[d] + cut, above = box_.hi[d] - cut;
    const Tally tally{border_count + 2 * d, border_count + 2 * d + 1, staying, true};
    parts.push_back([=](const Device& s) {
      select_borders(s, a_x, all, d, below, above, lists, outs, shifts, counters, tiles, tally);
    });
    if (self(d)) {  // images of the own atoms: from side s, those listed toward 1 - s
      const int rooms[2] = {in_room_[d][0], in_room_[d][1]};
      parts.push_back([=](const Device& s) { count_ghosts(s, {}, rooms, d, rows, counters); });
      for (int side = 0; side < 2; ++side) {
        const Indices list = border_[d][1 - side];
        const Count count = sized(ghost_count + 2 * d + side, in_room_[d][side]);
        const Count first = sized(ghost_first + 2 * d + side, 0);
        const double by = shift(d, 1 - side);
        parts.push_back([=](const Device& s) {
          copy_positions(s, a_x, list, count, d, by, first);
        });
      }
    }
  }
  if (q == 6) {  // lists, force, final integrate
    const BinGrid grid = grid_;
    const Stencil stencil = stencil_;
    const Indices bin_of = bin_of_, bin_start = bin_start_, bin_fill = bin_fill_,
                  bin_atoms_all = bin_atoms_;
    const NeighborList lists = neighbors_;
    const Indices list_sizes = neighbor_count_;
    const int width = neighbors_.capacity();
    const Potential pair = potential();
    parts.push_back([=](const Device& s) {
      bin_atoms(s, a_x, all, grid, bin_of, bin_start, bin_fill, bin_atoms_all);
      build_neighbors(s, a_x, own_atoms, grid, stencil, bin_of, bin_start, bin_atoms_all, cut,
                      ListKind::full, lists, list_sizes, counters);
      check_count(s, counters, most_neighbors, width);
      force_full(s, a_x, f, 0, own_atoms, own_rows, lists, list_sizes, pair, false, {});
      final_integrate(s, a_v, f, own_atoms, dt);
    });
  }
  plan.work([parts](const Device& s) {
    for (const auto& part : parts) part(s);
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
