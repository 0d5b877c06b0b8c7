// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The scheduler: owns a rank's message queue and its collections, and runs the loop
// that moves messages, channel completions and device completions to work units.
// It composes the components that do the rest: the transport (UCX), the completion
// engine, the termination detector, the reduction tree, stream draining and fault
// checks. Messages from other ranks are checked here against what only this layer
// knows (collection, unit, handler) before anything is allocated or called.

#include <kodo/backends/detail/recording.hpp>
#include <kodo/backends/stream.hpp>
#include <kodo/comm/channel.hpp>
#include <kodo/comm/detail/transport_staging.hpp>
#include <kodo/comm/detail/view_pool.hpp>
#include <kodo/comm/detail/wire.hpp>
#include <kodo/core/detail/recycled.hpp>
#include <kodo/tasking/scheduling/detail/completion_engine.hpp>
#include <kodo/tasking/scheduling/detail/load_timing.hpp>
#include <kodo/tasking/scheduling/detail/reductions.hpp>
#include <kodo/tasking/scheduling/detail/stall_watch.hpp>
#include <kodo/tasking/scheduling/detail/stream_drain.hpp>
#include <kodo/tasking/scheduling/detail/termination.hpp>
#include <kodo/tasking/scheduling/detail/trace.hpp>
#include <kodo/tasking/scheduling/detail/watchdog.hpp>
#include <kodo/tasking/tasks/detail/batch_launcher.hpp>
#include <kodo/tasking/tasks/detail/task_list.hpp>
#include <kodo/tasking/units/detail/collection_base.hpp>

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kodo::detail {

class UcxTransport;
// kodo's receive tests and fuzz (test/test_access.hpp) hand a running rank forged input
// and need each refusal as an exception, not the end of the job: they run what the
// transport queued through dispatch_checked. The kernel-batch tests count and drop the
// batches. Nothing else of theirs needs a friend.
struct TestAccess;

class Scheduler final : public ChannelHost {
 public:
  // `comm` carries the transport's bootstrap, `wave_comm` the termination waves only.
  // `streams_may_wait`: whether streams may wait for other ranks' transfers on the device
  // (not where ranks share a GPU). `quiet`: no start-up line (the program only answers
  // --help or --version).
  Scheduler(MPI_Comm comm, MPI_Comm wave_comm, StreamPool& streams, bool streams_may_wait,
            bool quiet = false);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  int rank() const override { return rank_; }
  int size() const { return size_; }

  // --- collections (created collectively, in the same order on every rank) --------
  std::uint32_t collection_count() const { return static_cast<std::uint32_t>(collections_.size()); }
  void add_collection(std::unique_ptr<CollectionBase> collection);
  CollectionBase& collection(std::uint32_t id) { return *collections_.at(id); }

  // --- work --------------------------------------------------------------------
  // Queues `message` for `rank` (this rank's own queue, or the transport).
  void post(int rank, Message&& message) override;
  // A local unit's contribution to a reduction round; an error in it ends the job (only
  // this rank sees it).
  void contribute(CollectionBase& c, std::int64_t slot, std::uint64_t round, HandlerId reducer,
                  Bytes value);
  // The main program's callback for the results of `c` (before run()), of the rounds of
  // the named reduction `name` only where it is not null.
  void on_reduced(CollectionBase& c, const std::type_info& type,
                  ReductionTree::ResultCallback callback, const std::type_info* name = nullptr);
  const ReductionTree& reductions() const { return reductions_; }
  // The rank's coroutine tasks (task.hpp): run() is not done while one waits.
  TaskList& tasks() { return tasks_; }
  void when_done(CompletionSource& source, std::function<void()> continuation);
  // Launches `batch` at the end of this turn (with the other units' batches), then runs
  // `then` (kernel_batch.hpp).
  void launch(KernelBatch& batch, std::function<void()> then) {
    batches_.add(batch, std::move(then));
  }
  // Runs until the whole job is quiet (see termination.hpp); throws kodo::Error on
  // every rank when the job went quiet with reductions incomplete or tasks waiting, or
  // with more messages processed than sent.
  void run();
  // Whether run() is under way (the caller is an entry method or a continuation).
  bool running() const { return running_; }
  // The optional trace (KODO_TRACE), for components that add spans of their own.
  Trace& trace() { return trace_; }
  // Collective: completes what can be completed of the transport and drops what was
  // never run. Before Kokkos finalizes: queued work may hold views.
  void shutdown();

  // --- ChannelHost ---------------------------------------------------------------
  void expect_event() override { termination_.count_sent(); }
  void expect_event(int rank) override { termination_.count_sent(rank); }
  void queue_callback(std::function<void()> callback) override;
  void queue_callback(std::function<void(std::size_t)> callback, std::size_t value) override;
  void when_done(Stream& stream, std::function<void()> continuation) override {
    when_done(static_cast<CompletionSource&>(stream), std::move(continuation));
  }
  UcxTransport& transport() override { return *transport_; }
  NodeChannels* node() override { return node_.get(); }
  ChannelRegistry& channels() override { return *channels_; }
  ViewPool& pool() override { return pool_; }
  TransportStaging& transport_staging() override { return transport_staging_; }
  [[noreturn]] void fail_with_peer(int rank, const std::string& what) override;
  Recording* recording() override { return recording_.get(); }
  Watchdog& watchdog() { return watchdog_; }
  RecordingReport recording_report() const {
    return recording_ ? recording_->report() : RecordingReport{false, "the runtime has ended"};
  }

 private:
  friend struct TestAccess;
  void queue_local(std::unique_ptr<Call> call);  // a rank-local continuation
  bool turn();                                   // one pass of the loop; whether anything happened
  std::size_t turn_pieces() const;               // what a turn has left, up to 2 (recording)
  void record_from_here(bool turn_start);        // a recording, if what is left is worth one
  void poll_engine();                            // runs device-work continuations that are due
  void fold_device_loads(bool all);              // device_loads_.fold, or the job ends
  // Looks at the termination wave; `idle_for` is how long this rank has been idle.
  bool job_is_quiet(std::chrono::steady_clock::duration idle_for);
  // With the job quiet and tasks at balance points somewhere: balances each collection
  // whose units all reached one, then calls the entry methods that go on from there.
  void balance_parked();
  std::string check_parked_reports(const std::vector<std::uint64_t>& reports, std::uint64_t wave,
                                   std::vector<std::uint64_t>& parked) const;
  // Destroys the frames of tasks at balance points (a run() that failed, shutdown).
  void drop_parked();
  std::uint64_t parked_tasks() const;
  void report_stall(const TerminationDetector::Wave& wave);  // and throws with KODO_STALL_EXIT
  void report_alone(std::chrono::steady_clock::duration idle_for);  // ... no wave comes back
  void dispatch(Message& message);                                  // ends the job on any error
  void dispatch_checked(Message& message);  // throws kodo::Error naming what is wrong
  void invoke(Message& message);
  void on_link_announced(const Message& message);
  void on_ring_message(const Message& message);
  void check_link_room() const;  // throws past the bound on announced links
  void start_node_channels(bool streams_may_wait, bool quiet);
  // For a call from another rank: its collection and unit, checked; throws kodo::Error
  // naming the bad field.
  CollectionBase& checked_target(const MessageHeader& h, std::int64_t& slot);
  CollectionBase& checked_collection(const MessageHeader& h);
  std::vector<Segment> prepare(Message& message, std::uint64_t view_data);
  void land_eager(Message&& message, const std::vector<Segment>& into, const std::byte* data);
  void admit(const MessageHeader& h, std::uint64_t bytes);
  // What a dispatched message is called in traces and profilers' regions.
  static const std::string& work_name(const Message& message);

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  StreamPool& streams_;
  // Each turn's device work as one graph (KODO_RECORD); before the members whose calls
  // it watches, so it outlives them.
  std::unique_ptr<Recording> recording_;
  bool running_ = false;
  std::vector<std::unique_ptr<CollectionBase>> collections_;
  RecycledDeque<Message> queue_;  // arrival order, local and remote alike
  CompletionEngine engine_;
  TerminationDetector termination_;
  ReductionTree reductions_;
  TaskList tasks_;
  BatchLauncher batches_;                // units' kernel batches, launched at the end of each turn
  std::string tasks_at_wave_ = " none";  // what the tasks awaited as the latest wave started
  std::uint64_t processed_at_description_ = 0;
  std::uint64_t parked_at_quiet_ = 0;  // tasks at balance points in the quiet wave, job-wide
  StreamDrain drain_;
  StallWatch stalls_;
  // KODO_STALL_SECONDS (600 when unset) and KODO_STALL_EXIT.
  std::optional<std::chrono::duration<double>> stall_limit_;
  bool stall_exit_ = false, stall_reported_ = false;
  Watchdog
      watchdog_;  // a loop that stops turning in run(), a phase that waits (KODO_STALL_SECONDS)
  std::shared_ptr<ChannelRegistry> channels_ = make_channel_registry();
  Trace trace_;    // KODO_TRACE
  ViewPool pool_;  // the views of calls from other ranks (KODO_CALL_POOL_BYTES)
  DeviceLoads device_loads_{recording_.get()};  // units' device time, where loads are measured
  TransportStaging transport_staging_;          // a migration's views (transport_staging.hpp)
  std::unique_ptr<UcxTransport> transport_;
  std::unique_ptr<NodeChannels> node_;  // same-node channels (KODO_CHANNELS)
};

}  // namespace kodo::detail
