// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A migration's messages from the peer (issue 54): each input is a migration
// (kodo::migrate) in which the two ranks' units trade places, rank 1's header for the unit
// it sends (surface migration_headers), or the slots it offers rank 0 for the unit's view
// by the same-node route (surface route_offers, host backend), altered as it leaves it
// (this surface's own MPI_Isend, which alters nothing while another surface runs but
// migration_records, which it hands each send to: fuzz.hpp, migration_send), the
// alteration chosen by rank 1 and told to rank 0 first. Every field the receiver checks
// is tried: honest, or a finite load, must be taken and the unit must arrive whole; any
// other value must be refused on both ranks with exactly its error (rank 0 finds it; rank
// 1 hears it as "rank 0: ..."). Left out: the claims a header makes within the bounds
// (fewer or more bytes than the records it is sent with: a claim its sender does not fill
// is a wait the watchdog ends, peer_drops_migration_header), and the route's asks and
// notices of filled slots (a wrong one ends the job: it is one input a process).

#include "../filled_unit.hpp"
#include "fuzz.hpp"

#include <kodo/comm/detail/node_channels.hpp>
#include <kodo/tasking/migration/detail/migration_impl.hpp>
#include <kodo/tasking/migration/detail/node_view_route.hpp>
#include <kodo/tasking/migration/detail/ucx_view_route.hpp>
#include <kodo/tasking/units/detail/state_records.hpp>

#include <cmath>
#include <limits>
#include <optional>

namespace {

using kodo::detail::Header;

struct Alteration {
  int field;
  std::uint64_t bits;                // the field's new value, as its bytes
  kodo::detail::SlotsOffer offer{};  // an offer's: its place, slot_bytes and slots
};
std::optional<Alteration> altering;  // set on rank 1 around its migration

// The fields the receiver checks, in the order it checks them.
enum Field : int {
  linear,
  bytes,
  view_bytes,
  views,
  no_views,
  has_stated,
  measured,
  stated,
  rounds,
  kFieldCount,
  offer = kFieldCount
};

void alter(Header& h, const Alteration& a) {
  switch (a.field) {
    case linear: h.linear = static_cast<std::int64_t>(a.bits); break;
    case bytes: h.bytes = a.bits; break;
    case view_bytes: h.view_bytes = a.bits; break;
    case views: h.views = a.bits; break;
    case no_views: h.views = 0; break;
    case has_stated: h.has_stated = a.bits; break;
    case measured: std::memcpy(&h.measured, &a.bits, sizeof a.bits); break;
    case stated: std::memcpy(&h.stated, &a.bits, sizeof a.bits); break;
    case rounds: h.rounds = a.bits; break;
    default: break;
  }
}

}  // namespace

extern "C" int MPI_Isend(const void* data, int count, MPI_Datatype type, int to, int tag,
                         MPI_Comm comm, MPI_Request* request) {
  using kodo::detail::SlotsOffer;
  int rc = MPI_SUCCESS;
  if (fuzz::migration_send && fuzz::migration_send(data, count, type, to, tag, comm, &rc)) {
    *request = MPI_REQUEST_NULL;
    return rc;
  }
  if (altering && altering->field == offer && tag == kodo::detail::kOfferTag && type == MPI_BYTE &&
      count == static_cast<int>(sizeof(SlotsOffer))) {
    SlotsOffer o{};
    std::memcpy(&o, data, sizeof o);
    o.place = altering->offer.place;
    o.slot_bytes = altering->offer.slot_bytes;
    o.slots = altering->offer.slots;
    const int rc = PMPI_Send(&o, count, type, to, tag, comm);
    *request = MPI_REQUEST_NULL;
    return rc;
  }
  if (altering && altering->field != offer && tag == kodo::detail::kHeaderTag && type == MPI_BYTE &&
      count == static_cast<int>(sizeof(Header))) {
    Header h{};
    std::memcpy(&h, data, sizeof h);
    alter(h, *altering);
    // Sent before this returns (the eager protocol copies it), as the caller's would be.
    const int rc = PMPI_Send(&h, count, type, to, tag, comm);
    *request = MPI_REQUEST_NULL;
    return rc;
  }
  return PMPI_Isend(data, count, type, to, tag, comm, request);
}

namespace fuzz {
namespace {

using kodo::detail::cat;

Alteration choose(Context& c) {
  const int field = c.pick(-1, kFieldCount - 1);  // -1: honest
  const auto any = static_cast<std::uint64_t>(c.edge());
  const auto above = [&](std::uint64_t most) { return most + 1 + (c.word() >> (c.pick(2, 63))); };
  const double loads[] = {std::nan(""),
                          std::numeric_limits<double>::infinity(),
                          -std::numeric_limits<double>::infinity(),
                          0.0,
                          1e300,
                          -1.0};
  Alteration a{field, any};
  if (field == bytes || field == view_bytes) a.bits = above(kodo::detail::kMostStateBytes);
  if (field == views) a.bits = above(kodo::detail::kMostViews);
  if (field == has_stated) a.bits = 2 + (c.word() >> c.pick(2, 63));
  if (field == measured || field == stated) {
    const double load = loads[c.pick(0, 5)];
    std::memcpy(&a.bits, &load, sizeof load);
  }
  return a;
}

// An offer no receiver could make, every field set: no slot, more than 4, slots smaller
// than the piece (8000 bytes), or slots that end past `room` (the node segment's bytes).
Alteration choose_offer(Context& c, std::uint64_t room) {
  kodo::detail::SlotsOffer o{};
  o.slot_bytes = 8000;
  o.slots = 1;
  switch (c.pick(0, 3)) {
    case 0: o.slots = 0; break;
    case 1: o.slots = 5 + (c.word() >> c.pick(1, 63)); break;
    case 2: o.slot_bytes = static_cast<std::uint64_t>(c.pick(0, 7999)); break;
    default: o.place = room - 8000 + 1 + (c.word() >> c.pick(2, 63)); break;
  }
  return {offer, 0, o};
}

// What must become of `a` on this rank; `unit`: the unit rank 1 sends, at round 0 with
// 8000 bytes of views; `room`: the node segment's bytes.
Expect expected(const Alteration& a, std::int64_t unit, int self, std::uint64_t room) {
  double load = 0;
  std::memcpy(&load, &a.bits, sizeof load);
  const auto is = [&](const char* field, const auto& value, const auto&... why) {
    return Expect::refuse(cat("kodo: ", self == 1 ? "rank 0: " : "",
                              "rank 1 sent a malformed header for unit (", unit,
                              ",0,0) of collection 2: its field ", field, " is ", value, why...));
  };
  switch (a.field) {
    case offer:
      return Expect::refuse(cat("kodo: ", self == 1 ? "rank 0: " : "",
                                "rank 1 offered malformed slots for moving units' views (",
                                a.offer.slots, " of ", a.offer.slot_bytes, " bytes at ",
                                a.offer.place, " of ", room,
                                " bytes; its pieces from here are up to 8000 bytes)"));
    case linear:
      if (static_cast<std::int64_t>(a.bits) == unit) return Expect::accept();
      return is("linear", static_cast<std::int64_t>(a.bits), ", the unit it moves is ", unit);
    case bytes: return is("bytes", a.bits, ", above 2^44");
    case view_bytes: return is("view_bytes", a.bits, ", above 2^44");
    case views: return is("views", a.bits, ", above ", kodo::detail::kMostViews);
    case no_views: return is("views", 0, " with view_bytes ", 8000);
    case has_stated: return is("has_stated", a.bits, ", not 0 or 1");
    case measured:
      return std::isfinite(load) ? Expect::accept() : is("measured", load, ", not a load");
    case stated: return std::isfinite(load) ? Expect::accept() : is("stated", load, ", not a load");
    case rounds:
      if (a.bits == 0) return Expect::accept();
      return is("rounds", a.bits, ", where the collection's units are at reduction round 0");
    default: return Expect::accept();
  }
}

// Migrations that trade the units' places, rank 1's header or offer altered.
Tally migrate_altered(Context& c, const char* surface, bool offers) {
  Tally t(surface, c.self(), {});
  auto units = kodo::Collection<FilledUnit>::create(c.runtime, {2, 1, 1});
  std::vector<int> owners{0, 1};  // unit 0's rank, unit 1's
  const kodo::detail::NodeChannels* node =
      kodo::detail::RuntimeAccess::channel_host(c.runtime).node();
  const std::uint64_t room = node ? node->segment_bytes() : 0;
  if (offers && (!node || node->selection() == kodo::detail::ChannelSelection::ucx)) {
    t.fail("the ranks have no same-node route for migration (KODO_CHANNELS=ucx, or two nodes)");
    return t;
  }
  Told told;
  for (;;) {
    if (!told.more(c, t)) break;
    Alteration a{-1, 0};
    if (c.self() == 1) a = !offers ? choose(c) : c.pick(0, 3) ? choose_offer(c, room) : a;
    a = told(a);
    const std::int64_t sent = owners[0] == 1 ? 0 : 1;  // the unit rank 1 holds
    const std::vector<int> traded{owners[1], owners[0]};
    bool moved = false;
    t.check(expected(a, sent, c.self(), room), [&] {
      if (c.self() == 1 && a.field >= 0) altering = a;
      kodo::migrate(units, traded);
      moved = true;
    });
    altering.reset();
    if (!moved) continue;
    owners = traded;
    units.for_each_local([&](const FilledUnit& m) {
      if (!m.whole()) t.fail(cat("unit ", m.index(), " arrived with other values"));
    });
  }
  return t;
}

}  // namespace

Tally fuzz_migration_headers(Context& c) { return migrate_altered(c, "migration_headers", false); }
Tally fuzz_route_offers(Context& c) { return migrate_altered(c, "route_offers", true); }

}  // namespace fuzz
