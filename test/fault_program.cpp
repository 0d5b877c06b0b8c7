// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Faults that must end the whole job with an error naming the cause, never a hang:
//   fault_program truncate           a channel message larger than the receiving view
//   fault_program short              a channel message that does not fill a receive
//                                    whose completion takes no count
//   fault_program lost-send          a channel send whose receive is never posted (run
//                                    with KODO_STALL_SECONDS and KODO_STALL_EXIT=1)
//   fault_program task-throws        an exception leaves a unit's task (a coroutine)
//   fault_program ring-order         a receive ring whose transfers are released out of
//                                    order
//   fault_program peer-exit          a rank dies while others are sending to it
//   fault_program ring-truncate      a transfer larger than a receive ring's buffers (on
//                                    2 ranks of a node: the same-node route's sender
//                                    finds it)
//   fault_program ring-peer-exit     the rank a same-node ring waits on exits (status 0)
//   fault_program ring-wait-peer-exit
//                                    ... while a stream waits for its next transfer
//   fault_program ring-wait-timeout  a stream waits for a transfer that never comes (run
//                                    with KODO_DEVICE_WAIT_SECONDS=1)
//   fault_program different-program  rank 1 has an entry method the others lack
//   fault_program mismatched-shapes  units contribute vectors of different lengths to
//                                    one reduction round
//   fault_program result-type        the main program asks for results of another type
//                                    than the reduction's (on_reduced)
//   fault_program blocked            an entry method blocks in an MPI collective (run
//                                    with KODO_STALL_SECONDS and KODO_STALL_EXIT=1)
//   fault_program comm-inside-run    an entry method asks for Runtime::comm()
//   fault_program link-flood         rank 1 (as rank 0 receives it) announces channel
//                                    links without end (2 ranks)
//   fault_program migrate-without-a-peer
//                                    rank 0 moves units in a migration rank 1 never
//                                    joins (2 ranks; KODO_STALL_SECONDS, KODO_STALL_EXIT=1)
//   fault_program checkpoint-without-a-peer
//                                    rank 0 writes a checkpoint that rank 1 never joins
//                                    (2 ranks; run with KODO_STALL_SECONDS and
//                                    KODO_STALL_EXIT=1)
//   fault_program device-fault       unit 0's kernel traps on the device in its task's
//                                    fourth step (recorded turns; a device build: the
//                                    host backend has no device to fault, and says so)
//   fault_program failed-source      rank 0 awaits work that never completes and whose
//                                    source reports a failure when asked, as a faulted
//                                    device's stream does (any backend)
// Units are laid out so that, on two ranks, unit 0 is on rank 0 and unit 1 on rank 1;
// on one rank both are local (the same-rank path).

#include "failed_source.hpp"
#include "test_access.hpp"

#include <kodo/backends/detail/native.hpp>
#include <kodo/kodo.hpp>
#include <kodo/tasking/units/detail/registry.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

// MPI_COMM_WORLD as a port keeps it: duplicated before run() (blocked).
MPI_Comm kept_world = MPI_COMM_NULL;

// Counts in v(0); at count `at` the kernel traps (a device fault).
void count_or_trap(const kodo::ExecutionSpace& space, const Kokkos::View<std::int64_t*>& v,
                   std::int64_t at) {
  Kokkos::parallel_for(
      "fault_program::count_or_trap", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, 1),
      KOKKOS_LAMBDA(std::int64_t) {
        if (++v(0) == at) Kokkos::abort("fault_program: a device fault, as asked");
      });
}

class Peer : public kodo::WorkUnit<Peer> {
 public:
  explicit Peer(const kodo::UnitInit<Peer>& init)
      : WorkUnit(init), link_(open_channel(streams().communication(0), {1 - init.index.x, 0, 0})) {}

  void truncate() {
    if (index().x == 0) {
      link_.send(Kokkos::View<double*>("big", 100));
    } else {
      small_ = Kokkos::View<double*>("small", 10);
      link_.recv(small_, [] { std::puts("unexpected: the oversized message was accepted"); });
    }
  }

  void short_message() {
    if (index().x == 0) {
      link_.send(Kokkos::View<double*>("short", 6));
    } else {
      small_ = Kokkos::View<double*>("small", 10);
      link_.recv(small_, [] { std::puts("unexpected: the short message was accepted"); });
    }
  }

  // A task that fails once its peer's data is in (through the channel on 2 ranks).
  kodo::Task task_throws() {
    if (index().x == 0) {
      link_.send(Kokkos::View<double*>("data", 4));
      co_return;
    }
    small_ = Kokkos::View<double*>("in", 4);
    co_await kodo::receive(link_, small_);
    throw std::runtime_error("the task's own failure");
  }

  kodo::Task device_fault() {
    kodo::Stream& stream = streams().compute(0);
    Kokkos::View<std::int64_t*> count("count", 1);
    for (int step = 0; step < 10; ++step) {
      count_or_trap(stream.space(), count, index().x == 0 ? 4 : -1);
      co_await when_done(stream);
    }
    if (index().x == 0) std::puts("unexpected: the job went on past a device fault");
  }

  void lost_send() {
    if (index().x == 0) link_.send(Kokkos::View<double*>("lost", 10));
  }

  void ring_order() {
    if (index().x == 0) {
      link_.send(Kokkos::View<double*>("first", 4));
      link_.send(Kokkos::View<double*>("second", 4));
      return;
    }
    using View = Kokkos::View<double*>;
    ring_ = link_.open_ring(std::vector{View("a", 4), View("b", 4)},
                            [this](const kodo::Arrival<View>& a) {
                              if (a.transfer == 1) ring_.release(1);  // transfer 0 is still held
                            });
  }

  void ring_truncate() {
    using View = Kokkos::View<double*>;
    if (index().x == 0) {
      link_.send(View("big", 100));
    } else {
      ring_ = link_.open_ring(std::vector{View("a", 10), View("b", 10)},
                              [](const kodo::Arrival<View>&) {
                                std::puts("unexpected: the oversized transfer was accepted");
                              });
    }
  }

  // Unit 0's ring waits on unit 1, whose rank leaves without a word (or a failure).
  void ring_peer_exit() {
    using View = Kokkos::View<double*>;
    if (index().x == 1) {
      if (collection().runtime().size() > 1) _exit(0);
      return;
    }
    ring_ = link_.open_ring(std::vector{View("a", 4)}, [](const kodo::Arrival<View>&) {
      std::puts("unexpected: a transfer arrived");
    });
  }

  // Unit 0 keeps calling unit 1; the rank holding unit 1 dies on the first call.
  void ping(int n) {
    if (index().x == 1) {
      if (collection().runtime().size() > 1) _exit(3);
      return;
    }
    unit({1, 0, 0}).send<&Peer::ping>(n + 1);
    unit({0, 0, 0}).send<&Peer::ping>(n + 1);
  }

  // The MPI habit a port kept: a collective inside an entry method. Unit 0 waits there
  // for a rank that never joins (on one rank, for unit 1's call, which never runs).
  void blocked() {
    if (index().x != 0) return;
    if (collection().runtime().size() == 1) {
      for (;;) pause();
    }
    MPI_Barrier(kept_world);
  }

  // The same habit through kodo's communicator: refused at once.
  void comm_inside_run() {
    if (index().x == 0) MPI_Barrier(collection().runtime().comm());
  }

 private:
  kodo::Channel link_;
  Kokkos::View<double*> small_;
  kodo::ReceiveRing<Kokkos::View<double*>> ring_;
};

// Unit 1 sends unit 0 one transfer and then (its rank) exits, or stays silent; unit 0's
// stream waits for the second one. The ring opens with the channel (so it may take the
// same-node route).
class RingWaiter : public kodo::WorkUnit<RingWaiter> {
 public:
  using View = Kokkos::View<double*>;
  explicit RingWaiter(const kodo::UnitInit<RingWaiter>& init)
      : WorkUnit(init), link_(open_channel(streams().compute(0), {1 - init.index.x, 0, 0})) {
    if (index().x == 0)
      ring_ = link_.open_ring(std::vector{View("a", 4), View("b", 4)},
                              [this](const kodo::Arrival<View>& a) { first(a.transfer); });
  }
  void start(bool exit_after_send) {
    if (index().x != 1) return;
    one_ = View("one", 4);
    link_.send(one_, kodo::data_ready, [this, exit_after_send] {
      if (exit_after_send && collection().runtime().size() > 1) _exit(0);
    });
  }

 private:
  void first(std::uint64_t transfer) {
    if (transfer != 0) return;
    ring_.release(0);
    if (!ring_.waits_on_streams()) {
      std::puts("the same-node route was not taken");
      std::exit(5);
    }
    ring_.wait(streams().compute(0), 1);
    std::puts("unexpected: the wait for transfer 1 ended");
  }
  kodo::Channel link_;
  kodo::ReceiveRing<View> ring_;
  View one_;
};

// Unit x contributes a vector of 2 + x elements, or the scalar x.
class Contributor : public kodo::WorkUnit<Contributor> {
 public:
  explicit Contributor(const kodo::UnitInit<Contributor>& init) : WorkUnit(init) {}
  void vector() { contribute(std::vector<double>(static_cast<std::size_t>(2 + index().x), 1.0)); }
  void scalar() { contribute(std::int64_t{index().x}); }
};

// A handler only one rank has: the ranks run different programs.
int extra_handler = 0;
int run_different_programs(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 1)
    kodo::detail::register_handler("an entry method only rank 1 has",
                                   kodo::detail::HandlerKind::entry, typeid(int), &extra_handler);
  try {
    kodo::Runtime runtime(argc, argv);
    std::puts("unexpected: the runtime started");
  } catch (const kodo::Error& e) {
    kodo::print_error(kodo::detail::cat("rank ", rank, ": ", e.what()));
    MPI_Finalize();
    return 1;
  }
  MPI_Finalize();
  return 0;
}

// The review's flood (issue 31): 200,000 link announcements grew a rank by 100 MB and
// the job went on. Rank 0 takes announcements from rank 1 of ever new links of its unit
// 0 until it refuses one; it must, long before.
int flood_links(kodo::Runtime& runtime, kodo::Collection<Peer>& units) {
  if (runtime.size() != 2) return 2;
  if (runtime.rank() == 0) {
    for (std::int32_t port = 0; port < (1 << 20); ++port) {
      const kodo::detail::LinkAnnouncement a{{units.id(), 1, 0, port}, 1u, 1u, false};
      try {
        kodo::detail::TestAccess::dispatch_from_wire(runtime,
                                                     kodo::detail::announcement_message(a, 1));
      } catch (const kodo::Error& e) {
        kodo::print_error(kodo::detail::cat("rank 0 after ", port, " announcements: ", e.what()));
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
    std::puts("unexpected: 2^20 announcements were taken");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return 0;
}

// A unit with a state, for a checkpoint.
struct Saved : kodo::WorkUnit<Saved> {
  explicit Saved(const kodo::UnitInit<Saved>& init) : WorkUnit(init) {}
  template <class State>
  void state(State& s) {
    s("value", value);
  }
  int value = 0;
};

// Rank 0 waits in the checkpoint's first collective for a rank that is elsewhere: its
// watchdog names the phase and ends the job (rank 1 would sleep on).
int checkpoint_without_a_peer(kodo::Runtime& runtime) {
  auto saved = kodo::Collection<Saved>::create(runtime, {2, 1, 1});
  if (runtime.rank() == 0) {
    // In the test's working directory (rank 0 is ended before it could remove it).
    const auto dir = std::filesystem::current_path() /
                     ("fault_checkpoint_" + std::to_string(getpid()));
    kodo::write_checkpoint(runtime, dir.string(), {"fault_program", {}}, saved);
    std::puts("unexpected: the checkpoint was written");
    return 0;
  }
  sleep(60);
  return 0;
}

// Rank 0 starts a migration (whose first step runs the job until it is quiet) that rank 1
// never joins: no termination wave comes back, and rank 0 says so and ends the job.
int migrate_without_a_peer(kodo::Runtime& runtime) {
  auto saved = kodo::Collection<Saved>::create(runtime, {2, 1, 1});
  if (runtime.rank() == 0) {
    try {
      kodo::migrate(saved, {0, 0});
    } catch (const kodo::Error& e) {
      kodo::print_error(kodo::detail::cat("rank 0: ", e.what()));
      return 1;
    }
    std::puts("unexpected: the migration finished");
    return 0;
  }
  sleep(60);
  return 0;
}

constexpr const char* kUsage =
    "usage: fault_program truncate|short|lost-send|ring-order|peer-exit|different-program|\n"
    "                     mismatched-shapes|result-type|blocked|comm-inside-run|\n"
    "                     checkpoint-without-a-peer|migrate-without-a-peer|device-fault|\n"
    "                     failed-source\n"
    "Makes the fault named (see the top of fault_program.cpp); the job must end with an\n"
    "error naming it.\n";

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "different-program") return run_different_programs(argc, argv);
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(kUsage)) return 0;
  auto units = kodo::Collection<Peer>::create(runtime, {2, 1, 1});
  auto contributors = kodo::Collection<Contributor>::create(runtime, {2, 1, 1});
  if (mode == "truncate") {
    units.broadcast_local<&Peer::truncate>();
  } else if (mode == "short") {
    units.broadcast_local<&Peer::short_message>();
  } else if (mode == "lost-send") {
    units.broadcast_local<&Peer::lost_send>();
  } else if (mode == "task-throws") {
    units.broadcast_local<&Peer::task_throws>();
  } else if (mode == "device-fault") {
    if (std::string(kodo::backend::name()) == "host") {
      std::puts("fault_program: no device here, nothing to fault");
      return 0;
    }
    units.broadcast_local<&Peer::device_fault>();
  } else if (mode == "failed-source") {
    static FailedSource source("an injected device failure");  // outlives the runtime
    if (runtime.rank() == 0)
      runtime.when_done(source, [] { std::puts("unexpected: the failed work completed"); });
  } else if (mode == "ring-order") {
    units.broadcast_local<&Peer::ring_order>();
  } else if (mode == "ring-truncate") {
    units.broadcast_local<&Peer::ring_truncate>();
  } else if (mode == "ring-peer-exit") {
    units.broadcast_local<&Peer::ring_peer_exit>();
  } else if (mode == "ring-wait-peer-exit" || mode == "ring-wait-timeout") {
    auto waiters = kodo::Collection<RingWaiter>::create(runtime, {2, 1, 1});
    waiters.broadcast_local<&RingWaiter::start>(mode == "ring-wait-peer-exit");
    runtime.run();
  } else if (mode == "blocked") {
    MPI_Comm_dup(MPI_COMM_WORLD, &kept_world);
    units.broadcast_local<&Peer::blocked>();
  } else if (mode == "link-flood") {
    return flood_links(runtime, units);
  } else if (mode == "migrate-without-a-peer") {
    return migrate_without_a_peer(runtime);
  } else if (mode == "checkpoint-without-a-peer") {
    return checkpoint_without_a_peer(runtime);
  } else if (mode == "comm-inside-run") {
    units.broadcast_local<&Peer::comm_inside_run>();
  } else if (mode == "peer-exit") {
    if (runtime.rank() == 0) units[{0, 0, 0}].send<&Peer::ping>(0);
  } else if (mode == "mismatched-shapes") {
    contributors.broadcast_local<&Contributor::vector>();
  } else if (mode == "result-type") {
    contributors.on_reduced<double>([](std::uint64_t, const double&) {
      std::puts("unexpected: a result of the wrong type was delivered");
    });
    contributors.broadcast_local<&Contributor::scalar>();
  } else {
    std::fputs(kUsage, stderr);
    return 2;
  }
  try {
    runtime.run();
  } catch (const kodo::Error& e) {
    kodo::print_error(kodo::detail::cat("rank ", runtime.rank(), ": ", e.what()));
    return 1;
  }
  std::puts("unexpected: the job finished");
  return 0;
}
