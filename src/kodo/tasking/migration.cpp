// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Moving units (migration.hpp): the owners checked on every rank, the leaving units'
// state sent as records (state_records.hpp) over MPI, the collection's links closed and
// the new map installed; Collection's template rebuilds the units.
#include <kodo/tasking/migration.hpp>

#include <kodo/backends/detail/tool_region.hpp>
#include <kodo/comm/detail/channel_end.hpp>
#include <kodo/comm/detail/transport_staging.hpp>
#include <kodo/comm/detail/ucx_transport.hpp>
#include <kodo/core/agree.hpp>
#include <kodo/tasking/detail/node_view_route.hpp>
#include <kodo/tasking/detail/state_records.hpp>

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>

namespace kodo::detail {
namespace {

constexpr int kHeaderTag = 1, kDataTag = 2, kFailedTag = 3;
constexpr std::uint64_t kChunkBytes = std::uint64_t{1} << 30;  // an MPI count is an int
constexpr std::uint64_t kMostStateBytes = std::uint64_t{1} << 44;
// Through UCX, the views' data goes in pieces of at most KODO_MIGRATION_PIECE_BYTES, at
// most this many pieces in flight each way per rank (transport_staging.hpp holds their
// slots; the same-node route has its own, node_view_route.cpp).
constexpr std::size_t kStagingSlots = 4;

// What travels ahead of a unit's records.
struct Header {
  std::int64_t linear;
  std::uint64_t rounds;  // its next reduction round
  double measured;       // its UnitLoad
  double stated;
  std::uint64_t has_stated;
  std::uint64_t bytes;       // of its records, the views' data left out
  std::uint64_t view_bytes;  // of its views' data, which travels apart
  std::uint64_t views;
};

// A unit's views travel as UCX tagged messages, device to device where they are on the
// device: tag bits 63..32 are 2^32 - 1, a number no channel link has (channel_end.hpp);
// bits 31..8 the unit's linear index, bits 7..0 the view's place in its state().
constexpr std::uint64_t kViewTag = std::uint64_t{0xFFFFFFFF} << 32;
constexpr std::int64_t kMostTaggedUnits = std::int64_t{1} << 24;
constexpr std::uint64_t kMostViews = 255;
std::uint64_t view_tag(std::int64_t linear, std::uint64_t view) {
  return kViewTag | static_cast<std::uint64_t>(linear) << 8 | view;
}

// The sizes of the views a unit's records (written with views apart) name, each record
// checked to lie inside them; throws kodo::Error naming `origin` otherwise.
std::vector<std::uint64_t> view_sizes(const std::vector<std::byte>& records,
                                      const std::string& origin) {
  std::vector<std::uint64_t> sizes;
  std::uint64_t at = 0;
  const auto take = [&](void* into, std::uint64_t n) {
    if (n > records.size() - at) throw Error(cat(origin, " ends inside a record"));
    std::memcpy(into, records.data() + at, n);
    at += n;
  };
  while (at < records.size()) {
    std::uint32_t name = 0, element = 0, rank = 0;
    std::uint8_t kind = 0;
    std::uint64_t bytes = 0;
    take(&name, 4);
    if (name > kNameLimit || name > records.size() - at)
      throw Error(cat(origin, ": a record has a malformed name"));
    at += name;
    take(&kind, 1);
    take(&element, 4);
    take(&rank, 4);
    if (rank > 8) throw Error(cat(origin, ": a record has rank ", rank));
    for (std::uint32_t d = 0; d < rank; ++d) {
      std::int64_t extent = 0;
      take(&extent, 8);
    }
    take(&bytes, 8);
    if (static_cast<FieldKind>(kind) == FieldKind::view) {
      sizes.push_back(bytes);
    } else {
      if (bytes > records.size() - at) throw Error(cat(origin, ": a record extends past its end"));
      at += bytes;
    }
  }
  return sizes;
}

class VectorOutput final : public RecordOutput {
 public:
  explicit VectorOutput(std::vector<std::byte>& to) : to_(to) {}
  void write(const void* data, std::uint64_t n) override {
    const auto* p = static_cast<const std::byte*>(data);
    to_.insert(to_.end(), p, p + n);
  }

 private:
  std::vector<std::byte>& to_;
};

class VectorSource final : public RecordSource {
 public:
  VectorSource(std::string origin, const std::vector<std::byte>& from, Runtime& runtime)
      : RecordSource(std::move(origin), from.size(), runtime), from_(from) {}

 private:
  void raw(void* into, std::uint64_t n) override {
    std::memcpy(into, from_.data() + at_, n);
    at_ += n;
  }
  const std::vector<std::byte>& from_;
  std::uint64_t at_ = 0;
};

// A staying unit's fields, as the unit it replaces wrote them: views kept alive where
// they are (state() may write a temporary), other fields copied.
struct HeldField {
  std::string name;
  FieldShape shape;
  const void* data;
  bool on_device;
  std::vector<std::byte> copy;  // a value's or a sequence's bytes
};
class HeldSink final : public StateSink {
 public:
  HeldSink() { keeps_views = true; }
  void keep(std::shared_ptr<const void> view) override { kept.push_back(std::move(view)); }
  void field(std::string_view name, const FieldShape& shape, const void* data,
             bool on_device) override {
    HeldField f{std::string(name), shape, data, on_device, {}};
    if (shape.kind != FieldKind::view) {
      const auto* bytes = static_cast<const std::byte*>(data);
      f.copy.assign(bytes, bytes + shape.bytes);
      f.data = nullptr;  // `copy` holds it: its address may move with the vector of fields
    }
    fields.push_back(std::move(f));
  }
  std::vector<HeldField> fields;
  std::vector<std::shared_ptr<const void>> kept;
};
class HeldSource final : public StateSource {
 public:
  HeldSource(const std::vector<HeldField>& fields, const ExecutionSpace& space)
      : fields_(fields), space_(space) {}
  FieldShape next(std::string_view name, FieldKind kind, std::uint32_t element_size,
                  std::uint32_t rank) override {
    if (at_ == fields_.size())
      throw Error(
          cat("a rebuilt unit's state() reads more fields than the unit it replaces "
              "wrote (field '",
              name, "')"));
    const HeldField& f = fields_[at_++];
    if (f.name != name || f.shape.kind != kind || f.shape.element_size != element_size ||
        f.shape.rank != rank)
      throw Error(cat("a rebuilt unit's state() reads field '", name,
                      "' where the unit it "
                      "replaces wrote '",
                      f.name, "' of another kind or size: state() must walk the same fields"));
    return f.shape;
  }
  void read(void* data, std::uint64_t n, bool on_device) override {
    const HeldField& f = fields_[at_ - 1];
    const void* from = f.data ? f.data : f.copy.data();
    if (n == 0 || from == data) return;
    const MemoryKind device = memory_kind<ExecutionSpace::memory_space>();
    copy_bytes(space_, Segment{data, n, on_device ? device : MemoryKind::host},
               Segment{const_cast<void*>(from), n, f.on_device ? device : MemoryKind::host}, n);
  }
  bool at_end() const { return at_ == fields_.size(); }

 private:
  const std::vector<HeldField>& fields_;
  std::size_t at_ = 0;
  const ExecutionSpace& space_;
};

std::uint64_t owners_hash(const std::vector<int>& owners) {
  std::uint64_t h = 0xcbf29ce484222325ULL ^ owners.size();
  for (int o : owners) h = (h ^ static_cast<std::uint32_t>(o)) * 0x100000001b3ULL;
  return h;
}

}  // namespace

struct Migration::Impl {
  Runtime& runtime;
  CollectionBase& collection;
  MPI_Comm comm = MPI_COMM_NULL;
  UnitMap before, after;
  std::vector<std::int64_t> old_locals;
  double started = 0;
  // When exchange()'s views began, their buffer was allocated, and exchange() ended.
  double views_began = 0, buffer_allocated = 0, exchanged_at = 0;
  bool exchanged = false;
  bool views_on_node = false;    // the views went by the same-node route
  double rebuild_parts[4] = {};  // links, constructors, restores, release (note_rebuild)
  std::uint64_t bytes_sent = 0, view_bytes_sent = 0;
  std::int64_t moved = 0;
  // Units arriving here: their old owner, header and records.
  struct Arrival {
    int from;
    Header header{};
    std::vector<std::byte> records;
  };
  std::map<std::int64_t, Arrival> arrivals;                      // by linear index
  Kokkos::View<std::byte*, ExecutionSpace::memory_space> views;  // arriving units' views
  std::map<std::int64_t, std::uint64_t> view_offsets;            // ... each unit's, by linear
  std::vector<UnitLoad> old_loads;                               // by old slot

  Impl(Runtime& r, CollectionBase& c)
      : runtime(r), collection(c), before(c.map()), after(c.map()) {}
  ~Impl() {
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};

namespace {

// The pieces through UCX, copied through a few slots of this rank's kept staging memory
// each way (transport_staging.hpp: a peer's UCX may keep memory it reached mapped, so it
// must never be memory that is freed afterwards; device memory where UCX moves it, else
// pinned host memory: host-staged). Every rank serves its
// pieces in one order, the same on all ranks (unit, view, piece), filling each free slot
// with its first piece not yet served: the first piece not done anywhere is then in flight
// on both of its ranks, so the exchange cannot stall. The pieces of one view share its
// tag: UCX matches one sender's messages of a tag in order. A failure is agreed on by the
// caller (`problem`); one the job cannot go on from is fatal.
void move_views_through_ucx(Runtime& rt, MPI_Comm comm, const std::vector<ViewPiece>& out,
                            const std::vector<ViewPiece>& in, std::string& problem) {
  struct Piece : ViewPiece {
    void* posted = nullptr;
    bool skipped = false, done = false;
  };
  std::vector<Piece> outgoing, incoming;
  for (const ViewPiece& p : out) outgoing.push_back(Piece{p});
  for (const ViewPiece& p : in) incoming.push_back(Piece{p});
  const int rank = rt.rank();
  const MemoryKind kind = memory_kind<ExecutionSpace::memory_space>();
  UcxTransport& transport = RuntimeAccess::channel_host(rt).transport();
  const MemoryKind slot_kind = transport.carries(kind) ? kind : MemoryKind::host;
  struct Slot {
    std::byte* at;
    std::size_t piece = 0;
    bool busy = false, arrived = false;
  };
  std::vector<Slot> send_slots, receive_slots;
  {
    std::uint64_t slot_bytes = 0;
    for (const auto* list : {&outgoing, &incoming})
      for (const Piece& p : *list) slot_bytes = std::max<std::uint64_t>(slot_bytes, p.data.bytes);
    const std::size_t sends = std::min<std::size_t>(kStagingSlots, outgoing.size());
    const std::size_t receives = std::min<std::size_t>(kStagingSlots, incoming.size());
    std::byte* staging = nullptr;
    try {
      if (sends + receives > 0)
        staging = RuntimeAccess::channel_host(rt).transport_staging().at_least(
            static_cast<std::size_t>(slot_bytes * (sends + receives)),
            slot_kind == MemoryKind::host);
    } catch (...) {
      problem = what_of_current();
    }
    agree_and_report(rt.comm(), problem);
    for (std::size_t s = 0; s < sends + receives; ++s)
      (s < sends ? send_slots : receive_slots).push_back(Slot{staging + s * slot_bytes});
  }

  const ExecutionSpace& space = rt.streams().communication(0).space();
  std::size_t next_out = 0, next_in = 0, done_out = 0, done_in = 0, stand_ins = 0;
  const auto failed = [&](const char* what, ucs_status_t status) noexcept {
    if (!problem.empty()) return;
    try {
      problem = cat(what, " (UCX: ", ucs_status_string(status), ")");
    } catch (...) {
      problem = "kodo: a moving unit's view could not be moved";
    }
  };
  // A send that fails as it is made sends an empty message with its tag in its place, so
  // the receiver's next receive of that tag still matches the right piece (it then fails
  // on the length); if that fails too, this rank sends the peer nothing more and tells it
  // from which piece on (an MPI message), and the peer stops waiting for those.
  std::map<int, std::uint64_t> stopped_at;  // peers sent nothing more, from that piece on
  std::deque<std::uint64_t> notice_numbers;
  std::vector<MPI_Request> notices;
  bool issuing = false, refused = false;  // a send under way, and whether it failed at once
  const auto send = [&](int peer, std::uint64_t tag, const Segment& data,
                        UcxTransport::TagDone done) {
    issuing = true;
    refused = false;
    try {
      transport.tag_send(peer, tag, data, [&, done](ucs_status_t status, std::size_t n) {
        if (issuing && status != UCS_OK) refused = true;
        done(status, n);
      });
    } catch (...) {
      refused = true;
      done(UCS_ERR_NO_RESOURCE, 0);
    }
    issuing = false;
    return !refused;
  };
  std::vector<Slot*> filled;
  try {
    while (done_out < outgoing.size() || done_in < incoming.size() || stand_ins > 0) {
      for (Slot& slot : receive_slots) {
        while (!slot.busy && next_in < incoming.size()) {
          const std::size_t i = next_in++;
          Piece& p = incoming[i];
          if (p.skipped) {
            ++done_in;
            continue;
          }
          slot.busy = true;
          slot.piece = i;
          p.posted = transport.tag_recv(
              view_tag(p.linear, p.view), Segment{slot.at, p.data.bytes, slot_kind},
              [&, i, s = &slot](ucs_status_t status, std::size_t length) {
                Piece& q = incoming[i];
                q.posted = nullptr;
                if (status == UCS_OK && length == q.data.bytes) {
                  s->arrived = true;
                  return;
                }
                failed(status == UCS_OK ? "a piece of a moving unit's view came with another size"
                                        : "a piece of a moving unit's view did not arrive",
                       status);
                q.done = true;
                s->busy = false;
                ++done_in;
              });
        }
      }
      filled.clear();
      for (Slot& slot : send_slots) {
        while (next_out < outgoing.size() && stopped_at.count(outgoing[next_out].peer)) {
          ++next_out;  // a peer this rank sends nothing more to
          ++done_out;
        }
        if (slot.busy || next_out == outgoing.size()) continue;
        slot.busy = true;
        slot.piece = next_out++;
        const Piece& p = outgoing[slot.piece];
        copy_bytes(space, Segment{slot.at, p.data.bytes, slot_kind}, p.data, p.data.bytes);
        filled.push_back(&slot);
      }
      if (!filled.empty()) space.fence("kodo::migrate staging out");
      for (Slot* slot : filled) {
        const Piece& p = outgoing[slot->piece];
        if (stopped_at.count(p.peer)) {
          slot->busy = false;
          ++done_out;
          continue;
        }
        const std::uint64_t tag = view_tag(p.linear, p.view);
        const bool issued = send(p.peer, tag, Segment{slot->at, p.data.bytes, slot_kind},
                                 [&, slot](ucs_status_t status, std::size_t) {
                                   slot->busy = false;
                                   ++done_out;
                                   if (status != UCS_OK)
                                     failed("a moving unit's view could not be sent", status);
                                 });
        if (issued) continue;
        ++stand_ins;
        if (send(p.peer, tag, Segment{nullptr, 0, MemoryKind::host},
                 [&](ucs_status_t, std::size_t) { --stand_ins; }))
          continue;
        stopped_at[p.peer] = p.number;
        notice_numbers.push_back(p.number);
        notices.emplace_back();
        check_mpi(MPI_Isend(&notice_numbers.back(), 1, MPI_UINT64_T, p.peer, kFailedTag, comm,
                            &notices.back()),
                  "MPI_Isend");
      }
      transport.progress();
      filled.clear();
      for (Slot& slot : receive_slots)
        if (slot.arrived) {
          const Piece& p = incoming[slot.piece];
          copy_bytes(space, p.data, Segment{slot.at, p.data.bytes, slot_kind}, p.data.bytes);
          filled.push_back(&slot);
        }
      if (!filled.empty()) space.fence("kodo::migrate staging in");
      for (Slot* slot : filled) {
        incoming[slot->piece].done = true;
        slot->arrived = slot->busy = false;
        ++done_in;
      }
      // A sender's notice: nothing more comes from it, from that piece on.
      int notice = 0;
      MPI_Status status;
      check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, kFailedTag, comm, &notice, &status), "MPI_Iprobe");
      if (!notice) continue;
      std::uint64_t from = 0;
      const int sender = status.MPI_SOURCE;
      check_mpi(MPI_Recv(&from, 1, MPI_UINT64_T, sender, kFailedTag, comm, MPI_STATUS_IGNORE),
                "MPI_Recv");
      failed("a rank could not send a moving unit's views", UCS_ERR_CANCELED);
      for (std::size_t i = 0; i < incoming.size(); ++i) {
        Piece& p = incoming[i];
        if (p.peer != sender || p.number < from || p.done) continue;
        if (p.posted)
          transport.cancel(p.posted);  // nothing matched it: its completion runs, cancelled
        else if (i >= next_in)
          p.skipped = true;
      }
    }
  } catch (...) {
    // Receives posted into this frame and sends from the slots are under way: the job
    // cannot go on (a device or MPI failure in the middle of moving the views).
    fatal(cat("moving units' views failed on rank ", rank, ": ", what_of_current()));
  }
  check_mpi(MPI_Waitall(static_cast<int>(notices.size()), notices.data(), MPI_STATUSES_IGNORE),
            "MPI_Waitall");
  // Peers may still need this rank's progress to finish theirs.
  MPI_Request all;
  check_mpi(MPI_Ibarrier(rt.comm(), &all), "MPI_Ibarrier");
  for (int over = 0; !over; check_mpi(MPI_Test(&all, &over, MPI_STATUS_IGNORE), "MPI_Test"))
    transport.progress();
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
  check_mpi(MPI_Allreduce(hash, most, 2, MPI_UINT64_T, MPI_MAX, runtime.comm()), "MPI_Allreduce");
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

void Migration::exchange(const std::function<void(std::int64_t, StateWriter&)>& visit,
                         const std::function<std::uint64_t(std::int64_t)>& rounds) {
  static const std::string region = "kodo::migrate";
  const detail::ToolRegion here(region);
  Impl& m = *impl_;
  Runtime& rt = m.runtime;
  const int rank = rt.rank();
  check_mpi(MPI_Comm_dup(rt.comm(), &m.comm), "MPI_Comm_dup");
  for (std::int64_t slot = 0; slot < m.collection.local_count(); ++slot)
    m.old_loads.push_back(m.collection.load(slot));

  // 1. Headers: the leaving units' sizes (a walk that copies nothing) go to their new
  // ranks, which check them.
  struct Leaving {
    std::int64_t slot;
    int to;
    Header header;
    ViewsApart views;  // its views, sent apart
  };
  std::vector<Leaving> leaving;
  std::string problem;
  try {
    for (std::int64_t slot = 0; slot < static_cast<std::int64_t>(m.old_locals.size()); ++slot) {
      const std::int64_t linear = m.old_locals[static_cast<std::size_t>(slot)];
      const int to = m.after.owner(linear);
      if (to == rank) continue;
      StateSizes size;
      StateWriter writer(size);
      visit(slot, writer);
      const UnitLoad& load = m.old_loads[static_cast<std::size_t>(slot)];
      if (size.views > 0 && (linear >= kMostTaggedUnits || size.views > kMostViews))
        throw Error(cat("unit ", m.collection.shape().delinear(linear),
                        " cannot move: units "
                        "with views move only in collections of fewer than 2^24 units, with "
                        "at most ",
                        kMostViews, " views each"));
      leaving.push_back({slot,
                         to,
                         Header{linear, rounds(slot), load.measured, load.stated.value_or(0),
                                load.stated ? 1u : 0u, size.bytes - size.view_bytes,
                                size.view_bytes, size.views},
                         {}});
    }
  } catch (...) {
    problem = what_of_current();
  }
  agree_and_report(rt.comm(), problem);
  std::vector<MPI_Request> requests;
  for (const Leaving& l : leaving) {
    requests.emplace_back();
    check_mpi(MPI_Isend(&l.header, sizeof(Header), MPI_BYTE, l.to, kHeaderTag, m.comm,
                        &requests.back()),
              "MPI_Isend");
  }
  for (std::int64_t linear = 0; linear < m.after.units(); ++linear) {
    if (m.after.owner(linear) != rank || m.before.owner(linear) == rank) continue;
    auto& a = m.arrivals[linear];
    a.from = m.before.owner(linear);
  }
  for (auto& [linear, a] : m.arrivals) {
    requests.emplace_back();
    check_mpi(MPI_Irecv(&a.header, sizeof(Header), MPI_BYTE, a.from, kHeaderTag, m.comm,
                        &requests.back()),
              "MPI_Irecv");
  }
  check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
            "MPI_Waitall");
  requests.clear();
  for (auto& [linear, a] : m.arrivals) {
    const Header& h = a.header;
    if (h.linear != linear || h.bytes > kMostStateBytes || h.has_stated > 1 ||
        !std::isfinite(h.measured) || !std::isfinite(h.stated) || h.view_bytes > kMostStateBytes ||
        h.views > kMostViews || (h.views == 0 && h.view_bytes != 0)) {
      problem = cat("rank ", a.from, " sent a malformed header for unit ",
                    m.collection.shape().delinear(linear), " of collection ", m.collection.id(),
                    " (unit ", h.linear, ", ", h.bytes, " bytes of state)");
      break;
    }
  }
  if (problem.empty()) try {
      for (auto& [linear, a] : m.arrivals) a.records.resize(a.header.bytes);
    } catch (const std::bad_alloc&) {
      problem = cat("rank ", rt.rank(), " cannot hold the state of the units moving to it");
    }
  agree_and_report(rt.comm(), problem);

  // 2. Every receive is posted before any rank sends data, so sends never wait on a rank
  // that is itself sending.
  auto chunks = [&](std::vector<std::byte>& bytes, int peer, bool send) {
    for (std::uint64_t at = 0; at < bytes.size(); at += kChunkBytes) {
      const int n = static_cast<int>(std::min<std::uint64_t>(kChunkBytes, bytes.size() - at));
      requests.emplace_back();
      if (send)
        check_mpi(MPI_Isend(bytes.data() + at, n, MPI_BYTE, peer, kDataTag, m.comm,
                            &requests.back()),
                  "MPI_Isend");
      else
        check_mpi(MPI_Irecv(bytes.data() + at, n, MPI_BYTE, peer, kDataTag, m.comm,
                            &requests.back()),
                  "MPI_Irecv");
    }
  };
  for (auto& [linear, a] : m.arrivals) chunks(a.records, a.from, false);
  std::vector<MPI_Request> receives = std::move(requests);
  requests.clear();

  // 3. The leaving units' records, a few units in flight at a time. A unit that fails to
  // write sends zeros of its announced size (its receiver must not wait for ever); the
  // failure is agreed on below, before anything is restored.
  std::deque<std::pair<std::vector<std::byte>, std::vector<MPI_Request>>> in_flight;
  for (Leaving& l : leaving) {
    if (in_flight.size() == static_cast<std::size_t>(kMigrationsInFlight)) {
      auto& oldest = in_flight.front().second;
      check_mpi(MPI_Waitall(static_cast<int>(oldest.size()), oldest.data(), MPI_STATUSES_IGNORE),
                "MPI_Waitall");
      in_flight.pop_front();
    }
    std::vector<std::byte> bytes;
    bool written = false;
    try {
      bytes.reserve(l.header.bytes);
      VectorOutput out(bytes);
      RecordSink sink(out, rt, &l.views);
      StateWriter writer(sink);
      visit(l.slot, writer);
      std::uint64_t view_bytes = 0;
      for (const Segment& v : l.views.segments) view_bytes += v.bytes;
      if (bytes.size() != l.header.bytes || l.views.segments.size() != l.header.views ||
          view_bytes != l.header.view_bytes)
        throw Error(cat("unit ", m.collection.shape().delinear(l.header.linear),
                        "'s state() wrote ", bytes.size() + view_bytes, " bytes, and ",
                        l.header.bytes + l.header.view_bytes,
                        " when it was measured: it must walk the same fields both times"));
      written = true;
    } catch (...) {
      if (problem.empty()) problem = what_of_current();
      l.views = {};
    }
    m.bytes_sent += bytes.size();
    requests.clear();
    if (written) {
      chunks(bytes, l.to, true);
    } else {
      // Empty messages in place of the chunks (a receive takes a shorter message): the
      // receiver does not wait, and the failure is agreed on below.
      for (std::uint64_t at = 0; at < l.header.bytes; at += kChunkBytes) {
        requests.emplace_back();
        check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, l.to, kDataTag, m.comm, &requests.back()),
                  "MPI_Isend");
      }
    }
    in_flight.emplace_back(std::move(bytes), std::move(requests));
    requests.clear();
  }
  for (auto& [bytes, sent] : in_flight)
    check_mpi(MPI_Waitall(static_cast<int>(sent.size()), sent.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitall");
  check_mpi(MPI_Waitall(static_cast<int>(receives.size()), receives.data(), MPI_STATUSES_IGNORE),
            "MPI_Waitall");
  // 4. The views: one buffer for the arriving units' (on the device where they are), then
  // the pieces through the staging slots (below).
  m.views_began = MPI_Wtime();
  std::map<std::int64_t, std::vector<std::uint64_t>> sizes;
  try {
    std::uint64_t total = 0;
    for (auto& [linear, a] : m.arrivals) {
      const std::string origin = cat("the state of unit ", m.collection.shape().delinear(linear),
                                     " sent by rank ", a.from);
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
      m.view_offsets[linear] = total;
      total += bytes;
    }
    if (total > 0)
      m.views = decltype(m.views)(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                                     "kodo::migration views"),
                                  total);
  } catch (...) {
    if (problem.empty()) problem = what_of_current();
  }
  agree_and_report(rt.comm(), problem);
  m.buffer_allocated = MPI_Wtime();
  // The views' data, in pieces of at most KODO_MIGRATION_PIECE_BYTES: between ranks of one
  // node by the same-node route (node_view_route.hpp), else (or where a rank cannot offer
  // slots for them) through UCX (move_views_through_ucx).
  const MemoryKind kind = memory_kind<ExecutionSpace::memory_space>();
  const std::uint64_t piece_setting =
      RuntimeAccess::channel_host(rt).transport_staging().piece_bytes();
  const auto pieces = [&](std::uint64_t piece_bytes, std::vector<ViewPiece>& outgoing,
                          std::vector<ViewPiece>& incoming) {
    std::map<int, std::uint64_t> numbers_out, numbers_in;
    const auto split = [piece_bytes](std::vector<ViewPiece>& list,
                                     std::map<int, std::uint64_t>& numbers, std::int64_t linear,
                                     std::uint64_t view, int peer, const Segment& whole) {
      for (std::uint64_t at = 0; at < whole.bytes; at += piece_bytes)
        list.push_back({linear, view, peer, numbers[peer]++,
                        Segment{static_cast<std::byte*>(whole.data) + at,
                                static_cast<std::size_t>(std::min<std::uint64_t>(piece_bytes,
                                                                                 whole.bytes - at)),
                                whole.kind}});
    };
    for (const Leaving& l : leaving)  // ascending unit numbers, as `sizes` below
      for (std::size_t v = 0; v < l.views.segments.size(); ++v)
        split(outgoing, numbers_out, l.header.linear, v, l.to, l.views.segments[v]);
    for (auto& [linear, s] : sizes) {
      std::uint64_t at = m.view_offsets[linear];
      for (std::size_t v = 0; v < s.size(); at += s[v], ++v)
        split(incoming, numbers_in, linear, v, m.arrivals.at(linear).from,
              Segment{m.views.data() + at, s[v], kind});
    }
  };
  if (node_view_route_open(RuntimeAccess::channel_host(rt), m.comm)) {
    std::vector<ViewPiece> out, in;
    pieces(node_view_piece_bytes(piece_setting), out, in);
    m.views_on_node =
        move_views_on_node(RuntimeAccess::channel_host(rt), rt.streams(), m.comm, out, in);
  }
  if (!m.views_on_node) {
    std::vector<ViewPiece> out, in;
    pieces(piece_setting, out, in);
    move_views_through_ucx(rt, m.comm, out, in, problem);
  }
  for (const Leaving& l : leaving) m.view_bytes_sent += l.header.view_bytes;
  m.bytes_sent += m.view_bytes_sent;
  agree_and_report(rt.comm(), problem);
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
  check_mpi(MPI_Barrier(m.runtime.comm()), "MPI_Barrier");
  reclaim_closed_links(registry, host.node(), id, 0);
  check_mpi(MPI_Barrier(m.runtime.comm()), "MPI_Barrier");
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
  std::vector<std::byte>().swap(a.records);
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
  check_mpi(MPI_Allreduce(seconds, slowest, 9, MPI_DOUBLE, MPI_MAX, m.runtime.comm()),
            "MPI_Allreduce");
  check_mpi(MPI_Allreduce(bytes, all, 2, MPI_UINT64_T, MPI_SUM, m.runtime.comm()), "MPI_Allreduce");
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
