// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What the files of a migration share (migration.cpp: the map checked, the views, the
// units installed; migration_records.cpp: the headers, tag numbers and records): the
// header a leaving unit's records follow, and the migration's state (Migration::Impl).

#include <kodo/tasking/migration/detail/migration_messages.hpp>
#include <kodo/tasking/migration/migration.hpp>
#include <kodo/tasking/scheduling/detail/watchdog.hpp>
#include <kodo/tasking/units/detail/state_records.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kodo::detail {

inline constexpr std::uint64_t kChunkBytes = std::uint64_t{1} << 30;  // an MPI count is an int
inline constexpr std::uint64_t kMostStateBytes = std::uint64_t{1} << 44;

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

// Bytes a peer's records land in, left uninitialized: a rank's memory grows with what its
// peers send, not with what their headers claim (pages untouched until data arrives).
template <class T>
struct Uninitialized : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = Uninitialized<U>;
  };
  Uninitialized() = default;
  template <class U>
  explicit Uninitialized(const Uninitialized<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
};
using ArrivingRecords = std::vector<std::byte, Uninitialized<std::byte>>;

// Posts the sends (or receives) of `bytes` to (or from) `peer` in chunks of at most
// kChunkBytes, each request added to `requests` (migration_records.cpp).
void post_chunks(MPI_Comm comm, std::span<std::byte> bytes, int peer, bool send,
                 std::vector<MPI_Request>& requests);

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
    ArrivingRecords records;
    std::uint32_t tag_number = 0;  // its views' UCX tags (drawn here, told to `from`)
  };
  std::map<std::int64_t, Arrival> arrivals;                      // by linear index
  Kokkos::View<std::byte*, ExecutionSpace::memory_space> views;  // arriving units' views
  std::map<std::int64_t, std::uint64_t> view_offsets;            // ... each unit's, by linear
  std::vector<UnitLoad> old_loads;                               // by old slot
  std::optional<std::uint64_t> round;  // the next reduction round of the collection's units
  // From the quiet job on: a rank that waits here too long for the others is reported.
  std::optional<WatchdogPhase> watching;

  Impl(Runtime& r, CollectionBase& c)
      : runtime(r), collection(c), before(c.map()), after(c.map()) {}
  ~Impl() {
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }

  std::string unit_name(std::int64_t linear) const;  // "unit (1,0,0) of collection 0"

  // The steps of exchange(), in order.
  struct Leaving {
    std::int64_t slot;
    int to;
    Header header;
    ViewsApart views;              // its views, sent apart
    std::uint32_t tag_number = 0;  // its views' UCX tags, told by its receiver
  };
  std::vector<Leaving> measure_leaving(const std::function<void(std::int64_t, StateWriter&)>& visit,
                                       const std::function<std::uint64_t(std::int64_t)>& rounds);
  void trade_headers(const std::vector<Leaving>& leaving);
  std::string check_header(std::int64_t linear, const Arrival& a);
  std::string check_claims() const;
  void trade_tag_numbers(std::vector<Leaving>& leaving);
  void check_records_arrived(std::vector<MPI_Request>& receives,
                             const std::vector<std::pair<std::int64_t, int>>& chunks,
                             const std::string& sending_problem);
  void send_records(std::vector<Leaving>& leaving,
                    const std::function<void(std::int64_t, StateWriter&)>& visit,
                    std::string& problem);
  std::map<std::int64_t, std::vector<std::uint64_t>> allocate_arriving_views(std::string& problem);
  void move_views(const std::vector<Leaving>& leaving,
                  const std::map<std::int64_t, std::vector<std::uint64_t>>& sizes,
                  std::string& problem);
  void cut_into_pieces(std::uint64_t piece_bytes, const std::vector<Leaving>& leaving,
                       const std::map<std::int64_t, std::vector<std::uint64_t>>& sizes,
                       std::vector<ViewPiece>& outgoing, std::vector<ViewPiece>& incoming);
};

}  // namespace kodo::detail
