// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A migration's first steps (migration_impl.hpp): the leaving units measured, their
// headers traded and checked, their views' tag numbers drawn by their receivers, their
// records sent and checked as they arrive.
#include <kodo/comm/detail/channel_end.hpp>
#include <kodo/core/detail/agree.hpp>
#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/tasking/migration/detail/migration_impl.hpp>
#include <kodo/tasking/migration/detail/migration_messages.hpp>
#include <kodo/tasking/migration/detail/ucx_view_route.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <set>
#include <thread>
#include <unistd.h>

namespace kodo::detail {
namespace {

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

}  // namespace

void wait_naming(Watchdog& watchdog, std::vector<MPI_Request>& requests,
                 const std::function<std::string(std::size_t)>& name, MPI_Status* statuses) {
  const std::size_t n = requests.size();
  std::vector<int> done(n);
  std::vector<MPI_Status> completed(statuses ? n : 0);
  WatchdogWait waiting(watchdog, {});
  for (std::size_t first = 0, named = n;;) {
    while (first < n && requests[first] == MPI_REQUEST_NULL) ++first;
    if (first == n) return;
    if (first != named) waiting.update(name(named = first));  // progress
    int count = 0;
    KODO_MPI_CHECK(MPI_Testsome(static_cast<int>(n), requests.data(), &count, done.data(),
                                statuses ? completed.data() : MPI_STATUSES_IGNORE));
    if (count == MPI_UNDEFINED) return;
    for (int k = 0; statuses && k < count; ++k) statuses[done[k]] = completed[k];
    if (count == 0) std::this_thread::yield();  // as MPI_Waitall does for ranks sharing cores
  }
}

std::string Migration::Impl::unit_name(std::int64_t linear) const {
  return cat("unit ", collection.shape().delinear(linear), " of collection ", collection.id());
}

void post_chunks(MPI_Comm comm, std::span<std::byte> bytes, int peer, bool send,
                 std::vector<MPI_Request>& requests) {
  for (std::uint64_t at = 0; at < bytes.size(); at += kChunkBytes) {
    const int n = static_cast<int>(std::min<std::uint64_t>(kChunkBytes, bytes.size() - at));
    requests.emplace_back();
    if (send)
      KODO_MPI_CHECK(MPI_Isend(bytes.data() + at, n, MPI_BYTE, peer, kDataTag, comm,
                               &requests.back()));
    else
      KODO_MPI_CHECK(MPI_Irecv(bytes.data() + at, n, MPI_BYTE, peer, kDataTag, comm,
                               &requests.back()));
  }
}

// 1. Headers: the leaving units' sizes (a walk that copies nothing) go to their new
// ranks, which check them.
std::vector<Migration::Impl::Leaving> Migration::Impl::measure_leaving(
    const std::function<void(std::int64_t, StateWriter&)>& visit,
    const std::function<std::uint64_t(std::int64_t)>& rounds) {
  std::vector<Leaving> leaving;
  std::string problem;
  try {
    for (std::int64_t slot = 0; slot < static_cast<std::int64_t>(old_locals.size()); ++slot) {
      const std::int64_t linear = old_locals[static_cast<std::size_t>(slot)];
      round = rounds(slot);  // every unit's, the job being quiet (check_header)
      const int to = after.owner(linear);
      if (to == runtime.rank()) continue;
      StateSizes size;
      StateWriter writer(size);
      visit(slot, writer);
      const UnitLoad& load = old_loads[static_cast<std::size_t>(slot)];
      if (size.views > 0 && (linear >= kMostTaggedUnits || size.views > kMostViews))
        throw Error(cat("unit ", collection.shape().delinear(linear),
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
  agree_and_report(runtime.comm(), problem);
  return leaving;
}

// The headers sent, the arriving units' received and checked, room made for their
// records; every rank agrees on a problem.
void Migration::Impl::trade_headers(const std::vector<Leaving>& leaving) {
  const int rank = runtime.rank();
  std::vector<MPI_Request> requests;
  for (const Leaving& l : leaving) {
    requests.emplace_back();
    KODO_MPI_CHECK(MPI_Isend(&l.header, sizeof(Header), MPI_BYTE, l.to, kHeaderTag, comm,
                             &requests.back()));
  }
  for (std::int64_t linear = 0; linear < after.units(); ++linear) {
    if (after.owner(linear) != rank || before.owner(linear) == rank) continue;
    auto& a = arrivals[linear];
    a.from = before.owner(linear);
  }
  std::vector<const std::pair<const std::int64_t, Arrival>*> arriving;
  for (auto& arrival : arrivals) {
    auto& [linear, a] = arrival;
    arriving.push_back(&arrival);
    requests.emplace_back();
    KODO_MPI_CHECK(MPI_Irecv(&a.header, sizeof(Header), MPI_BYTE, a.from, kHeaderTag, comm,
                             &requests.back()));
  }
  wait_naming(RuntimeAccess::watchdog(runtime), requests, [&](std::size_t i) {
    if (i < leaving.size())
      return cat("rank ", leaving[i].to, " to take the header of ",
                 unit_name(leaving[i].header.linear));
    const auto& [linear, a] = *arriving[i - leaving.size()];
    return cat("the header of ", unit_name(linear), " from rank ", a.from);
  });
  std::string problem;
  for (auto& [linear, a] : arrivals)
    if (problem.empty()) problem = check_header(linear, a);
  if (problem.empty()) problem = check_claims();
  if (problem.empty()) try {
      for (auto& [linear, a] : arrivals) a.records.resize(a.header.bytes);
    } catch (const std::bad_alloc&) {
      problem = cat("rank ", rank, " cannot hold the state of the units moving to it");
    }
  agree_and_report(runtime.comm(), problem);
}

// A peer's header, field by field: what is wrong with it, naming the sender and the
// field, or "". Its round must be the collection's: the job is quiet, so every unit has
// contributed to the same rounds (a round ahead would open reductions no unit joins).
std::string Migration::Impl::check_header(std::int64_t linear, const Arrival& a) {
  const Header& h = a.header;
  const auto bad = [&](const char* field, const auto& value, const auto&... why) {
    return cat("rank ", a.from, " sent a malformed header for ", unit_name(linear), ": its field ",
               field, " is ", value, why...);
  };
  if (h.linear != linear) return bad("linear", h.linear, ", the unit it moves is ", linear);
  if (h.bytes > kMostStateBytes) return bad("bytes", h.bytes, ", above 2^44");
  if (h.view_bytes > kMostStateBytes) return bad("view_bytes", h.view_bytes, ", above 2^44");
  if (h.views > kMostViews) return bad("views", h.views, ", above ", kMostViews);
  if (h.views == 0 && h.view_bytes != 0) return bad("views", 0, " with view_bytes ", h.view_bytes);
  if (h.has_stated > 1) return bad("has_stated", h.has_stated, ", not 0 or 1");
  if (!std::isfinite(h.measured)) return bad("measured", h.measured, ", not a load");
  if (!std::isfinite(h.stated)) return bad("stated", h.stated, ", not a load");
  if (!round) round = h.rounds;  // no unit stays here: the first arrival's, for the others
  if (h.rounds != *round)
    return bad("rounds", h.rounds, ", where the collection's units are at reduction round ",
               *round);
  return {};
}

// What the arriving units' headers claim, together, against this rank's memory (the
// records are host memory; on host builds the views too): a claim no rank here could
// hold is refused before anything is reserved, naming its largest claimant. Below that,
// memory grows only with the bytes that arrive (ArrivingRecords).
std::string Migration::Impl::check_claims() const {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return {};  // unknown: the allocation itself refuses
  const auto memory = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  const auto claim = [](const Header& h) { return h.bytes + (host_build ? h.view_bytes : 0); };
  std::uint64_t total = 0;  // each claim below 2^45 (checked): added while within memory
  const std::pair<const std::int64_t, Arrival>* largest = nullptr;
  for (const auto& arrival : arrivals) {
    if (total <= memory) total += claim(arrival.second.header);
    if (!largest || claim(arrival.second.header) > claim(largest->second.header))
      largest = &arrival;
  }
  if (total <= memory) return {};
  const auto& [linear, a] = *largest;
  return cat("rank ", a.from, "'s header for ", unit_name(linear), " claims ", a.header.bytes,
             " bytes of state (field bytes)",
             host_build ? cat(" and ", a.header.view_bytes, " of views (field view_bytes)") : "",
             "; the units moving to rank ", runtime.rank(), " claim more than its memory (", memory,
             " bytes) in all");
}

// Each arriving unit's views get UCX tags no other rank can aim at: a number drawn here
// among those no channel link of this rank has (ucx_view_route.cpp), told to its sender
// alone. Both sides go in ascending unit numbers, which MPI keeps in order.
void Migration::Impl::trade_tag_numbers(std::vector<Leaving>& leaving) {
  ChannelRegistry& registry = RuntimeAccess::channel_host(runtime).channels();
  std::set<std::uint32_t> drawn;
  std::vector<MPI_Request> requests;
  for (auto& [linear, a] : arrivals) {
    do a.tag_number = registry.unused_number();
    while (!drawn.insert(a.tag_number).second);
    requests.emplace_back();
    KODO_MPI_CHECK(MPI_Isend(&a.tag_number, 1, MPI_UINT32_T, a.from, kNumberTag, comm,
                             &requests.back()));
  }
  for (Leaving& l : leaving) {
    requests.emplace_back();
    KODO_MPI_CHECK(MPI_Irecv(&l.tag_number, 1, MPI_UINT32_T, l.to, kNumberTag, comm,
                             &requests.back()));
  }
  std::vector<std::pair<std::int64_t, int>> told;  // each number sent: its unit and sender
  for (const auto& [linear, a] : arrivals) told.emplace_back(linear, a.from);
  wait_naming(RuntimeAccess::watchdog(runtime), requests, [&](std::size_t i) {
    if (i < told.size())
      return cat("rank ", told[i].second, " to take the tag number of ", unit_name(told[i].first));
    const Leaving& l = leaving[i - told.size()];
    return cat("the tag number of ", unit_name(l.header.linear), " from rank ", l.to,
               ", which it moves to");
  });
}

// The arriving records, each chunk as long as its header said: the bytes of a shorter
// one were never written (a sender that failed sends empty chunks, and says why).
void Migration::Impl::check_records_arrived(std::vector<MPI_Request>& receives,
                                            const std::vector<std::pair<std::int64_t, int>>& chunks,
                                            const std::string& sending_problem) {
  std::vector<MPI_Status> statuses(receives.size());
  wait_naming(
      RuntimeAccess::watchdog(runtime), receives,
      [&](std::size_t i) {
        const std::int64_t linear = chunks[i].first;
        return cat("the records of ", unit_name(linear), " from rank ", arrivals.at(linear).from);
      },
      statuses.data());
  // A sender that failed sent empty chunks and says why: its reason is the job's, agreed
  // before a short chunk is looked at (and before any record is read).
  agree_and_report(runtime.comm(), sending_problem);
  std::string missing;
  for (std::size_t i = 0; i < chunks.size() && missing.empty(); ++i) {
    int count = 0;
    KODO_MPI_CHECK(MPI_Get_count(&statuses[i], MPI_BYTE, &count));
    const auto [linear, expected] = chunks[i];
    if (count != expected)
      missing = cat("the records of unit ", collection.shape().delinear(linear), " of collection ",
                    collection.id(), " from rank ", arrivals.at(linear).from, ": ", count,
                    " bytes arrived of a part its header gave ", expected);
  }
  agree_and_report(runtime.comm(), missing);
}

// 3. The leaving units' records, a few units in flight at a time. A unit that fails to
// write sends empty chunks in place of its own (its receiver must not wait for ever);
// the failure is kept in `problem`, agreed on once every chunk has arrived.
void Migration::Impl::send_records(std::vector<Leaving>& leaving,
                                   const std::function<void(std::int64_t, StateWriter&)>& visit,
                                   std::string& problem) {
  std::vector<MPI_Request> requests;
  struct InFlight {
    const Leaving* unit;
    std::vector<std::byte> bytes;
    std::vector<MPI_Request> sent;
  };
  std::deque<InFlight> in_flight;
  const auto wait_for = [this](InFlight& f) {
    wait_naming(RuntimeAccess::watchdog(runtime), f.sent, [&](std::size_t) {
      return cat("rank ", f.unit->to, " to take the records of ", unit_name(f.unit->header.linear));
    });
  };
  for (Leaving& l : leaving) {
    if (in_flight.size() == static_cast<std::size_t>(kMigrationsInFlight)) {
      wait_for(in_flight.front());
      in_flight.pop_front();
    }
    std::vector<std::byte> bytes;
    bool written = false;
    try {
      bytes.reserve(l.header.bytes);
      VectorOutput out(bytes);
      RecordSink sink(out, runtime, &l.views);
      StateWriter writer(sink);
      visit(l.slot, writer);
      std::uint64_t view_bytes = 0;
      for (const Segment& v : l.views.segments) view_bytes += v.bytes;
      if (bytes.size() != l.header.bytes || l.views.segments.size() != l.header.views ||
          view_bytes != l.header.view_bytes)
        throw Error(cat("unit ", collection.shape().delinear(l.header.linear), "'s state() wrote ",
                        bytes.size() + view_bytes, " bytes, and ",
                        l.header.bytes + l.header.view_bytes,
                        " when it was measured: it must walk the same fields both times"));
      written = true;
    } catch (...) {
      if (problem.empty()) problem = what_of_current();
      l.views = {};
    }
    bytes_sent += bytes.size();
    requests.clear();
    if (written) {
      post_chunks(comm, bytes, l.to, true, requests);
    } else {
      // Empty messages in place of the chunks (a receive takes a shorter message): the
      // receiver does not wait, and the failure is agreed on below.
      for (std::uint64_t at = 0; at < l.header.bytes; at += kChunkBytes) {
        requests.emplace_back();
        KODO_MPI_CHECK(MPI_Isend(nullptr, 0, MPI_BYTE, l.to, kDataTag, comm, &requests.back()));
      }
    }
    in_flight.push_back({&l, std::move(bytes), std::move(requests)});
    requests.clear();
  }
  for (InFlight& f : in_flight) wait_for(f);
}

}  // namespace kodo::detail
