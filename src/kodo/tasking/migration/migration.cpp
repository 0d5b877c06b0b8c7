// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Moving units (migration.hpp): the owners checked on every rank, the leaving units'
// state sent as records (state_records.hpp) over MPI, the collection's links closed and
// the new map installed; Collection's template rebuilds the units.
#include <kodo/tasking/migration/migration.hpp>

#include <kodo/backends/detail/tool_region.hpp>
#include <kodo/comm/detail/channel_end.hpp>
#include <kodo/comm/detail/transport_staging.hpp>
#include <kodo/core/detail/agree.hpp>
#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/tasking/migration/detail/held_state.hpp>
#include <kodo/tasking/migration/detail/migration_impl.hpp>
#include <kodo/tasking/migration/detail/migration_messages.hpp>
#include <kodo/tasking/migration/detail/node_view_route.hpp>
#include <kodo/tasking/migration/detail/ucx_view_route.hpp>
#include <kodo/tasking/scheduling/detail/watchdog.hpp>
#include <kodo/tasking/units/detail/state_records.hpp>

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <span>

namespace kodo::detail {
namespace {

class VectorSource final : public RecordSource {
 public:
  VectorSource(std::string origin, std::span<const std::byte> from, Runtime& runtime)
      : RecordSource(std::move(origin), from.size(), runtime), from_(from) {}

 private:
  void raw(void* into, std::uint64_t n) override {
    std::memcpy(into, from_.data() + at_, n);
    at_ += n;
  }
  std::span<const std::byte> from_;
  std::uint64_t at_ = 0;
};

std::uint64_t owners_hash(const std::vector<int>& owners) {
  std::uint64_t h = 0xcbf29ce484222325ULL ^ owners.size();
  for (int o : owners) h = (h ^ static_cast<std::uint32_t>(o)) * 0x100000001b3ULL;
  return h;
}

}  // namespace

Migration::Migration(Runtime& runtime, CollectionBase& collection, std::vector<int> owners)
    : impl_(std::make_unique<Impl>(runtime, collection)) {
  if (RuntimeAccess::running(runtime))
    throw Error(
        "migrate is collective: the main program of every rank calls it between run() calls, "
        "never an entry method");
  runtime.run();  // the job is quiet from here on
  Impl& m = *impl_;
  m.watching.emplace(RuntimeAccess::watchdog(runtime), "a migration (kodo::migrate)");
  m.started = MPI_Wtime();
  std::string problem;
  if (static_cast<std::int64_t>(owners.size()) != collection.shape().size())
    problem = cat("a unit map for collection ", collection.id(), " names ", owners.size(),
                  " owners; the collection has ", collection.shape().size(), " units");
  else
    for (std::size_t l = 0; l < owners.size() && problem.empty(); ++l)
      if (owners[l] < 0 || owners[l] >= runtime.size())
        problem = cat("a unit map for collection ", collection.id(), " gives unit ",
                      collection.shape().delinear(static_cast<std::int64_t>(l)), " to rank ",
                      owners[l], ", outside the job's ", runtime.size(), " rank(s)");
  agree_and_report(runtime.comm(), problem);
  std::uint64_t hash[2] = {owners_hash(owners), ~owners_hash(owners)}, most[2];
  KODO_MPI_CHECK(MPI_Allreduce(hash, most, 2, MPI_UINT64_T, MPI_MAX, runtime.comm()));
  if (most[0] != hash[0] || most[1] != hash[1])
    problem = cat("the ranks passed different unit maps for collection ", collection.id(),
                  " (every rank passes the same owners)");
  agree_and_report(runtime.comm(), problem);
  for (std::size_t l = 0; l < owners.size(); ++l)
    m.moved += owners[l] != m.before.owner(static_cast<std::int64_t>(l));
  m.after = UnitMap(std::move(owners), runtime.size(), m.before.epoch() + (m.moved > 0));
  m.old_locals = m.before.units_of(runtime.rank());
}

Migration::~Migration() = default;

bool Migration::moves_nothing() const { return impl_->moved == 0; }

// 4. The views: one buffer for the arriving units' (on the device where they are), each
// unit's place in it noted; the sizes of each arriving unit's views, by linear index.
std::map<std::int64_t, std::vector<std::uint64_t>> Migration::Impl::allocate_arriving_views(
    std::string& problem) {
  std::map<std::int64_t, std::vector<std::uint64_t>> sizes;
  try {
    std::uint64_t total = 0;
    for (auto& [linear, a] : arrivals) {
      const std::string origin =
          cat("the state of unit ", collection.shape().delinear(linear), " sent by rank ", a.from);
      auto& s = sizes[linear] = view_sizes(a.records, origin);
      std::uint64_t bytes = 0;
      for (const std::uint64_t b : s) {
        if (b > a.header.view_bytes - bytes)
          throw Error(cat(origin, ": its records name views of more than the ", a.header.view_bytes,
                          " bytes its header gives"));
        bytes += b;
      }
      if (s.size() != a.header.views || bytes != a.header.view_bytes)
        throw Error(cat(origin, ": its records name ", s.size(), " views of ", bytes,
                        " bytes; its header ", a.header.views, " of ", a.header.view_bytes));
      view_offsets[linear] = total;
      total += bytes;
    }
    if (total > 0)
      views =
          decltype(views)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kodo::migration views"),
                          total);
  } catch (...) {
    if (problem.empty()) problem = what_of_current();
  }
  agree_and_report(runtime.comm(), problem);
  return sizes;
}

// The views' data, in pieces of at most KODO_MIGRATION_PIECE_BYTES: between ranks of one
// node by the same-node route (node_view_route.hpp), else (or where a rank cannot offer
// slots for them) through UCX (ucx_view_route.hpp).
void Migration::Impl::move_views(const std::vector<Leaving>& leaving,
                                 const std::map<std::int64_t, std::vector<std::uint64_t>>& sizes,
                                 std::string& problem) {
  ChannelHost& host = RuntimeAccess::channel_host(runtime);
  const std::uint64_t piece_setting = host.transport_staging().piece_bytes();
  PieceWaits waits{RuntimeAccess::watchdog(runtime),
                   [this](std::int64_t linear) { return unit_name(linear); }};
  if (node_view_route_open(host, comm)) {
    std::vector<ViewPiece> out, in;
    cut_into_pieces(node_view_piece_bytes(piece_setting), leaving, sizes, out, in);
    views_on_node = move_views_on_node(host, runtime.streams(), comm, out, in, waits);
  }
  if (!views_on_node) {
    std::vector<ViewPiece> out, in;
    cut_into_pieces(piece_setting, leaving, sizes, out, in);
    move_views_through_ucx(runtime, comm, out, in, problem, waits);
  }
}

// The leaving units' views and the arriving units' places in `views`, in pieces of
// `piece_bytes`, numbered per peer.
void Migration::Impl::cut_into_pieces(
    std::uint64_t piece_bytes, const std::vector<Leaving>& leaving,
    const std::map<std::int64_t, std::vector<std::uint64_t>>& sizes,
    std::vector<ViewPiece>& outgoing, std::vector<ViewPiece>& incoming) {
  const MemoryKind kind = memory_kind<ExecutionSpace::memory_space>();
  std::map<int, std::uint64_t> numbers_out, numbers_in;
  const auto split = [piece_bytes](std::vector<ViewPiece>& list,
                                   std::map<int, std::uint64_t>& numbers, std::int64_t linear,
                                   std::uint64_t view, int peer, const Segment& whole,
                                   std::uint32_t tag_number) {
    for (std::uint64_t at = 0; at < whole.bytes; at += piece_bytes)
      list.push_back({linear, view, peer, numbers[peer]++,
                      Segment{static_cast<std::byte*>(whole.data) + at,
                              static_cast<std::size_t>(std::min<std::uint64_t>(piece_bytes,
                                                                               whole.bytes - at)),
                              whole.kind},
                      tag_number});
  };
  for (const Leaving& l : leaving)  // ascending unit numbers, as `sizes` below
    for (std::size_t v = 0; v < l.views.segments.size(); ++v)
      split(outgoing, numbers_out, l.header.linear, v, l.to, l.views.segments[v], l.tag_number);
  for (auto& [linear, s] : sizes) {
    const Arrival& a = arrivals.at(linear);
    std::uint64_t at = view_offsets[linear];
    for (std::size_t v = 0; v < s.size(); at += s[v], ++v)
      split(incoming, numbers_in, linear, v, a.from, Segment{views.data() + at, s[v], kind},
            a.tag_number);
  }
}

void Migration::exchange(const std::function<void(std::int64_t, StateWriter&)>& visit,
                         const std::function<std::uint64_t(std::int64_t)>& rounds) {
  static const std::string region = "kodo::migrate";
  const detail::ToolRegion here(region);
  Impl& m = *impl_;
  KODO_MPI_CHECK(MPI_Comm_dup(m.runtime.comm(), &m.comm));
  for (std::int64_t slot = 0; slot < m.collection.local_count(); ++slot)
    m.old_loads.push_back(m.collection.load(slot));
  std::vector<Impl::Leaving> leaving = m.measure_leaving(visit, rounds);
  m.trade_headers(leaving);
  m.trade_tag_numbers(leaving);
  // 2. Every receive is posted before any rank sends data, so sends never wait on a rank
  // that is itself sending.
  std::vector<MPI_Request> receives;
  std::vector<std::pair<std::int64_t, int>> chunks;  // each receive's unit and size
  for (auto& [linear, a] : m.arrivals) {
    post_chunks(m.comm, a.records, a.from, false, receives);
    for (std::uint64_t at = 0; at < a.records.size(); at += kChunkBytes)
      chunks.emplace_back(linear, static_cast<int>(std::min(kChunkBytes, a.records.size() - at)));
  }
  std::string problem;
  m.send_records(leaving, visit, problem);
  m.check_records_arrived(receives, chunks, problem);  // agrees on `problem` so far
  m.views_began = MPI_Wtime();
  const auto sizes = m.allocate_arriving_views(problem);
  m.buffer_allocated = MPI_Wtime();
  m.move_views(leaving, sizes, problem);
  for (const Impl::Leaving& l : leaving) m.view_bytes_sent += l.header.view_bytes;
  m.bytes_sent += m.view_bytes_sent;
  agree_and_report(m.runtime.comm(), problem);
  m.exchanged_at = MPI_Wtime();
  m.exchanged = true;
}

void Migration::install() {
  Impl& m = *impl_;
  const std::uint32_t id = m.collection.id();
  // Every end of the collection's links closes here; peers' ends close on their ranks,
  // and the units' constructors open them again toward the new owners.
  // Step programs let go of the links and mapped buffers first (their graphs hold them).
  for (const auto& [owner, let_go] : std::map(m.collection.before_migration)) let_go();
  ChannelRegistry& registry = RuntimeAccess::channel_host(m.runtime).channels();
  std::vector<ChannelEnd*> ends;
  for (ChannelEnd* e : registry.open)
    if (e->link.collection == id) ends.push_back(e);
  for (ChannelEnd* e : ends) e->close();
  // What the closed same-node ends leave goes once every rank has closed its ends: the
  // peers' buffers unmapped everywhere first, then the rings' memory freed.
  ChannelHost& host = RuntimeAccess::channel_host(m.runtime);
  KODO_MPI_CHECK(MPI_Barrier(m.runtime.comm()));
  reclaim_closed_links(registry, host.node(), id, 0);
  KODO_MPI_CHECK(MPI_Barrier(m.runtime.comm()));
  reclaim_closed_links(registry, host.node(), id, 1);
  // What peers said of the old links: their numbers and routes, per opening, start over.
  std::erase_if(registry.send_numbers, [&](const auto& kv) { return kv.first.collection == id; });
  std::erase_if(registry.openings, [&](const auto& kv) { return kv.first.collection == id; });
  std::erase_if(registry.notes, [&](const auto& kv) { return kv.first.first.collection == id; });
  std::vector<UnitLoad> loads;
  for (const std::int64_t linear : m.after.units_of(m.runtime.rank())) {
    if (const std::int64_t was = old_slot(linear); was >= 0) {
      loads.push_back(m.old_loads[static_cast<std::size_t>(was)]);
    } else {
      const Header& h = m.arrivals.at(linear).header;
      UnitLoad load;
      load.measured = h.measured;
      if (h.has_stated) load.stated = h.stated;
      loads.push_back(load);
    }
  }
  m.collection.install(m.after, std::move(loads));
}

std::int64_t Migration::old_slot(std::int64_t linear) const {
  const auto& old = impl_->old_locals;
  const auto it = std::lower_bound(old.begin(), old.end(), linear);
  if (it == old.end() || *it != linear) return -1;
  return it - old.begin();
}

std::uint64_t Migration::restore(std::int64_t linear,
                                 const std::function<void(StateReader&)>& visit) {
  Impl& m = *impl_;
  RuntimeAccess::watchdog(m.runtime).turned();  // the phase moves on, unit by unit
  Impl::Arrival& a = m.arrivals.at(linear);
  VectorSource source(cat("the state of unit ", m.collection.shape().delinear(linear),
                          " of collection ", m.collection.id(), " sent by rank ", a.from),
                      a.records, m.runtime);
  constexpr bool on_device =
      !Kokkos::SpaceAccessibility<Kokkos::HostSpace, ExecutionSpace::memory_space>::accessible;
  const std::uint64_t at = m.view_offsets.at(linear);
  source.views_apart(m.views.data() + at, a.header.view_bytes, on_device);
  StateReader reader(source);
  visit(reader);
  if (!source.at_end())
    throw Error(cat(source.origin(), " holds more fields than the unit's state() reads"));
  ArrivingRecords().swap(a.records);
  return a.header.rounds;
}

void Migration::copy(const std::function<void(StateWriter&)>& from,
                     const std::function<void(StateReader&)>& into) {
  HeldSink held;
  StateWriter writer(held);
  from(writer);
  const ExecutionSpace& space = impl_->runtime.streams().communication(0).space();
  HeldSource source(held.fields, space);
  StateReader reader(source);
  into(reader);
  space.fence("kodo::migrate copy");
  if (!source.at_end())
    throw Error("a rebuilt unit's state() reads fewer fields than the unit it replaces wrote");
}

void Migration::note_rebuild(double links, double constructors, double restores, double release) {
  double* parts = impl_->rebuild_parts;
  parts[0] = links, parts[1] = constructors, parts[2] = restores, parts[3] = release;
}

MigrationReport Migration::finish(const std::string& problem) {
  Impl& m = *impl_;
  agree_and_report(m.runtime.comm(), problem);
  MigrationReport r;
  r.moved = m.moved;
  r.epoch = m.after.epoch();
  const double now = MPI_Wtime();
  // A map that moves nothing has no exchange: every phase but the whole is 0.
  const bool exchanged = m.exchanged;
  const double* parts = m.rebuild_parts;
  double seconds[9] = {now - m.started,
                       exchanged ? m.views_began - m.started : 0,
                       exchanged ? m.buffer_allocated - m.views_began : 0,
                       exchanged ? m.exchanged_at - m.buffer_allocated : 0,
                       exchanged ? now - m.exchanged_at : 0,
                       exchanged ? parts[0] : 0,
                       exchanged ? parts[1] : 0,
                       exchanged ? parts[2] : 0,
                       exchanged ? parts[3] : 0};
  double slowest[9];
  std::uint64_t bytes[2] = {m.bytes_sent, m.view_bytes_sent}, all[2];
  KODO_MPI_CHECK(MPI_Allreduce(seconds, slowest, 9, MPI_DOUBLE, MPI_MAX, m.runtime.comm()));
  KODO_MPI_CHECK(MPI_Allreduce(bytes, all, 2, MPI_UINT64_T, MPI_SUM, m.runtime.comm()));
  r.seconds = slowest[0];
  r.phases = {slowest[1], slowest[2], slowest[3], slowest[4],
              slowest[5], slowest[6], slowest[7], slowest[8]};
  r.bytes = all[0];
  r.view_bytes = all[1];
  r.views_on_node = m.views_on_node && r.view_bytes > 0;
  return r;
}

}  // namespace kodo::detail

namespace kodo {

std::string describe_phases(const MigrationReport& report) {
  const MigrationPhases& p = report.phases;
  char line[320];
  std::snprintf(line, sizeof line,
                "records %.4f s, arrival buffer %.4f s, views %.1f MB in %.4f s%s, rebuild %.4f s "
                "(links %.4f, constructors %.4f, restores %.4f, release %.4f)",
                p.records, p.arrival_buffer, static_cast<double>(report.view_bytes) / 1e6, p.views,
                report.view_bytes == 0 ? ""
                : report.views_on_node ? " (same-node route)"
                                       : " (UCX)",
                p.rebuild, p.links, p.constructors, p.restores, p.release);
  return line;
}

}  // namespace kodo
