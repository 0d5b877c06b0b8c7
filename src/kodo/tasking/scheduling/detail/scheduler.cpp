// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/scheduling/detail/scheduler.hpp>

#include <kodo/backends/detail/native.hpp>
#include <kodo/backends/detail/tool_region.hpp>
#include <kodo/comm/detail/node_channels.hpp>
#include <kodo/comm/detail/transport_report.hpp>
#include <kodo/comm/detail/ucx_transport.hpp>
#include <kodo/core/detail/agree.hpp>
#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/core/detail/recycled.hpp>
#include <kodo/core/settings.hpp>
#include <kodo/tasking/units/detail/entry.hpp>

#include <array>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <string_view>
#include <thread>

namespace kodo::detail {
namespace {

// Messages dispatched between two looks at UCX: enough to amortise the progress call,
// few enough that arrivals are not left waiting behind a long local queue.
constexpr int kDispatchBatch = 64;
// A wave is looked at once every few idle turns of the loop: an MPI progress call costs
// more than a UCX one, and arrivals should not wait behind it. A rank idle for long
// yields the processor between turns (for ranks sharing cores); a short wait is spent
// polling, so a message that arrives soon is seen at once.
constexpr unsigned kWaveTestInterval = 16, kSpinTurns = 1024;
// Units' calls whose device time is pending before the reached ones are added up.
constexpr std::size_t kFoldDeviceLoadsAt = 256;

int rank_in(MPI_Comm comm) {
  int rank = 0;
  KODO_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  return rank;
}
int size_of(MPI_Comm comm) {
  int size = 0;
  KODO_MPI_CHECK(MPI_Comm_size(comm, &size));
  return size;
}

std::unique_ptr<Recording> make_recording(StreamPool& streams, int rank) {
  std::string why_off;
  const Recording::Mode mode = Recording::mode_from_settings(why_off);
  return std::make_unique<Recording>(streams, mode, std::move(why_off), rank);
}

}  // namespace

Scheduler::Scheduler(MPI_Comm comm, MPI_Comm wave_comm, StreamPool& streams, bool streams_may_wait,
                     bool quiet)
    : comm_(comm),
      rank_(rank_in(comm)),
      size_(size_of(comm)),
      streams_(streams),
      recording_(make_recording(streams, rank_)),
      termination_(wave_comm),
      reductions_(rank_, [this](int rank, Message&& m) { post(rank, std::move(m)); }),
      stall_limit_(seconds_setting("KODO_STALL_SECONDS").value_or(kStallSecondsUnset)),
      stall_exit_(flag_setting("KODO_STALL_EXIT")),
      watchdog_(stall_limit_ ? std::optional(stall_limit_->count()) : std::nullopt, stall_exit_,
                rank_),
      pool_(ViewPool::idle_bound_from_environment()) {
  // Collective from here on (addresses, node segments): a rank that never gets here, or
  // stops on the way, holds the others.
  const WatchdogPhase watching(watchdog_, "starting the runtime (kodo::Runtime)");
  transport_ = std::make_unique<UcxTransport>(
      comm, [this](Message&& m) { queue_.push_back(std::move(m)); },
      [this](Message& m, std::uint64_t view_data) { return prepare(m, view_data); },
      [this](Message&& m, const std::vector<Segment>& into, const std::byte* data) {
        land_eager(std::move(m), into, data);
      },
      [this](const MessageHeader& h, std::uint64_t bytes) { admit(h, bytes); });
  start_node_channels(streams_may_wait, quiet);
  if (size_ > 1) {
    // Collective: every rank takes part; rank 0 says which transports UCX chose.
    const TransportsInUse in_use = transports_in_use(*transport_, comm_);
    if (rank_ == 0 && !quiet)
      for (const std::string& line : describe_transports(in_use)) print_error(line);
  }
}

// Same-node channels (KODO_CHANNELS), for jobs of several ranks; every rank must ask for
// the same, and says nothing different at start-up.
void Scheduler::start_node_channels(bool streams_may_wait, bool quiet) {
  if (size_ == 1) return;
  // Every rank has the same valid settings (Runtime checked them at start-up).
  const ChannelSelection selection = parse_channel_selection(choice_setting("KODO_CHANNELS"));
  // Words only on GPUs; the host backend's data travels through the segment too.
  const std::uint64_t bytes =
      bytes_setting("KODO_NODE_SEGMENT_BYTES", host_build ? 8 << 20 : 1 << 20);
  if (selection != ChannelSelection::ucx)
    node_ = std::make_unique<NodeChannels>(comm_, selection, bytes, streams_may_wait);
  if (rank_ == 0 && !quiet)
    print_error(cat("kodo: channels: ",
                    selection == ChannelSelection::ucx
                        ? "UCX between all ranks"
                        : cat("receive rings between ranks of one node by the same-node route (",
                              host_build ? "copies through shared memory"
                                         : "device copies into the peer's mapped buffers",
                              "), UCX otherwise"),
                    " [KODO_CHANNELS=", to_string(selection), "]"));
}

Scheduler::~Scheduler() = default;

void Scheduler::shutdown() {
  // The transport goes first: what still arrives while it shuts down finds the
  // collections it names. Then the units, which own Kokkos views and channels.
  std::optional<WatchdogPhase> watching;  // while the ranks wait for each other
  watching.emplace(watchdog_, "ending the runtime (kodo::Runtime's destructor)");
  if (transport_) {
    std::array<std::uint64_t, 2> local{termination_.sent(), termination_.processed()}, total{};
    KODO_MPI_CHECK(MPI_Allreduce(local.data(), total.data(), 2, MPI_UINT64_T, MPI_SUM, comm_));
    if (rank_ == 0 && total[0] > total[1])
      print_error(cat("kodo: warning: ", total[0] - total[1],
                      " message(s) were sent but never run (call run() before the runtime ends)"));
    transport_->shutdown(total[0] == total[1]);
  }
  if (node_) {
    // Waits on streams for transfers never sent end; mapped ring buffers are unmapped
    // everywhere before their owners free them.
    abandon_node_routes(*channels_);
    Kokkos::fence("kodo: same-node channels end");
    node_->release_imports();
    KODO_MPI_CHECK(MPI_Barrier(comm_));
  }
  watching.reset();
  batches_.drop();       // their kernels go with the tasks that added them
  tasks_.destroy_all();  // tasks still waiting after a failed run(): never resumed now
  drop_parked();
  collections_.clear();
  forget_retired(*channels_);
  // Work never run (after a failed run(), or sends that were never matched) may hold
  // views: they go before Kokkos does.
  queue_.clear();
  engine_ = CompletionEngine();
  device_loads_.clear();
  recording_.reset();  // before Kokkos: it holds streams and Kokkos Tools callbacks
  pool_.clear();
  if (const std::string path = trace_.write(rank_); !path.empty() && rank_ == 0)
    print_error("kodo: trace written to " + path + " (and the other ranks' beside it)");
  transport_.reset();
  transport_staging_.clear();
  node_.reset();
}

void Scheduler::add_collection(std::unique_ptr<CollectionBase> collection) {
  if (running_)
    throw Error("collections are created by the main program of every rank, not inside run()");
  if (collection->id() != collections_.size())
    throw Error("collections must be created one at a time, in the same order on every rank");
  // The host backend runs a unit's work inside its calls: host time is its device time.
  if (!host_build) collection->device_loads = &device_loads_;
  collections_.push_back(std::move(collection));
}

void Scheduler::post(int rank, Message&& message) {
  if (rank == rank_)
    queue_.push_back(std::move(message));
  else
    transport_->send(rank, std::move(message));  // may refuse it: then it was never sent
  termination_.count_sent(rank);
}

void Scheduler::contribute(CollectionBase& c, std::int64_t slot, std::uint64_t round,
                           HandlerId reducer, Bytes value) {
  try {
    reductions_.contribute(c, slot, round, reducer, std::move(value));
  } catch (...) {
    fatal(what_of_current());
  }
}

void Scheduler::on_reduced(CollectionBase& c, const std::type_info& type,
                           ReductionTree::ResultCallback callback, const std::type_info* name) {
  if (running_)
    throw Error(
        "on_reduced is called by the main program of every rank before run(), not inside it");
  reductions_.on_reduced(c, type, std::move(callback), name);
}

void Scheduler::when_done(CompletionSource& source, std::function<void()> continuation) {
  termination_.count_sent();  // awaited device work counts as a message in flight
  const int track = trace_.enabled() ? trace_.track_of(&source) : 0;
  const auto marked = trace_.enabled() ? Trace::Clock::now() : Trace::Clock::time_point{};
  engine_.when_done(source, recycled([this, track, marked, c = std::move(continuation)] {
                      termination_.count_processed();
                      const auto seen = trace_.enabled() ? Trace::Clock::now() : marked;
                      try {
                        std::optional<WatchdogScope> inside;
                        if (watchdog_.active())
                          inside.emplace(watchdog_,
                                         Watchdog::Place{Watchdog::Inside::continuation});
                        c();
                      } catch (...) {
                        fatal("a device-completion continuation threw: " + what_of_current());
                      }
                      if (trace_.enabled()) {
                        trace_.span("device work", track, marked, seen);
                        trace_.span("continuation", 0, seen, Trace::Clock::now());
                      }
                    }));
}

namespace {
// (Their storage is recycled: transfers queue them every step.)
struct Callback final : Call, Recycled<Callback> {
  explicit Callback(std::function<void()> f) : f(std::move(f)) {}
  void invoke(void*) override { f(); }
  std::function<void()> f;
};
// A receive's completion with the bytes that arrived, without wrapping it in another
// function (an allocation per transfer).
struct SizedCallback final : Call, Recycled<SizedCallback> {
  SizedCallback(std::function<void(std::size_t)> f, std::size_t value)
      : f(std::move(f)), value(value) {}
  void invoke(void*) override { f(value); }
  std::function<void(std::size_t)> f;
  std::size_t value;
};
}  // namespace

void Scheduler::queue_callback(std::function<void()> callback) {
  queue_local(std::make_unique<Callback>(std::move(callback)));
}

void Scheduler::queue_callback(std::function<void(std::size_t)> callback, std::size_t value) {
  queue_local(std::make_unique<SizedCallback>(std::move(callback), value));
}

void Scheduler::queue_local(std::unique_ptr<Call> call) {
  Message m;
  m.header = {MessageKind::callback, 0, 0, 0, rank_};
  m.local = std::move(call);
  queue_.push_back(std::move(m));
}

void Scheduler::run() {
  if (running_) throw Error("Runtime::run() is not reentrant (called from an entry method?)");
  running_ = true;
  watchdog_.running(true);
  struct Reset {
    Scheduler& scheduler;
    int unwinding = std::uncaught_exceptions();
    ~Reset() {
      scheduler.running_ = false;
      scheduler.watchdog_.running(false);
      // A run() that fails leaves no task at a balance point for a later one to balance.
      if (std::uncaught_exceptions() > unwinding) scheduler.drop_parked();
    }
  } reset{*this};
  static const std::string run_region = "kodo::run";
  const ToolRegion region(run_region);
  termination_.reset();
  drain_.mark_dirty();  // the program may have launched work before run()
  recording_->issued_outside();
  auto idle_since = std::chrono::steady_clock::now();
  for (unsigned idle_turns = 0, turns = 0;;) {
    if (watchdog_.active()) watchdog_.turned();
    // Tagged messages no link will take are looked for every few turns, busy or idle: UCX
    // keeps them without bound (a probe of an empty queue costs tens of nanoseconds).
    if (++turns % kStrayInterval == 0) try {
        drop_stray_messages(*channels_, *transport_);
      } catch (...) {
        fatal(what_of_current());
      }
    if (turn()) {
      idle_turns = 0;
      stall_reported_ = false;
      continue;
    }
    if (idle_turns++ == 0 && stall_limit_) idle_since = std::chrono::steady_clock::now();
    if (idle_turns >= kSpinTurns) std::this_thread::yield();
    if (idle_turns % kWaveTestInterval == 0 &&
        job_is_quiet(stall_limit_ ? std::chrono::steady_clock::now() - idle_since
                                  : std::chrono::steady_clock::duration{})) {
      fold_device_loads(true);  // the streams are drained: every call's time is in
      if (parked_at_quiet_ == 0) return;
      balance_parked();  // every rank saw the same wave
      termination_.reset();
      idle_turns = 0;
    }
  }
}

// The pieces of work a turn has left, counted up to 2 (a recording is opened for two or
// more): each queued message, and each continuation of device work done; a reduction's
// result resumes every local unit of its collection that awaits it, so it counts as many.
std::size_t Scheduler::turn_pieces() const {
  std::size_t pieces = batches_.waiting() + engine_.ready_count(2);
  for (const Message& m : queue_) {
    if (pieces >= 2) break;
    const bool result = m.header.kind == MessageKind::reduction_result &&
                        m.header.collection < collections_.size();
    pieces += result ? static_cast<std::size_t>(collections_[m.header.collection]->local_count())
                     : 1;
  }
  return pieces;
}

void Scheduler::record_from_here(bool turn_start) {
  try {
    // (Batches still waiting were added outside run(), by tasks the program started.)
    recording_->begin(turn_pieces(), turn_start);
  } catch (...) {
    fatal(what_of_current());
  }
}

bool Scheduler::turn() {
  std::size_t events = 0;
  try {
    events = transport_->progress();
    if (node_) events += poll_node_links(*channels_, *node_);
  } catch (...) {
    fatal(what_of_current());
  }
  // What arrived may have been landed or sent on the rank's streams (outside a recording).
  if (events != 0) recording_->issued_outside();
  const bool completions = engine_.ready();
  if (queue_.empty() && !completions && !batches_.pending()) {
    // A failed device ends the job on every rank, as in poll_engine: the other ranks
    // would wait for this one's work.
    try {
      stalls_.observe(0, engine_);
    } catch (...) {
      fatal(what_of_current());
    }
    return events != 0;
  }
  if (!queue_.empty()) drain_.mark_dirty();  // (a drain's own completion must not)
  static const std::string turn_region = "kodo::turn";
  const ToolRegion turn_region_here(turn_region);
  // What the turn issues on the rank's streams is recorded and launched as one graph
  // (recording.hpp); the transport's progress above stays outside it.
  record_from_here(true);
  poll_engine();
  for (int n = 0; n < kDispatchBatch && !queue_.empty(); ++n) {
    // A turn that began with one piece may go on to many: a continuation whose reduction
    // completes here queues its result, which resumes every unit. The rest is recorded.
    if (!recording_->open() && recording_->on()) record_from_here(false);
    Message m = std::move(queue_.front());
    queue_.pop_front();
    {
      const ToolRegion message_region(work_name(m));
      std::optional<WatchdogScope> inside;  // invoke() names the entry method and unit
      if (watchdog_.active())
        inside.emplace(watchdog_, Watchdog::Place{m.header.kind == MessageKind::reduction_result
                                                      ? Watchdog::Inside::reduction_callback
                                                  : m.header.kind == MessageKind::callback
                                                      ? Watchdog::Inside::channel_callback
                                                      : Watchdog::Inside::message});
      if (trace_.enabled()) {
        const auto begin = Trace::Clock::now();
        dispatch(m);
        trace_.span(work_name(m), 0, begin, Trace::Clock::now());
      } else {
        dispatch(m);
      }
    }
    termination_.count_processed();
    if (device_loads_.pending() > kFoldDeviceLoadsAt) fold_device_loads(false);
    // Device work that finished meanwhile continues now, not after the batch: a message
    // that launches kernels takes microseconds, and a batch of them would leave the
    // device idle (the engine reads one counter per busy stream).
    if (engine_.pending() != 0) poll_engine();
  }
  try {
    batches_.launch_all();
  } catch (...) {
    fatal(what_of_current());
  }
  try {
    recording_->close();
  } catch (...) {
    fatal(what_of_current());
  }
  return true;
}

// Reading the calls' events fails on a failed device: the job ends on every rank, as in
// poll_engine (the other ranks would wait for this one).
void Scheduler::fold_device_loads(bool all) {
  try {
    device_loads_.fold(all);
  } catch (...) {
    fatal(what_of_current());
  }
}

void Scheduler::poll_engine() {
  try {
    // No health check inside a recording: asking a recorded stream would end it.
    const std::size_t completed = drain_.poll(engine_);
    if (completed != 0 || !recording_->open()) stalls_.observe(completed, engine_);
  } catch (...) {
    fatal(what_of_current());
  }
}

bool Scheduler::job_is_quiet(std::chrono::steady_clock::duration idle_for) {
  const bool idle = stall_limit_ && idle_for >= *stall_limit_;
  // What the tasks wait for as the wave counts them: a quiet wave's error names them,
  // though a message sent once another rank saw the wave may have resumed them since.
  // Tasks change only as messages are processed: described again only then.
  if (!termination_.wave_in_flight() && termination_.processed() != processed_at_description_) {
    tasks_at_wave_ = tasks_.count() != 0 ? tasks_.describe() : std::string(" none");
    processed_at_description_ = termination_.processed();
  }
  const auto wave = termination_.test(reductions_.pending_rounds(), drain_.dirty(), idle,
                                      tasks_.count(), parked_tasks());
  if (!wave) {
    if (stall_limit_ && idle_for >= 2 * *stall_limit_ && !stall_reported_) report_alone(idle_for);
    return false;
  }
  parked_at_quiet_ = wave->parked_tasks;
  if (wave->stalled(size_) && !stall_reported_) report_stall(*wave);
  if (wave->quiet()) {
    if (wave->pending_rounds == 0 && wave->waiting_tasks == 0) return true;
    // Nothing in flight can complete these rounds or resume these tasks now; the rounds
    // are dropped so later runs do not report them again (the collection's reductions
    // stay out of step: end the program).
    const std::string rounds = wave->pending_rounds ? reductions_.describe_pending(rank_) : "";
    reductions_.drop_pending();
    if (wave->waiting_tasks != 0)
      throw Error(cat("the job went quiet with ", wave->waiting_tasks,
                      " task(s) waiting for what no unit will send or contribute",
                      wave->parked_tasks ? cat(" (and ", wave->parked_tasks,
                                               " at balance points, which wait for every other "
                                               "task to end or reach one)")
                                         : std::string(),
                      "; on rank ", rank_, ":", tasks_at_wave_, rounds));
    throw Error(cat("the job went quiet with ", wave->pending_rounds,
                    " reduction round(s) incomplete: some units never contributed", rounds));
  }
  if (wave->overprocessed()) {
    const std::string who = termination_.who_overcounts();  // every rank saw this wave
    throw Error(cat("the job processed ", wave->processed - wave->sent,
                    " message(s) more than its ranks sent: a message arrived that no rank sent "
                    "(corrupted or duplicated)",
                    who.empty() ? std::string() : "; " + who));
  }
  if (wave->balanced() && drain_.dirty() && engine_.pending() == 0) {
    try {
      drain_.start(streams_,
                   [this](Stream& s, std::function<void()> f) { when_done(s, std::move(f)); });
    } catch (...) {
      fatal(what_of_current());
    }
  }
  return false;
}

// No wave has come back in twice the limit while this rank was idle: another rank is not
// in run() to answer (it waits in a collective call this rank did not make, or in the
// program's own code) or cannot (its watchdog, if so, says where). Said once; with
// KODO_STALL_EXIT=1 this rank then ends the job: a throw would leave it waiting for the
// same ranks in MPI_Finalize.
void Scheduler::report_alone(std::chrono::steady_clock::duration idle_for) {
  stall_reported_ = true;
  const double seconds = std::chrono::duration<double>(idle_for).count();
  print_error(cat("kodo: rank ", rank_, " has made no progress for ", seconds,
                  " s inside run(), and the other ranks have not answered the job-wide stall "
                  "check: one of them is not in run() (it waits in a collective call of kodo's "
                  "such as migrate, rebalance or write_checkpoint that this rank did not make, "
                  "or in the program's own code) or cannot answer (its own report says where)"));
  if (stall_exit_)
    fatal(cat("rank ", rank_, " waited ", seconds,
              " s in run() for ranks that do not answer (KODO_STALL_EXIT=1)"));
}

// Every rank reaches this at the same wave (its counts are the same everywhere) and
// prints what it waits for; with KODO_STALL_EXIT=1 every rank then throws.
void Scheduler::report_stall(const TerminationDetector::Wave& wave) {
  stall_reported_ = true;
  std::ostringstream os;
  os << "kodo: stall report, rank " << rank_ << ": no rank has made progress for "
     << stall_limit_->count() << " s and the job is not done (its ranks have sent " << wave.sent
     << " messages and transfers and processed " << wave.processed << "). This rank waits for:";
  const std::size_t heading = os.str().size();
  // What the others count as sent to this rank, against what it ran (a rank that counts
  // messages it never sent keeps the job from its end: the rank they were counted to says so).
  if (const std::uint64_t to_it = termination_.sent_to_this_rank();
      to_it != termination_.processed())
    os << "\n  messages: the ranks count " << to_it
       << " message(s) and event(s) sent to this rank, which has processed "
       << termination_.processed()
       << (to_it > termination_.processed()
               ? " (the rest are in flight, lost, or counted by a rank that did not send them)"
               : "");
  os << describe_waiting_transfers(*channels_);
  if (reductions_.pending_rounds() != 0) os << reductions_.describe_pending(rank_);
  if (engine_.pending() != 0)
    os << "\n  device work: " << engine_.pending()
       << " continuation(s) wait for work on this rank's streams";
  if (tasks_.count() != 0) os << tasks_.describe();
  if (os.str().size() == heading)
    os << "\n  nothing (the transfers and messages it waits for are on other ranks)";
  os << '\n';
  print_error(os.str());
  if (stall_exit_)
    throw Error(
        cat("the job stalled: no progress for ", stall_limit_->count(),
            " s (KODO_STALL_EXIT=1; the stall report above says what each rank waits for)"));
}

}  // namespace kodo::detail
