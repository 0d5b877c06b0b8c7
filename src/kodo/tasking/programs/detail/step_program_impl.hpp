// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// RankProgram::Impl: what a rank's step program holds, and the steps of its build. The
// program runs in step_program.cpp; build() checks and matches the plans and opens the
// channels in step_program_build.cpp, and records the device graphs in
// step_program_graphs.cpp.

#include <kodo/backends/detail/native.hpp>
#include <kodo/comm/detail/device_route.hpp>
#include <kodo/tasking/programs/step_program.hpp>
#include <kodo/tasking/tasks/detail/batch_launcher.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

namespace kodo::detail {

// A channel of the program: a local unit, a unit of another rank, a tag.
struct LinkId {
  std::int64_t local, remote;
  int tag;
  auto operator<=>(const LinkId&) const = default;
};

// What a rank tells the rank of a unit it sends to, at build: one remote send.
struct SendRecord {
  std::int64_t sender, receiver, tag, phase, bytes;
};

// The program's completions: the stream's, with a device failure named as the program's.
class ProgramSource final : public CompletionSource {
 public:
  ProgramSource(Stream& stream, std::string what) : stream_(stream), what_(std::move(what)) {}
  std::uint64_t mark() override { return stream_.mark(); }
  std::uint64_t reached() const override { return stream_.reached(); }
  void check_health() const override {
    try {
      stream_.check_health();
    } catch (const Error& e) {
      throw Error(cat(e.what(), " (in ", what_, ")"));
    }
  }

 private:
  Stream& stream_;
  std::string what_;
};

struct RankProgram::Impl {
  std::uint32_t collection;
  Extent3 shape;
  StepProgramOptions options;
  int rank = 0, ranks = 1;
  MPI_Comm comm = MPI_COMM_NULL;
  const UnitMap* map = nullptr;
  std::uint64_t epoch = 0;  // of the map the program was built on
  ChannelHost* host = nullptr;
  Stream* stream = nullptr;          // where steps run
  Stream* channel_stream = nullptr;  // the program's channels (host-staged copies)
  // Where each unit's work is recorded: an instance of its own (by slot), so that what
  // Kokkos keeps per instance (reduction and team scratch) is not shared by units whose
  // recorded kernels run at once, nor reallocated under the graphs by later work. Compute
  // streams only, which never mark: nothing is launched on them.
  std::vector<std::unique_ptr<Stream>> recording;
  // Each unit's work of a phase as recorded once, for every graph that holds it (the
  // phases' at build, again with the transfers where device links are taken, whole
  // periods' at their first launch): (slot, phase, kind) -> a backend::RecordedWork, kind
  // kWork, kEarly or kRound + r for round r of work_together (every unit's, slot 0: it is
  // recorded on slot 0's instance; a batch's launches use no scratch).
  // Recording costs more than adding a copy of it to a graph. Each recording reads the
  // scratch Kokkos keeps for its instance as it is then (backend::instance_scratch): work
  // whose reductions outgrow it in a later phase leaves the earlier recordings reading
  // freed memory, so the phases are recorded again (record_graphs).
  struct RecordedWork {
    void* work = nullptr;
    std::vector<const void*> scratch;  // its instance's, as its recording began
  };
  static constexpr int kWork = 0, kEarly = 1, kRound = 2;
  std::map<std::tuple<std::size_t, int, int>, RecordedWork> recorded_work;
  void drop_recorded_work() {
    for (auto& [key, recorded] : recorded_work) backend::destroy_work(recorded.work);
    recorded_work.clear();
  }
  // The first recorded work whose instance's scratch moved since its recording began.
  std::optional<std::tuple<std::size_t, int, int>> stale_recorded_work() const;
  std::unique_ptr<ProgramSource> source;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);  // for continuations

  struct Unit {
    Index3 index;
    std::int64_t linear;
    std::vector<PlannedPhase> phases;
  };
  std::vector<Unit> units;  // by local slot
  std::string planning_problem;
  // By phase: the most rounds of work_together a unit of this rank has; a round's kernels
  // of every unit go out as one launch per functor type (launch_together).
  std::vector<std::size_t> rounds;
  void launch_together(std::size_t phase, std::size_t round, const ExecutionSpace& on);
  std::vector<std::unique_ptr<KernelBatch>> round_batches;  // launch_together's (reused)
  std::vector<KernelBatch*> round_batch_list;
  std::vector<BatchKernel*> round_all, round_group;

  // By phase, by sending slot: the copies into local receivers' views, and their slots.
  std::vector<std::vector<std::vector<backend::DeviceCopy>>> copies;
  std::vector<std::vector<std::vector<std::size_t>>> copy_receivers;
  // By phase, by receiving slot: the slots whose copies land in its views.
  std::vector<std::vector<std::vector<std::size_t>>> copy_senders;

  // Transfers with other ranks: a channel per local unit, remote unit and tag carries both
  // directions; the transfers it receives land in a ring whose buffers are the receiving
  // views in phase order (transfer t in buffer t % their number).
  struct RemoteLink {
    Channel channel;
    std::size_t slot = 0;  // the local unit
    std::shared_ptr<RingCore> ring;
    std::vector<int> phases;         // the receiving phases, ascending
    std::vector<std::size_t> bytes;  // by ring buffer
    std::uint64_t released = 0;
    std::string name;
    std::vector<int> peer_phases;  // the phases the peer receives on the link, ascending
    // The link's same-node route, as the graphs drive it (device links).
    std::optional<RouteIn> in;
    std::optional<RouteOut> out;
    // The ring buffer (or the peer's) of the transfers read in `phase`.
    static std::uint64_t index_of(const std::vector<int>& phases, int phase) {
      return static_cast<std::uint64_t>(std::find(phases.begin(), phases.end(), phase) -
                                        phases.begin());
    }
  };
  struct RemoteSend {
    RemoteLink* link;
    PlannedView view;
    std::uint64_t* gate = nullptr;  // device word of its own (add_transfer_send)
  };
  std::map<LinkId, std::unique_ptr<RemoteLink>> links;    // (local, remote, tag)
  std::vector<std::vector<RemoteSend>> remote_sends;      // by phase
  std::vector<std::vector<RemoteLink*>> remote_receives;  // by phase: rings its steps read
  std::map<std::int64_t, std::size_t> arrived;            // step -> remote transfers in
  std::vector<int> sends_pending;                         // by phase: remote sends not done
  std::vector<std::int64_t> last_sent;  // by phase: the last step whose remote sends left
  // A step's work_without_receives is launched apart, before the step's views from other
  // ranks are in (only where some are awaited, and some unit has such work).
  bool split = false;
  // Transfers with other ranks made by the graphs themselves, over same-node routes
  // (device links): device_words holds the step the next launch runs, then a gate per
  // remote send.
  bool device_links = false;
  Kokkos::View<std::uint64_t*, ExecutionSpace::memory_space> device_words;
  bool device_routes_ready();  // every link of this rank on a route the device can drive
  void take_device_links();

  // Recorded steps: `span` steps as one graph. A step's graph is instantiated when first
  // launched: one replaced before (a program that takes device links records its phases
  // again) costs no instantiation.
  struct Recorded {
    void* graph = nullptr;  // backend::NativeGraph
    void* exec = nullptr;   // backend::NativeGraphExec
    int span = 1;
  };
  std::vector<Recorded> by_phase;        // one step each, where graphs are recorded
  std::vector<Recorded> early_by_phase;  // with `split`: the work_without_receives of a step
  void* executable(Recorded& r, std::size_t phase, const char* what);  // null: given up
  bool graphs_given_up = false;  // an instantiation failed: each unit's work is called
  // Whole periods of `period_span` steps as one graph, where nothing crosses ranks or the
  // graphs make those transfers (else 0), recorded when first launched: a program advanced
  // a step at a time never needs it.
  Recorded period;
  int period_span = 0;
  bool whole_periods(std::int64_t k, std::int64_t target);
  enum class Parts { whole, early, rest };  // of each step: all, work_without_receives, the rest
  void drop(Recorded& r) {
    backend::destroy_graph_exec(r.exec);
    backend::destroy_graph(r.graph);
    r = Recorded{};
  }
  // Records `parts` of steps first .. first + span - 1 (their phases) as one graph, not
  // instantiated; "" or why not (with `for_good`: launching that work without a graph
  // fails too).
  std::string record(int first, int span, Parts parts, Recorded& into, bool& for_good);
  struct Recorder;  // the nodes of one record() as it adds them

  // The steps of build(), in order. Each check keeps the first problem it finds (and
  // checks nothing once there is one); build() has every rank fail together on it.
  // (receiver, sender, tag, phase) -> the receiving slot and its planned transfer.
  using Receives = std::map<std::tuple<std::int64_t, std::int64_t, int, int>,
                            std::pair<std::size_t, const PlannedTransfer*>>;
  void check_plans(Receives& receives, std::string& problem) const;
  void check_receives_apart(const Receives& receives, std::string& problem) const;
  // Sends between units of this rank become copies; the others go into `outgoing`, by rank.
  void match_sends_on_rank(const Receives& receives, std::vector<std::vector<SendRecord>>& outgoing,
                           std::string& problem);
  void match_sends_from_other_ranks(const Receives& receives,
                                    const std::vector<std::vector<SendRecord>>& outgoing,
                                    std::string& problem) const;
  void open_channels(RankProgram& program, const Receives& receives, std::string& problem);
  RemoteLink& link_of(std::int64_t local, std::int64_t remote, int tag);
  void start_ring(RankProgram& program, RemoteLink& link,
                  const std::vector<std::pair<int, const PlannedTransfer*>>& views);
  // "" or why the steps run without graphs (`for_good`: nor can they run as they are).
  std::string record_graphs(bool& for_good);
  std::string record_phases(bool& for_good);  // each phase's step, into by_phase
  void report_graphs(const std::string& why, bool for_good) const;
  void take_device_links_where_all_can(Runtime& runtime);

  // Some unit of this rank exchanges views with another rank.
  bool remote() const { return !links.empty(); }
  // This rank's graphs may come to make its transfers with other ranks
  // (take_device_links_where_all_can): each unit's recorded work is kept for them.
  bool may_take_device_links() const {
    return remote() && !by_phase.empty() && options.comm == CommMode::device &&
           !backend::streams_run_in_call();
  }
  std::string unit_name(const Index3& index) const { return cat("unit ", index); }
  std::string where(std::int64_t linear) const {
    return cat("unit ", shape.delinear(linear), " (rank ", map->owner(linear), ")");
  }
};

}  // namespace kodo::detail
