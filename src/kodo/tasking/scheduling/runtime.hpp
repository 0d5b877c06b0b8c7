// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// The per-rank runtime: starts and stops MPI, Kokkos, the rank's GPU, streams and
/// transport, and runs the scheduler. What units need of it reaches them through
/// WorkUnit (work_unit.hpp); the main program uses what is public here.

#include <kodo/backends/placement.hpp>
#include <kodo/backends/recording.hpp>
#include <kodo/backends/stream.hpp>
#include <kodo/core/error.hpp>

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <typeinfo>
#include <vector>

namespace kodo {

namespace detail {
class Scheduler;
class CollectionBase;
class ChannelHost;
struct Message;
struct RuntimeAccess;  // what checkpoints and migration use of it (state_records.hpp)
class RankProgram;     // step programs (step_program.hpp)
class TaskList;        // coroutine tasks (task_list.hpp)
}  // namespace detail

class KernelBatch;
template <class U>
class Collection;
template <class U>
class UnitRef;
template <class D>
class WorkUnit;

/// The per-rank runtime: one per process, constructed by every rank's main program
/// (see this file's description).
class Runtime {
 public:
  /// Initialises MPI (unless the program already did), places the rank on its GPU (see
  /// placement.hpp), initialises Kokkos (unless the program already did) and UCX, and
  /// checks that every rank runs the same program (the same entry methods and
  /// reducers). One Runtime may exist at a time; another may follow once it is gone
  /// when the program owns MPI and Kokkos (a Runtime finalizes only what it started).
  /// Throws kodo::Error, on every rank, when a rank cannot start.
  Runtime(int& argc, char**& argv);
  /// Shuts down what the constructor started, after destroying every collection.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Whether the command line asks for the program's usage: --help (-h is left to the
  /// program, which may mean something else by it). Kokkos never sees --help (it would
  /// print its own options on every rank). --kokkos-help makes
  /// the constructor print Kokkos' options on rank 0 and end the process, with status 0,
  /// on every rank (Kokkos 4.7 and later end the process after printing them anyway).
  bool help_requested() const { return help_requested_; }
  /// Whether the command line asks for kodo's version: --version.
  bool version_requested() const { return version_requested_; }
  /// The way for a program to answer --help and --version. Call it right after
  /// constructing the runtime and return 0 from main when it returns true (it does on
  /// every rank):
  /// ```
  ///   if (runtime.print_usage_if_requested("usage: my_program [-n N]\n")) return 0;
  /// ```
  /// For --help rank 0 prints `usage` and lines saying how to see Kokkos' options and
  /// kodo's settings; for --version, version_line(). Returns false, printing nothing,
  /// when neither was asked for.
  bool print_usage_if_requested(std::string_view usage) const;
  /// The same for a program with a usage flag of its own, such as -h: `asked` says it was
  /// given (every rank reads the same command line, so every rank passes the same value).
  bool print_usage_if_requested(std::string_view usage, bool asked) const;
  /// What the program runs with, in one line: "kodo 0.2.0 (commit 0123456789ab):
  /// backend cuda, Kokkos 4.6.99, UCX 1.18.1, MPI 3.1 (Open MPI v5.0.7), 2 ranks". Rank 0
  /// prints it to standard error at start-up (unless --help or --version was asked for).
  std::string version_line() const;

  /// This rank, and the number of ranks.
  ///@{
  int rank() const { return rank_; }
  int size() const { return size_; }
  ///@}
  /// The communicator of this runtime's ranks (a duplicate of MPI_COMM_WORLD), for the
  /// main program's own collectives, between run() calls. Inside run() (an entry method,
  /// a continuation, an on_reduced callback) it throws kodo::Error: a collective there
  /// blocks the rank's loop until every rank joins, which they may never do (use the
  /// units' all_reduce or contribute).
  MPI_Comm comm() const;

  /// Where this rank runs (placement.hpp).
  const Placement& placement() const { return placement_; }
  /// This rank's streams: KODO_STREAMS (default 4) compute and as many communication
  /// streams.
  StreamPool& streams() { return *streams_; }

  /// Runs `continuation` from the scheduler loop once the work enqueued on `source` so
  /// far is done. The rank never waits for it; pending continuations keep run() going.
  void when_done(CompletionSource& source, std::function<void()> continuation);
  /// Launches `batch`'s kernels at the end of the scheduler's turn, with the same kernels
  /// of the rank's other batches, then runs `then` from the scheduler loop
  /// (kernel_batch.hpp; units call WorkUnit::launch).
  void launch(KernelBatch& batch, std::function<void()> then);

  /// Runs the scheduler until the whole job is quiescent: no message queued or in
  /// flight, no device work pending on any stream of any rank's pool (work on other
  /// Kokkos instances is the caller's to fence) and no unit's task (task.hpp) still
  /// running. Returns on every rank together. Throws kodo::Error if the job went quiet
  /// with a reduction that some units never contributed to, or with tasks waiting.
  void run();
  /// What this rank's recording of its turns did so far (recording.hpp): whether it
  /// records, why not, and how many turns ran as one device program.
  RecordingReport recording() const;

 private:
  template <class U>
  friend class Collection;
  template <class U>
  friend class UnitRef;
  template <class D>
  friend class WorkUnit;
  friend struct detail::RuntimeAccess;
  friend class detail::RankProgram;
  // What collections and units use of the scheduler (scheduler.hpp says more).
  detail::Scheduler& scheduler() { return *scheduler_; }
  std::uint32_t collection_count() const;
  // Takes a newly built collection; returns once every rank has built it, so no
  // message can reach a rank before the collection it addresses exists there.
  void add_collection(std::unique_ptr<detail::CollectionBase> collection);
  detail::CollectionBase& collection(std::uint32_t id);
  void post(int rank, detail::Message&& message);
  void contribute(detail::CollectionBase& c, std::int64_t slot, std::uint64_t round,
                  std::uint64_t reducer, std::vector<std::byte> value);
  // Reduction results for the main program (Collection::on_reduced and reduced): of every
  // round, or of the rounds of the named reduction `name` (reduction_ops.hpp).
  using ReducedCallback = std::function<void(std::uint64_t, const std::vector<std::byte>&)>;
  void on_reduced(detail::CollectionBase& c, const std::type_info& type, ReducedCallback callback,
                  const std::type_info* name = nullptr);
  const std::vector<std::byte>& reduced(detail::CollectionBase& c, const std::type_info& type,
                                        const std::type_info* name = nullptr);
  detail::ChannelHost& channel_host();
  detail::TaskList& tasks();  // the rank's coroutine tasks (task.hpp)
  // Pinned host memory of at least one byte, reused once no copy of it is alive
  // (freeing pinned memory waits for the whole device).
  Kokkos::View<std::byte*, Kokkos::SharedHostPinnedSpace> pinned_staging(std::size_t bytes);

  void start(int& argc, char**& argv);
  void stop();
  void print_placement() const;  // KODO_PRINT_PLACEMENT=1

  int rank_ = 0, size_ = 1;
  MPI_Comm comm_ = MPI_COMM_NULL;       // bootstrap, collection creation, the program's
  MPI_Comm wave_comm_ = MPI_COMM_NULL;  // termination waves only
  bool own_mpi_ = false, own_kokkos_ = false;
  bool help_requested_ = false, version_requested_ = false;
  Placement placement_;
  std::unique_ptr<StreamPool> streams_;
  std::unique_ptr<detail::Scheduler> scheduler_;
};

}  // namespace kodo
