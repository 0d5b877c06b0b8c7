// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "atom_unit.hpp"

#include "atom_unit_parts.hpp"
#include "error.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

namespace minimd {
namespace {

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

}  // namespace

int room_for(std::int64_t atoms, const char* what) {
  const std::int64_t wanted = atoms + atoms / 5 + 64;
  if (wanted > INT_MAX)
    throw Error(text("minimd: a unit would hold ", atoms, " ", what,
                     ", more than its 32-bit indices allow: use more units "
                     "(--odf or ranks)"));
  return static_cast<int>(wanted);
}

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
  if (mean.size() != 3) throw Error("minimd: the mean velocity needs 3 components");
  subtract(compute_->space(), v_, nlocal_, mean[0], mean[1], mean[2]);
  Kokkos::deep_copy(compute_->space(), setup_sums_, 0.0);
  kinetic(compute_->space(), v_, nlocal_, setup_sums_);
  contribute(*compute_, setup_sums_, kodo::Sum{});
}

kodo::Task AtomUnit::start(double factor, std::vector<double> drift) {
  if (drift.size() != 3) throw Error("minimd: the drift needs 3 components");
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
  if (started_) throw Error("minimd: a unit is restored before it starts");
  if (x.extent(0) != v.extent(0))
    throw Error(text("minimd: unit ", index(), " was saved with ", x.extent(0), " positions and ",
                     v.extent(0), " velocities"));
  const auto n = static_cast<std::int64_t>(x.extent(0));
  // Saved atoms are input: each finite, and inside this unit's box.
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, x);
  auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  for (std::int64_t a = 0; a < n; ++a)
    for (int d = 0; d < 3; ++d)
      if (!std::isfinite(hv(a, d)) || !(hx(a, d) >= box_.lo[d] && hx(a, d) < box_.hi[d]))
        throw Error(text("minimd: a restored atom of unit ", index(), " at (", hx(a, 0), ", ",
                         hx(a, 1), ", ", hx(a, 2), ") with velocity (", hv(a, 0), ", ", hv(a, 1),
                         ", ", hv(a, 2), ") is not a finite atom inside the unit's box"));
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
    return Error(text("minimd: saved unit ", unit, " is at step ", found,
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
      throw Error(text("minimd: saved unit ", at, " holds ", a.x.extent(0), " positions and ",
                       a.v.extent(0), " velocities"));
    for (std::size_t i = 0; i < a.x.extent(0); ++i) {
      // Each saved atom inside its own unit's box (so in exactly one new box), finite.
      for (int d = 0; d < 3; ++d)
        if (!std::isfinite(a.v(i, d)) || !(a.x(i, d) >= old.lo[d] && a.x(i, d) < old.hi[d]))
          throw Error(text("minimd: saved unit ", at, " holds an atom at (", a.x(i, 0), ", ",
                           a.x(i, 1), ", ", a.x(i, 2), ") with velocity (", a.v(i, 0), ", ",
                           a.v(i, 1), ", ", a.v(i, 2), "): not a finite atom inside its box"));
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
    throw Error(text("minimd: a message of kind ", kind, ", dimension ", dim, ", side ", side,
                     " reached unit ", index()));
  if (step < step_ || step > step_ + 2)
    throw Error(text("minimd: ", kind_names[kind], " of step ", step, " reached unit ", index(),
                     " at step ", step_));
  if (arrived_.holds(Key{step, kind, dim, side}))
    throw Error(text("minimd: ", kind_names[kind], " of step ", step,
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

}  // namespace minimd
