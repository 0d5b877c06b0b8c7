// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A peer that goes silent, stays away or claims too much outside run() (issue 54: "hangs
// with no report", "unbounded memory"): each must end the job with an error naming the
// peer and what it did not send or claimed, never a hang. On 2 ranks; rank 1 is faulty.
// The watched waits run with KODO_STALL_SECONDS=1 and KODO_STALL_EXIT unset (its default
// ends the job).
//   faulty_peer_program drop-header      rank 1 drops the header of the unit it moves to
//                                        rank 0 in a migration
//   faulty_peer_program drop-filled      rank 1 never says it filled the slot rank 0 asked
//                                        it to fill with a moving unit's view (the
//                                        same-node route)
//   faulty_peer_program drop-ask         rank 1 never asks rank 0 for the pieces of the
//                                        view of the unit rank 0 moves to it (the
//                                        same-node route)
//   faulty_peer_program ask-number|ask-slot|filled-number|filled-slot  rank 1 alters the
//                                        piece number or the slot of its asks, or of its
//                                        notices that a slot is filled (the same-node route)
//   faulty_peer_program stuck-at-balance rank 1 stops in the gathering of counts at a
//                                        balance point
//   faulty_peer_program absent-at-start  rank 1 starts MPI but does not come to start
//                                        the runtime
//   faulty_peer_program absent-at-create rank 1 does not come to create a collection
//   faulty_peer_program absent-at-end    rank 1 does not come to end the runtime
//   faulty_peer_program claim-header     rank 1's header claims 2^43 bytes of state
//   faulty_peer_program round-header     rank 1's header gives a reduction round ahead
//   faulty_peer_program stray-tags       rank 1 sends rank 0 2,000 tagged messages of 2 KiB
//                                        on numbers no link has while rank 0 is in run()
//   faulty_peer_program honest-migration the migration of the first modes, told truthfully
//   faulty_peer_program stray-tags-in-migration  rank 1 sends rank 0 the junk of stray-tags
//                                        once 512 units' headers are traded, before their
//                                        views (through UCX under KODO_CHANNELS=ucx)
//   faulty_peer_program stray-tags-at-end  rank 1 sends rank 0 the junk of stray-tags once
//                                        both have left run(), as the job ends
//   faulty_peer_program stray-flood-in-migration  as stray-tags-in-migration, with 20,000
//                                        messages: rank 0 then says how many are left in
//                                        UCX (none: it went on dropping past the refusal)
// The faults are made as the messages leave rank 1: this program's own MPI_Isend,
// MPI_Allgather and MPI_Allreduce (the MPI profiling interface) drop, alter or hold them, as a rank
// built from altered sources would, then pass the others on to PMPI.

#include "filled_unit.hpp"

#include <kodo/comm/detail/ucx_transport.hpp>
#include <kodo/kodo.hpp>
#include <kodo/tasking/migration/detail/migration_impl.hpp>
#include <kodo/tasking/units/detail/state_records.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using kodo::detail::cat;

enum class Fault {
  none,
  drop_header,
  drop_filled,
  drop_ask,
  ask_number,
  ask_slot,
  filled_number,
  filled_slot,
  stuck_at_balance,
  claim_header,
  round_header,
  stray_tags
};
Fault fault = Fault::none;  // armed on rank 1 just before the call it spoils
kodo::Runtime* strays_from = nullptr;
bool header_left = false;  // rank 1's migration header went out
int strays = 2000;         // how many send_strays sends
void send_strays(kodo::Runtime& runtime, bool wait);

// A unit with a view, which travels apart from its records when it moves.
using Mover = FilledUnit;

class Walker : public kodo::WorkUnit<Walker> {
 public:
  explicit Walker(const kodo::UnitInit<Walker>& init) : WorkUnit(init) {}
  kodo::Task walk() { co_await balance_point<&Walker::finish>(); }
  void finish() {}
  template <class State>
  void state(State&) {}
};

}  // namespace

namespace {
// An altered copy sent in place of a message, at once (a small one leaves by the eager
// protocol before this returns), with the request done.
int send_altered(const void* data, int count, MPI_Datatype type, int to, int tag, MPI_Comm comm,
                 MPI_Request* request) {
  if (PMPI_Send(data, count, type, to, tag, comm) != MPI_SUCCESS) return MPI_ERR_OTHER;
  *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}
}  // namespace

// Rank 1's messages as they leave it: a migration's header (64 bytes, tag 1 of the
// migration's tags: migration_messages.hpp) and the same-node route's asks for a piece
// and notices that a slot is filled (2 words each, tags 12 and 13).
extern "C" int MPI_Isend(const void* data, int count, MPI_Datatype type, int to, int tag,
                         MPI_Comm comm, MPI_Request* request) {
  using kodo::detail::Header;
  const bool header = tag == kodo::detail::kHeaderTag && type == MPI_BYTE &&
                      count == static_cast<int>(sizeof(Header));
  if ((fault == Fault::drop_header && header) ||
      (fault == Fault::drop_filled && tag == kodo::detail::kFilledTag && count == 2) ||
      (fault == Fault::drop_ask && tag == kodo::detail::kAskTag && count == 2)) {
    *request = MPI_REQUEST_NULL;  // sent, as far as rank 1 knows
    return MPI_SUCCESS;
  }
  if (header) header_left = true;
  const bool ask = tag == kodo::detail::kAskTag && count == 2,
             filled = tag == kodo::detail::kFilledTag && count == 2;
  if ((ask && (fault == Fault::ask_number || fault == Fault::ask_slot)) ||
      (filled && (fault == Fault::filled_number || fault == Fault::filled_slot))) {
    std::uint64_t notice[2];  // the piece's number, the receiver's slot
    std::memcpy(notice, data, sizeof notice);
    notice[fault == Fault::ask_number || fault == Fault::filled_number ? 0 : 1] += 1000;
    return send_altered(notice, count, type, to, tag, comm, request);
  }
  Header altered{};
  if ((fault == Fault::claim_header || fault == Fault::round_header) && header) {
    std::memcpy(&altered, data, sizeof altered);
    if (fault == Fault::claim_header) altered.bytes = std::uint64_t{1} << 43;
    if (fault == Fault::round_header) altered.rounds += 1000;
    return send_altered(&altered, count, type, to, tag, comm, request);
  }
  return PMPI_Isend(data, count, type, to, tag, comm, request);
}

// The counts at a balance point: one collection's, then the wave's.
extern "C" int MPI_Allgather(const void* send, int count, MPI_Datatype type, void* receive,
                             int receive_count, MPI_Datatype receive_type, MPI_Comm comm) {
  if (fault == Fault::stuck_at_balance && count == 2 && type == MPI_UINT64_T) sleep(60);
  return PMPI_Allgather(send, count, type, receive, receive_count, receive_type, comm);
}

// Rank 1's junk in a migration, once the ranks agreed on the headers they traded: every
// rank has left the migration's run() by then (which would take the junk itself), and
// rank 1's views follow the junk.
extern "C" int MPI_Allreduce(const void* send, void* receive, int count, MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm) {
  const int status = PMPI_Allreduce(send, receive, count, type, op, comm);
  if (fault == Fault::stray_tags && header_left) {
    fault = Fault::none;
    send_strays(*strays_from, false);
  }
  return status;
}

namespace {

// Rank 1's junk: `strays` tagged messages of 2 KiB to rank 0 on numbers no link has. With
// `wait`, until rank 0 has taken them all from UCX (its sends complete only then).
void send_strays(kodo::Runtime& runtime, bool wait) {
  auto& transport = kodo::detail::RuntimeAccess::channel_host(runtime).transport();
  static std::vector<std::byte> junk(2048, std::byte{0x5a});
  static int done = 0;
  const int kStrays = strays;
  for (int i = 0; i < kStrays; ++i)
    transport.tag_send(0, (std::uint64_t{0xdead0000} + static_cast<std::uint64_t>(i)) << 32,
                       {junk.data(), junk.size(), kodo::detail::MemoryKind::host},
                       [](ucs_status_t, std::size_t) { ++done; });
  while (wait && done < kStrays) transport.progress();
}

// The tagged messages still in rank 0's UCX queue, taken out and counted: rank 1's junk
// arrived before its views, which the migration waited for.
void print_strays_left(kodo::Runtime& runtime) {
  auto& transport = kodo::detail::RuntimeAccess::channel_host(runtime).transport();
  while (transport.progress() > 0) {
  }
  std::size_t left = 0;
  for (; const auto oldest = transport.probe(0, 0); ++left)
    transport.drop_tagged(oldest->first, oldest->second);
  std::printf("rank 0: %zu tagged message(s) left in UCX by the migration\n", left);
  std::fflush(stdout);
}

int migrate_or_report(kodo::Runtime& runtime, Fault armed, std::int64_t units = 2) {
  auto movers = kodo::Collection<Mover>::create(runtime, {units, 1, 1});
  runtime.run();
  std::vector<int> owners;  // every unit trades ranks
  for (std::int64_t i = 0; i < units; ++i) owners.push_back(1 - movers.owner({i, 0, 0}));
  if (runtime.rank() == 1) fault = armed;
  strays_from = &runtime;  // stray-tags: sent once the headers are traded
  try {
    kodo::migrate(movers, owners);
  } catch (const kodo::Error& e) {
    kodo::print_error(cat("rank ", runtime.rank(), ": kodo::Error: ", e.what()));
    if (armed == Fault::stray_tags && runtime.rank() == 0) print_strays_left(runtime);
    return 1;
  }
  fault = Fault::none;
  bool whole = true;
  movers.for_each_local([&](const Mover& m) { whole = whole && m.whole(); });
  std::printf("rank %d: migrated, %s\n", runtime.rank(), whole ? "values whole" : "values WRONG");
  return whole ? 0 : 3;
}

// Rank 1 sends junk before it enters run(); its sends complete only as rank 0, in run(),
// takes them from UCX.
int strays_in_run(kodo::Runtime& runtime) {
  if (runtime.rank() == 1) send_strays(runtime, true);
  runtime.run();
  std::printf("rank %d: unexpected: the stray messages were taken\n", runtime.rank());
  return 0;
}

// Rank 1 sends junk once both ranks are out of run(): rank 0 meets it as it waits for
// rank 1 at the job's end.
int strays_at_end(kodo::Runtime& runtime) {
  runtime.run();
  MPI_Barrier(runtime.comm());
  if (runtime.rank() == 1) send_strays(runtime, false);  // done as rank 0 takes them
  std::printf("rank %d: ending the job\n", runtime.rank());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "absent-at-start") {  // the program starts MPI: rank 1 stays away after it
    int provided = 0, rank = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) sleep(60);
    const kodo::Runtime runtime(argc, argv);
    std::printf("rank %d: unexpected: the runtime started\n", rank);
    return 0;
  }
  kodo::Runtime runtime(argc, argv);
  if (runtime.size() != 2) return 2;
  if (mode == "drop-header") return migrate_or_report(runtime, Fault::drop_header);
  if (mode == "drop-filled") return migrate_or_report(runtime, Fault::drop_filled);
  if (mode == "drop-ask") return migrate_or_report(runtime, Fault::drop_ask);
  if (mode == "ask-number") return migrate_or_report(runtime, Fault::ask_number);
  if (mode == "ask-slot") return migrate_or_report(runtime, Fault::ask_slot);
  if (mode == "filled-number") return migrate_or_report(runtime, Fault::filled_number);
  if (mode == "filled-slot") return migrate_or_report(runtime, Fault::filled_slot);
  if (mode == "claim-header") return migrate_or_report(runtime, Fault::claim_header);
  if (mode == "round-header") return migrate_or_report(runtime, Fault::round_header);
  if (mode == "honest-migration") return migrate_or_report(runtime, Fault::none);
  if (mode == "stray-tags") return strays_in_run(runtime);
  if (mode == "stray-tags-at-end") return strays_at_end(runtime);
  if (mode == "stray-tags-in-migration") return migrate_or_report(runtime, Fault::stray_tags, 512);
  if (mode == "stray-flood-in-migration") {
    strays = 20000;
    return migrate_or_report(runtime, Fault::stray_tags, 512);
  }
  if (mode == "stuck-at-balance") {
    auto walkers = kodo::Collection<Walker>::create(runtime, {2, 1, 1});
    kodo::balance_points(walkers, [](const kodo::BalanceInput& in) { return in.owners; });
    if (runtime.rank() == 1) fault = Fault::stuck_at_balance;
    walkers.broadcast_local<&Walker::walk>();
    runtime.run();
    std::printf("rank %d: unexpected: the balance point passed\n", runtime.rank());
    return 0;
  }
  if (mode == "absent-at-create") {
    if (runtime.rank() == 1) sleep(60);
    auto walkers = kodo::Collection<Walker>::create(runtime, {2, 1, 1});
    std::printf("rank %d: unexpected: the collection was created\n", runtime.rank());
    return 0;
  }
  if (mode == "absent-at-end") {
    if (runtime.rank() == 1) sleep(60);
    return 0;  // rank 0 waits in the runtime's end for rank 1
  }
  std::fputs(
      "usage: faulty_peer_program drop-header|drop-filled|drop-ask|ask-number|ask-slot|"
      "filled-number|filled-slot|stuck-at-balance|"
      "absent-at-start|absent-at-create|absent-at-end|claim-header|round-header|stray-tags|"
      "stray-tags-in-migration|stray-flood-in-migration|stray-tags-at-end|honest-migration\n",
      stderr);
  return 2;
}
