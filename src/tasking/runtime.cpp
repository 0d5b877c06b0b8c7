#include "runtime.hpp"

#include "../comm/ucx_transport.hpp"
#include "agree.hpp"

#include <Kokkos_Core.hpp>

#include <array>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <sstream>
#include <thread>

namespace kodo {
namespace {

std::atomic<bool> runtime_exists{false};

// Messages dispatched between two looks at UCX: enough to amortise the progress call,
// few enough that arrivals are not left waiting behind a long local queue.
constexpr int kDispatchBatch = 64;

}  // namespace

Runtime::Runtime(int& argc, char**& argv) {
  if (runtime_exists.exchange(true)) throw Error("kodo: only one kodo::Runtime may exist at a time");
  try {
    start(argc, argv);
  } catch (...) {
    stop();
    throw;
  }
}

Runtime::~Runtime() {
  // Shutting down is collective. A rank unwinding from an exception of its own would
  // wait there for ranks that are still working: end the job instead.
  if (std::uncaught_exceptions() > 0)
    fatal("an exception is leaving the program on this rank while others may still run");
  collections_.clear();  // units own Kokkos views: release them before Kokkos goes
  if (transport_) {
    std::array<std::uint64_t, 2> local{sent_, processed_}, total{};
    MPI_Allreduce(local.data(), total.data(), 2, MPI_UINT64_T, MPI_SUM, comm_);
    if (rank_ == 0 && total[0] != total[1])
      std::fprintf(stderr, "kodo: warning: %llu message(s) were sent but never run (call run() before the runtime ends)\n",
                   static_cast<unsigned long long>(total[0] - total[1]));
    transport_->shutdown(total[0] == total[1]);
  }
  // Work never run (after a failed run(), or sends that were never matched) may hold
  // views: they go before Kokkos does.
  queue_.clear();
  engine_ = CompletionEngine();
  if (const std::string path = trace_.write(rank_); !path.empty() && rank_ == 0)
    std::fprintf(stderr, "kodo: trace written to %s (and the other ranks' beside it)\n", path.c_str());
  stop();
}

std::string Runtime::trace_name(const detail::Message& m) const {
  switch (m.header.kind) {
    case detail::MessageKind::invoke: return detail::short_handler_name(m.header.handler);
    case detail::MessageKind::callback: return "channel completion";
    case detail::MessageKind::reduction_partial:
    case detail::MessageKind::reduction_result: return "reduction";
  }
  return "message";
}

void Runtime::start(int& argc, char**& argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    own_mpi_ = true;
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  MPI_Comm_dup(MPI_COMM_WORLD, &wave_comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  // A program that started Kokkos itself has chosen the GPU already.
  placement_ = place_rank(comm_, Kokkos::is_initialized() ? Kokkos::device_id() : -1);
  if (!Kokkos::is_initialized()) {
    // Kokkos takes the GPU chosen above unless told otherwise on its command line.
    if (placement_.device >= 0 && !std::getenv("KOKKOS_DEVICE_ID"))
      setenv("KOKKOS_DEVICE_ID", std::to_string(placement_.device).c_str(), 1);
    Kokkos::initialize(argc, argv);
    own_kokkos_ = true;
  }
  int streams = 4;
  if (const char* s = std::getenv("KODO_STREAMS")) streams = std::atoi(s);
  if (streams < 1)
    throw Error("kodo: KODO_STREAMS must be a positive number of streams per priority");
  // A rank that cannot create its streams must not leave the others waiting in the
  // collectives that follow: all ranks agree on the outcome.
  std::string problem;
  try {
    streams_ = std::make_unique<StreamPool>(streams);
  } catch (const Error& e) {
    problem = e.what();
  }
  agree_on_failure(comm_, problem, "could not create its streams");
  transport_ = std::make_unique<detail::UcxTransport>(
      comm_, [this](detail::Message&& m) { queue_.push_back(std::move(m)); },
      [this](detail::Message& m) { return prepare(m); });
}

// Releases what start() acquired, in reverse order; safe after a partial start.
void Runtime::stop() {
  transport_.reset();
  streams_.reset();
  if (own_kokkos_ && Kokkos::is_initialized()) Kokkos::finalize();
  if (wave_comm_ != MPI_COMM_NULL) MPI_Comm_free(&wave_comm_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (own_mpi_) MPI_Finalize();
  runtime_exists = false;
}

void Runtime::when_done(CompletionSource& source, std::function<void()> continuation) {
  ++sent_;  // awaited device work counts as a message in flight until it completes
  const int track = trace_.enabled() ? trace_.track_of(&source) : 0;
  const auto marked = trace_.enabled() ? detail::Trace::Clock::now() : detail::Trace::Clock::time_point{};
  engine_.when_done(source, [this, track, marked, c = std::move(continuation)] {
    ++processed_;
    const auto seen = trace_.enabled() ? detail::Trace::Clock::now() : marked;
    try {
      c();
    } catch (const std::exception& e) {
      fatal(std::string("a device-completion continuation threw: ") + e.what());
    }
    if (trace_.enabled()) {
      trace_.span("device work", track, marked, seen);
      trace_.span("continuation", 0, seen, detail::Trace::Clock::now());
    }
  });
}

void Runtime::add_collection(std::unique_ptr<detail::CollectionBase> collection) {
  if (running_)
    throw Error("kodo: collections are created by the main program of every rank, not inside run()");
  if (collection->id() != collections_.size())
    throw Error("kodo: collections must be created one at a time, in the same order on every rank");
  collections_.push_back(std::move(collection));
  MPI_Barrier(comm_);
}

detail::CollectionBase& Runtime::collection(std::uint32_t id) {
  if (id >= collections_.size())
    fatal("a message names collection " + std::to_string(id) + ", which does not exist on this rank");
  return *collections_[id];
}

void Runtime::post(int rank, detail::Message&& message) {
  ++sent_;
  if (rank == rank_)
    queue_.push_back(std::move(message));
  else
    transport_->send(rank, std::move(message));
}

void Runtime::run() {
  if (running_) throw Error("kodo: Runtime::run() is not reentrant (called from an entry method?)");
  running_ = true;
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{running_};

  // Termination by waves of a non-blocking allreduce of (sent, processed, pending
  // reduction rounds, ranks with undrained streams): the job is quiet when two
  // consecutive waves agree, every sent message has been processed and no rank has
  // streams to drain (the four-counter method). Ranks keep working while a wave is in
  // flight; an idle rank only yields the processor.
  std::array<std::uint64_t, 4> wave_in{}, wave_out{}, previous{};
  bool have_previous = false, wave_active = false;
  MPI_Request wave = MPI_REQUEST_NULL;
  // Device work that has not moved for this long is checked for faults.
  constexpr auto kStallCheck = std::chrono::milliseconds(100);
  // Since when device work has been pending with none completing; unset (no clock
  // read at all) while work completes or none is pending.
  std::chrono::steady_clock::time_point waiting_since{};
  // Device work nobody awaits still counts: before the job may end, each rank marks
  // every stream of its pool and waits (without blocking) for those marks as well.
  // Anything that may launch device work (a dispatched message, a continuation other
  // than a drain) makes the rank dirty. The drain waits for a wave that finds the job
  // otherwise quiet, so it never sits between a message and the next one.
  bool dirty = true;  // the program may have launched work before run()
  // A wave is looked at once every few idle turns of the loop: an MPI progress call
  // costs more than a UCX one, and arrivals should not wait behind it. A rank idle for
  // long yields the processor between turns (for ranks sharing cores); a short wait
  // is spent polling, so a message that arrives soon is seen at once.
  constexpr unsigned kWaveTestInterval = 16, kSpinTurns = 1024;
  unsigned idle_turns = 0;
  for (;;) {
    const std::size_t drains_before = drains_done_;
    const std::size_t completed = engine_.poll();
    if (completed > drains_done_ - drains_before) dirty = true;
    const std::size_t events = transport_->progress() + completed;
    if (completed || engine_.pending() == 0) {
      waiting_since = {};
    } else if (const auto now = std::chrono::steady_clock::now(); waiting_since == decltype(now){}) {
      waiting_since = now;
    } else if (now - waiting_since > kStallCheck) {
      try {
        engine_.check_health();
      } catch (const std::exception& e) {
        fatal(e.what());
      }
      waiting_since = now;
    }
    if (!queue_.empty()) dirty = true;
    for (int n = 0; n < kDispatchBatch && !queue_.empty(); ++n) {
      detail::Message m = std::move(queue_.front());
      queue_.pop_front();
      if (trace_.enabled()) {
        const auto begin = detail::Trace::Clock::now();
        dispatch(m);
        trace_.span(trace_name(m), 0, begin, detail::Trace::Clock::now());
      } else {
        dispatch(m);
      }
      ++processed_;
    }
    if (events != 0 || !queue_.empty()) {
      idle_turns = 0;
      continue;
    }
    if (++idle_turns >= kSpinTurns) std::this_thread::yield();
    if (idle_turns % kWaveTestInterval != 0) continue;
    if (!wave_active) {
      wave_in = {sent_, processed_, pending_rounds(), dirty ? 1u : 0u};
      MPI_Iallreduce(wave_in.data(), wave_out.data(), 4, MPI_UINT64_T, MPI_SUM, wave_comm_, &wave);
      wave_active = true;
    }
    int done = 0;
    MPI_Test(&wave, &done, MPI_STATUS_IGNORE);
    if (done) {
      wave_active = false;
      const bool balanced = wave_out[0] == wave_out[1];
      if (have_previous && wave_out == previous && balanced && wave_out[3] == 0) {
        if (wave_out[2] != 0) {
          const std::string detail = describe_pending_rounds();
          // Nothing can complete these rounds now; drop them so later runs do not report
          // them again (the collection's reductions stay out of step: end the program).
          for (auto& c : collections_) c->rounds().clear();
          throw Error("kodo: the job went quiet with " + std::to_string(wave_out[2]) +
                      " reduction round(s) incomplete: some units never contributed" + detail);
        }
        return;
      }
      previous = wave_out;
      have_previous = true;
      if (balanced && dirty && engine_.pending() == 0) {
        try {
          streams_->for_each([&](Stream& s) { when_done(s, [this] { ++drains_done_; }); });
        } catch (const std::exception& e) {
          fatal(e.what());
        }
        dirty = false;
      }
    }
  }
}

void Runtime::expect_event() { ++sent_; }

void Runtime::queue_callback(std::function<void()> callback) {
  struct Callback final : detail::LocalCall {
    explicit Callback(std::function<void()> f) : f(std::move(f)) {}
    void invoke(void*) override { f(); }
    std::function<void()> f;
  };
  detail::Message m;
  m.header = {detail::MessageKind::callback, 0, 0, 0, rank_};
  m.local = std::make_unique<Callback>(std::move(callback));
  queue_.push_back(std::move(m));
}

namespace {
const detail::EntryHandler& entry_handler(std::uint64_t id) {
  const auto* entry = static_cast<const detail::EntryHandler*>(detail::find_handler(id));
  if (!entry) fatal("a message names an entry method this program does not have");
  return *entry;
}
}  // namespace

std::vector<Segment> Runtime::prepare(detail::Message& message) {
  std::vector<Segment> destinations;
  try {
    const auto& h = message.header;
    if (h.kind != detail::MessageKind::invoke)
      fatal("a message with view data is not an entry-method call");
    ByteReader reader(message.payload, &destinations);
    message.local = entry_handler(h.handler).receive(reader);
    message.payload.clear();
  } catch (const std::exception& e) {
    fatal(std::string("while receiving a call from rank ") +
          std::to_string(message.header.source_rank) + ": " + e.what());
  }
  return destinations;
}

void Runtime::dispatch(detail::Message& message) {
  try {
    switch (message.header.kind) {
      case detail::MessageKind::callback: return message.local->invoke(nullptr);
      case detail::MessageKind::invoke: return invoke(message);
      case detail::MessageKind::reduction_partial: return on_partial(message);
      case detail::MessageKind::reduction_result: return on_result(message);
    }
    fatal("received a message of unknown kind " +
          std::to_string(static_cast<unsigned>(message.header.kind)));
  } catch (const std::exception& e) {
    fatal(std::string("while running a message from rank ") +
          std::to_string(message.header.source_rank) + ": " + e.what());
  }
}

void Runtime::invoke(detail::Message& message) {
  const auto& h = message.header;
  auto& c = collection(h.collection);
  const std::int64_t slot = c.slot_of(h.target);
  if (slot < 0) {
    std::ostringstream os;
    os << "a message for unit " << c.shape().delinear(h.target) << " of collection " << h.collection
       << " arrived at rank " << rank_ << ", which does not hold that unit";
    fatal(os.str());
  }
  if (message.local) return message.local->invoke(c.unit_at(slot));
  ByteReader reader(message.payload);  // no view data: views come through prepare()
  entry_handler(h.handler).receive(reader)->invoke(c.unit_at(slot));
}

// Reduction tree over the ranks that hold units: rank r's parent is (r-1)/2.
void Runtime::contribute(detail::CollectionBase& c, std::int64_t slot, std::uint64_t round,
                         detail::HandlerId reducer, Bytes value) {
  auto& r = c.rounds()[round];
  if (r.local.empty()) {
    r.reducer = reducer;
    r.local.resize(c.local_count());
  } else if (r.reducer != reducer) {
    throw Error("kodo: units of collection " + std::to_string(c.id()) +
                " contributed to reduction round " + std::to_string(round) +
                " with different types, operations or targets");
  }
  r.local[slot] = std::move(value);
  ++r.local_received;
  try_complete(c, round);
}

void Runtime::on_partial(detail::Message& message) {
  const auto& h = message.header;
  auto& c = collection(h.collection);
  auto& r = c.rounds()[static_cast<std::uint64_t>(h.target)];
  if (r.local.empty()) {
    r.reducer = h.handler;
    r.local.resize(c.local_count());
  } else if (r.reducer != h.handler) {
    fatal("ranks contributed to reduction round " + std::to_string(h.target) + " of collection " +
          std::to_string(c.id()) + " with different types, operations or targets");
  }
  const int child = h.source_rank == 2 * rank_ + 1 ? 0 : 1;
  r.children[child] = std::move(message.payload);
  ++r.children_received;
  try_complete(c, static_cast<std::uint64_t>(h.target));
}

void Runtime::try_complete(detail::CollectionBase& c, std::uint64_t round) {
  auto it = c.rounds().find(round);
  auto& r = it->second;
  const int active = c.map().active_ranks();
  int expected_children = 0;
  for (int child : {2 * rank_ + 1, 2 * rank_ + 2}) expected_children += child < active;
  if (r.local_received < c.local_count() || r.children_received < expected_children) return;

  const auto* reducer = static_cast<const detail::ReducerHandler*>(detail::find_handler(r.reducer));
  if (!reducer) fatal("a reduction names a reducer this program does not have");
  Bytes acc;
  auto fold = [&](std::optional<Bytes>& v) {
    if (!v) return;
    if (acc.empty())
      acc = std::move(*v);
    else
      reducer->combine(acc, *v);
  };
  for (auto& v : r.local) fold(v);
  for (auto& v : r.children) fold(v);

  detail::Message m;
  const int parent = (rank_ - 1) / 2;
  m.header = {rank_ == 0 ? detail::MessageKind::reduction_result
                         : detail::MessageKind::reduction_partial,
              c.id(), r.reducer, static_cast<std::int64_t>(round), rank_};
  m.payload = std::move(acc);
  c.rounds().erase(it);
  post(rank_ == 0 ? 0 : parent, std::move(m));
}

void Runtime::on_result(detail::Message& message) {
  const auto& h = message.header;
  auto& c = collection(h.collection);
  const int active = c.map().active_ranks();
  for (int child : {2 * rank_ + 1, 2 * rank_ + 2}) {
    if (child >= active) continue;
    detail::Message copy;
    copy.header = h;
    copy.header.source_rank = rank_;
    copy.payload = message.payload;
    post(child, std::move(copy));
  }
  const auto round = static_cast<std::uint64_t>(h.target);
  if (round != c.next_result_round) {
    c.early_results.emplace(round, std::make_pair(h.handler, std::move(message.payload)));
    return;
  }
  deliver_result(c, h.handler, message.payload);
  for (auto it = c.early_results.find(c.next_result_round); it != c.early_results.end();
       it = c.early_results.find(c.next_result_round)) {
    auto [handler, payload] = std::move(it->second);
    c.early_results.erase(it);
    deliver_result(c, handler, payload);
  }
}

void Runtime::deliver_result(detail::CollectionBase& c, detail::HandlerId handler,
                             const Bytes& payload) {
  const auto* reducer = static_cast<const detail::ReducerHandler*>(detail::find_handler(handler));
  if (!reducer) fatal("a reduction names a reducer this program does not have");
  ++c.next_result_round;
  reducer->deliver(c, payload);
}

std::uint64_t Runtime::pending_rounds() const {
  std::uint64_t n = 0;
  for (const auto& c : collections_) n += c->rounds().size();
  return n;
}

std::string Runtime::describe_pending_rounds() const {
  std::ostringstream os;
  for (const auto& c : collections_)
    for (const auto& [round, r] : c->rounds())
      os << "\n  rank " << rank_ << ": collection " << c->id() << " round " << round << ": "
         << r.local_received << " of " << c->local_count() << " local units contributed";
  return os.str();
}

}  // namespace kodo
