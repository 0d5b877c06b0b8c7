#pragma once
// The per-rank runtime: start-up and shutdown of MPI, Kokkos and UCX, the collections
// of this program, and the scheduler loop that moves messages to work units.

#include "../backends/placement.hpp"
#include "../backends/stream.hpp"
#include "collection_base.hpp"
#include "completion_engine.hpp"
#include "error.hpp"
#include "message.hpp"
#include "trace.hpp"

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kodo {

namespace detail {
class UcxTransport;

// How a reducer's value is combined and handed to the units; registered per
// (value type, operation, target entry method).
struct ReducerHandler {
  void (*combine)(Bytes& accumulator, const Bytes& value);
  void (*deliver)(CollectionBase& collection, const Bytes& result);
};

// How a call from another rank is rebuilt from its serialized arguments (views
// allocated, their memory listed in the reader's destinations).
struct EntryHandler {
  std::unique_ptr<LocalCall> (*receive)(ByteReader& arguments);
};
}  // namespace detail

class Runtime {
 public:
  // Initialises MPI (unless the program already did), places the rank on its GPU (see
  // placement.hpp), initialises Kokkos (unless the program already did) and UCX, and
  // exchanges UCX worker addresses over MPI. One Runtime may exist at a time. Throws
  // kodo::Error, on every rank, when a rank cannot start.
  Runtime(int& argc, char**& argv);
  // Shuts down what the constructor started, after destroying every collection.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The communicator of this runtime's ranks (a duplicate of MPI_COMM_WORLD).
  MPI_Comm comm() const { return comm_; }

  const Placement& placement() const { return placement_; }
  // This rank's streams: KODO_STREAMS (default 4) compute and as many communication
  // streams.
  StreamPool& streams() { return *streams_; }

  // Runs `continuation` from the scheduler loop once the work enqueued on `source` so
  // far is done. The rank never waits for it; pending continuations keep run() going.
  void when_done(CompletionSource& source, std::function<void()> continuation);

  // Runs the scheduler until the whole job is quiescent: no message queued or in
  // flight and no device work pending on any stream of any rank's pool (work on other
  // Kokkos instances is the caller's to fence). Returns on every rank together. Throws kodo::Error if the job
  // went quiet with a reduction that some units never contributed to.
  void run();

  // --- used by Collection and WorkUnit -----------------------------------------
  // Collections are created collectively, in the same order on every rank, so the
  // n-th one has id n everywhere.
  std::uint32_t next_collection_id() const {
    return static_cast<std::uint32_t>(collections_.size());
  }
  // Takes a newly built collection; returns once every rank has built it, so no
  // message can reach a rank before the collection it addresses exists there.
  void add_collection(std::unique_ptr<detail::CollectionBase> collection);
  detail::CollectionBase& collection(std::uint32_t id);
  // Queues `message` for `rank` (this rank's own queue, or UCX).
  void post(int rank, detail::Message&& message);
  // A unit's contribution to reduction `round` of its collection.
  void contribute(detail::CollectionBase& collection, std::int64_t slot, std::uint64_t round,
                  detail::HandlerId reducer, Bytes value);

  // --- used by Channel ----------------------------------------------------------
  // Announces an event that some rank will run later through queue_callback(): it
  // counts as a message in flight for termination until it has run.
  void expect_event();
  // Runs `callback` from the scheduler loop, in arrival order with messages; completes
  // an event announced by expect_event() (here or on another rank).
  void queue_callback(std::function<void()> callback);
  detail::UcxTransport& transport() { return *transport_; }

 private:
  void start(int& argc, char**& argv);
  void stop();
  void dispatch(detail::Message& message);
  std::vector<Segment> prepare(detail::Message& message);
  std::string trace_name(const detail::Message& message) const;
  void invoke(detail::Message& message);
  void on_partial(detail::Message& message);
  void on_result(detail::Message& message);
  void deliver_result(detail::CollectionBase& collection, detail::HandlerId reducer,
                      const Bytes& payload);
  void try_complete(detail::CollectionBase& collection, std::uint64_t round);
  std::uint64_t pending_rounds() const;
  std::string describe_pending_rounds() const;

  int rank_ = 0, size_ = 1;
  MPI_Comm comm_ = MPI_COMM_NULL;       // bootstrap and collection creation
  MPI_Comm wave_comm_ = MPI_COMM_NULL;  // termination waves only
  bool own_mpi_ = false, own_kokkos_ = false, running_ = false;
  Placement placement_;
  std::unique_ptr<StreamPool> streams_;
  CompletionEngine engine_;
  std::unique_ptr<detail::UcxTransport> transport_;
  std::vector<std::unique_ptr<detail::CollectionBase>> collections_;
  std::deque<detail::Message> queue_;  // arrival order, local and remote alike
  std::uint64_t sent_ = 0, processed_ = 0;
  std::size_t drains_done_ = 0;  // drain marks reached (see run())
  detail::Trace trace_;          // KODO_TRACE
};

}  // namespace kodo
