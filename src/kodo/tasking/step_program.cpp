// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/step_program.hpp>

#include <kodo/backends/detail/native.hpp>
#include <kodo/backends/detail/tool_region.hpp>
#include <kodo/comm/detail/device_route.hpp>
#include <kodo/core/agree.hpp>
#include <kodo/tasking/detail/scheduler.hpp>
#include <kodo/tasking/runtime.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace kodo::detail {
namespace {

// Steps launched ahead of the last one known done: enough to keep the device busy while
// the host notices completions, few enough to bound what a failure leaves queued. Where
// nothing crosses ranks, the host learns of completions only every kMarkEvery steps or
// more (a launch may cover several periods) and at the last step asked for: a mark between
// two steps costs the device a gap of a few microseconds (one unit per rank on an H100: 54.7
// us per step with a mark each step, 52.9 with one every four).
constexpr std::int64_t kAhead = 8;
constexpr std::int64_t kMarkEvery = 4;
// Where nothing crosses ranks, whole periods are recorded as one graph of kStepsPerGraph
// steps or more: the device drains at the end of every graph, and a longer graph drains
// less often, which counts the more the more units a step holds. Jacobi3D 192^3,
// --fusion C, on an H100, us per step with graphs of 8 / 16 / 32 steps: ODF 8 68.4 /
// 67.5 / 67.0, ODF 16 72.6 / 72.0 / 72.0, ODF 32 97.2 / 91.2 / 88.3, ODF 64 173.7 /
// 138.6 / 124.7 (2 steps: ODF 64 363.6); but 384^3 at ODF 16 (--overlap) 412.0 /
// 415.0 / 433.5. Hence units / 2 steps, within [8, 32].
// Steps launched ahead then cover two such graphs.
constexpr int kStepsPerGraph = 8;
constexpr int kMostStepsPerGraph = 32;
constexpr int kMaxPhases = 1 << 16;
constexpr int kTagLimit = 1 << 30;  // a program's channels use ports 2^30 + tag

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

// Steps in the graph of whole periods of P steps each (two for P = 1, so that a unit's
// view written in one step and read in the next are both inside), for `units` units: as
// many periods as reach units / 2 steps, kept within [kStepsPerGraph, kMostStepsPerGraph]
// (or one period, where that is longer).
int periods_span(int P, std::size_t units) {
  const int period = P == 1 ? 2 : P;
  const auto wanted =
      static_cast<int>(std::clamp<std::size_t>(units / 2, kStepsPerGraph, kMostStepsPerGraph));
  return period * std::max(1, (wanted + period - 1) / period);
}

}  // namespace

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
  // Where each unit's work is recorded: an instance of its own (compute(slot)), so that
  // what Kokkos keeps per instance (reduction and team scratch) is not shared by units
  // whose recorded kernels run at once, nor reallocated under the graphs by later work.
  std::unique_ptr<StreamPool> recording;
  std::unique_ptr<ProgramSource> source;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);  // for continuations

  struct Unit {
    Index3 index;
    std::int64_t linear;
    std::vector<PlannedPhase> phases;
  };
  std::vector<Unit> units;  // by local slot
  std::string planning_problem;

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

  // Recorded steps: `span` steps as one graph.
  struct Recorded {
    void* graph = nullptr;  // backend::NativeGraph
    void* exec = nullptr;   // backend::NativeGraphExec
    int span = 1;
  };
  std::vector<Recorded> by_phase;        // one step each, where graphs are recorded
  std::vector<Recorded> early_by_phase;  // with `split`: the work_without_receives of a step
  // Whole periods of `period_span` steps as one graph, where nothing crosses ranks (else 0),
  // recorded when first launched: a program advanced a step at a time never needs it.
  Recorded period;
  int period_span = 0;
  bool whole_periods(std::int64_t k, std::int64_t target);
  enum class Parts { whole, early, rest };  // of each step: all, work_without_receives, the rest
  void drop(Recorded& r) {
    backend::destroy_graph_exec(r.exec);
    backend::destroy_graph(r.graph);
    r = Recorded{};
  }
  // Records `parts` of steps first .. first + span - 1 (their phases) as one graph; "" or
  // why not (with `for_good`: launching that work without a graph fails too).
  std::string record(int first, int span, Parts parts, Recorded& into, bool& for_good);

  // Some unit of this rank exchanges views with another rank.
  bool remote() const { return !links.empty(); }
  std::string unit_name(const Index3& index) const { return cat("unit ", index); }
  std::string where(std::int64_t linear) const {
    return cat("unit ", shape.delinear(linear), " (rank ", map->owner(linear), ")");
  }
};

RankProgram::RankProgram(Runtime& runtime, std::uint32_t collection, const Extent3& shape,
                         const StepProgramOptions& options)
    : runtime_(runtime), impl_(std::make_unique<Impl>()) {
  if (runtime.scheduler().running())
    throw Error(
        "a StepProgram is built by the main program of every rank, between run() calls, never "
        "by an entry method");
  if (options.phases < 1 || options.phases > kMaxPhases)
    throw Error(cat("a StepProgram has 1 to ", kMaxPhases, " phases, not ", options.phases));
  Impl& m = *impl_;
  m.collection = collection;
  m.shape = shape;
  m.options = options;
  m.rank = runtime.rank();
  m.ranks = runtime.size();
  m.comm = runtime.comm();
  m.map = &runtime.collection(collection).map();
  m.epoch = m.map->epoch();
  m.host = &runtime.channel_host();
  m.stream = &runtime.streams().compute(0);
  m.channel_stream = &runtime.streams().communication(0);
  m.source = std::make_unique<ProgramSource>(*m.stream, cat("the step program of collection ",
                                                            collection, " on rank ", m.rank));
  const auto phases = static_cast<std::size_t>(options.phases);
  m.copies.resize(phases);
  m.copy_receivers.resize(phases);
  m.copy_senders.resize(phases);
  m.remote_sends.resize(phases);
  m.remote_receives.resize(phases);
  m.sends_pending.assign(phases, 0);
  m.last_sent.assign(phases, std::numeric_limits<std::int64_t>::min());
  // Its graphs hold the collection's views and the peers' mapped buffers: a migration has
  // them let go before it closes the links and frees the memory (migration.hpp).
  runtime.collection(collection).before_migration[this] = [this] { let_go(); };
  // It records and launches graphs of its own: turns are not recorded while it exists.
  if (Recording* r = m.host->recording()) r->hold();
}

RankProgram::~RankProgram() {
  runtime_.collection(impl_->collection).before_migration.erase(this);
  let_go();
  if (Recording* r = impl_->host->recording()) r->release();
}

void RankProgram::let_go() {
  try {
    impl_->stream->space().fence("kodo::StepProgram");
  } catch (...) {
    // A failed device cannot be waited for; release what can be released.
  }
  for (auto& [id, link] : impl_->links)
    if (link->ring) stop_ring(*link->ring);
  for (auto& r : impl_->by_phase) impl_->drop(r);
  for (auto& r : impl_->early_by_phase) impl_->drop(r);
  impl_->drop(impl_->period);
}

void RankProgram::add(const Index3& unit, std::vector<PlannedPhase> phases) {
  impl_->units.push_back({unit, impl_->shape.linear(unit), std::move(phases)});
}

void RankProgram::fail_planning(const std::string& problem) {
  if (impl_->planning_problem.empty()) impl_->planning_problem = problem;
}

void RankProgram::build() {
  Impl& m = *impl_;
  const int P = m.options.phases;
  const MPI_Comm comm = m.comm;
  auto next = [P](int q) { return (q + 1) % P; };
  std::string problem = m.planning_problem;
  auto complain = [&](const std::string& what) {
    if (problem.empty()) problem = what;
  };

  // Each plan on its own: peers, tags, duplicates, the prime.
  std::map<std::tuple<std::int64_t, std::int64_t, int, int>,
           std::pair<std::size_t, const PlannedTransfer*>>
      receives;  // (receiver, sender, tag, phase) -> receiving slot, transfer
  for (std::size_t slot = 0; slot < m.units.size() && problem.empty(); ++slot) {
    const Impl::Unit& u = m.units[slot];
    for (int q = 0; q < P && problem.empty(); ++q) {
      const PlannedPhase& plan = u.phases[static_cast<std::size_t>(q)];
      auto check = [&](const PlannedTransfer& t, const char* verb) {
        if (!m.shape.contains(t.peer))
          complain(cat(m.unit_name(u.index), " ", verb, " unit ", t.peer, " in phase ", q,
                       ", outside its collection of shape ", m.shape));
        else if (t.tag < 0 || t.tag >= kTagLimit)
          complain(cat(m.unit_name(u.index), " ", verb, " unit ", t.peer, " in phase ", q,
                       " with tag ", t.tag, "; tags are 0 to 2^30 - 1"));
      };
      std::map<std::pair<std::int64_t, int>, int> seen;
      for (const PlannedTransfer& t : plan.sends) {
        check(t, "sends to");
        if (problem.empty() && seen[{m.shape.linear(t.peer), t.tag}]++ == 1)
          complain(cat(m.unit_name(u.index), " sends to unit ", t.peer, " twice with tag ", t.tag,
                       " in phase ", q, ": each transfer of a step needs its own tag"));
      }
      seen.clear();
      for (const PlannedTransfer& t : plan.receives) {
        check(t, "receives from");
        if (!problem.empty()) break;
        const std::int64_t from = m.shape.linear(t.peer);
        if (seen[{from, t.tag}]++ == 1)
          complain(cat(m.unit_name(u.index), " receives from unit ", t.peer, " twice with tag ",
                       t.tag, " in phase ", q, ": each transfer of a step needs its own tag"));
        receives[{u.linear, from, t.tag, q}] = {slot, &t};
      }
      if (problem.empty() && q != P - 1 && plan.primes)
        complain(cat(m.unit_name(u.index), " declares prime() in phase ", q,
                     ": it belongs to the plan of the last phase (", P - 1,
                     "), whose send views it fills before the first step"));
      if (problem.empty() && q == P - 1 && !plan.sends.empty() && !plan.primes)
        complain(cat(m.unit_name(u.index), " sends in phase ", q,
                     ", the last: the receivers' first step (phase 0) reads those views, so "
                     "the plan of that phase declares prime() (with the work that fills them, "
                     "or none when they hold the data already)"));
    }
  }

  // A rank's receive views never overlap: each transfer lands in memory of its own.
  if (problem.empty()) {
    using Receive = decltype(receives)::const_iterator;
    std::vector<std::tuple<const std::byte*, const std::byte*, Receive>> spans;
    for (auto it = receives.begin(); it != receives.end(); ++it) {
      const auto& seg = it->second.second->view.segment;
      const auto* begin = static_cast<const std::byte*>(seg.data);
      if (seg.bytes != 0) spans.emplace_back(begin, begin + seg.bytes, it);
    }
    std::sort(spans.begin(), spans.end(),
              [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
    auto describe = [&](Receive it) {
      const auto [receiver, sender, tag, q] = it->first;
      return cat(m.unit_name(m.shape.delinear(receiver)), "'s receive from unit ",
                 m.shape.delinear(sender), " with tag ", tag, " in phase ", q, " (view '",
                 it->second.second->view.label, "')");
    };
    for (std::size_t i = 1; i < spans.size() && problem.empty(); ++i)
      if (std::get<0>(spans[i]) < std::get<1>(spans[i - 1]))
        complain(cat(describe(std::get<2>(spans[i - 1])), " and ", describe(std::get<2>(spans[i])),
                     " overlap in memory: each receive needs memory of its own"));
  }

  // Sends between units of this rank become copies; others are told to their receivers.
  std::set<std::tuple<std::int64_t, std::int64_t, int, int>> matched;
  for (std::size_t q = 0; q < m.copies.size(); ++q) {
    m.copies[q].resize(m.units.size());
    m.copy_receivers[q].resize(m.units.size());
    m.copy_senders[q].resize(m.units.size());
  }
  std::vector<std::vector<SendRecord>> outgoing(static_cast<std::size_t>(m.ranks));
  for (std::size_t slot = 0; slot < m.units.size() && problem.empty(); ++slot) {
    const Impl::Unit& u = m.units[slot];
    for (int q = 0; q < P && problem.empty(); ++q) {
      for (const PlannedTransfer& t : u.phases[static_cast<std::size_t>(q)].sends) {
        const std::int64_t to = m.shape.linear(t.peer);
        const int owner = m.map->owner(to);
        if (owner != m.rank) {
          outgoing[static_cast<std::size_t>(owner)]
              .push_back({u.linear, to, t.tag, q, static_cast<std::int64_t>(t.view.segment.bytes)});
          continue;
        }
        const auto key = std::make_tuple(to, u.linear, t.tag, next(q));
        const auto found = receives.find(key);
        if (found == receives.end()) {
          complain(cat(m.where(u.linear), " sends to ", m.where(to), " with tag ", t.tag,
                       " in phase ", q, ", but that unit receives nothing from it with tag ", t.tag,
                       " in phase ", next(q)));
          break;
        }
        const PlannedView& into = found->second.second->view;
        if (into.segment.bytes != t.view.segment.bytes) {
          complain(cat(m.where(u.linear), " sends ", t.view.segment.bytes, " bytes to ",
                       m.where(to), " with tag ", t.tag, " in phase ", q, ", which receives ",
                       into.segment.bytes, " ('", into.label, "')"));
          break;
        }
        matched.insert(key);
        const auto phase = static_cast<std::size_t>(q);
        m.copies[phase][slot].push_back({into.segment.data, t.view.segment.data,
                                         t.view.segment.bytes});
        m.copy_receivers[phase][slot].push_back(found->second.first);
        m.copy_senders[phase][found->second.first].push_back(slot);
      }
    }
  }
  for (const auto& [key, found] : receives) {
    if (!problem.empty()) break;
    const auto [receiver, sender, tag, q] = key;
    if (m.map->owner(sender) == m.rank && !matched.count(key))
      complain(cat(m.where(receiver), " receives from ", m.where(sender), " with tag ", tag,
                   " in phase ", q, ", but that unit sends nothing to it with tag ", tag,
                   " in phase ", (q + P - 1) % P));
  }
  agree_and_report(comm, problem);

  // What this rank sends to units of other ranks, checked by their ranks.
  std::vector<int> counts_out(static_cast<std::size_t>(m.ranks)), counts_in(counts_out.size());
  for (std::size_t r = 0; r < outgoing.size(); ++r)
    counts_out[r] = static_cast<int>(outgoing[r].size() * sizeof(SendRecord));
  check_mpi(MPI_Alltoall(counts_out.data(), 1, MPI_INT, counts_in.data(), 1, MPI_INT, comm),
            "MPI_Alltoall");
  std::vector<int> displs_out(counts_out.size()), displs_in(counts_in.size());
  std::vector<SendRecord> flat_out, flat_in;
  int total_in = 0;
  for (std::size_t r = 0; r < outgoing.size(); ++r) {
    displs_out[r] = static_cast<int>(flat_out.size() * sizeof(SendRecord));
    flat_out.insert(flat_out.end(), outgoing[r].begin(), outgoing[r].end());
    displs_in[r] = total_in;
    total_in += counts_in[r];
  }
  flat_in.resize(static_cast<std::size_t>(total_in) / sizeof(SendRecord));
  check_mpi(MPI_Alltoallv(flat_out.data(), counts_out.data(), displs_out.data(), MPI_BYTE,
                          flat_in.data(), counts_in.data(), displs_in.data(), MPI_BYTE, comm),
            "MPI_Alltoallv");
  std::set<std::tuple<std::int64_t, std::int64_t, int, int>> remote_matched;
  for (const SendRecord& s : flat_in) {
    if (!problem.empty()) break;
    const auto q = static_cast<int>(s.phase);
    const auto key = std::make_tuple(s.receiver, s.sender, static_cast<int>(s.tag), next(q));
    const auto found = receives.find(key);
    if (found == receives.end()) {
      complain(cat(m.where(s.sender), " sends to ", m.where(s.receiver), " with tag ", s.tag,
                   " in phase ", q, ", but that unit receives nothing from it with tag ", s.tag,
                   " in phase ", next(q)));
    } else if (static_cast<std::int64_t>(found->second.second->view.segment.bytes) != s.bytes) {
      complain(cat(m.where(s.sender), " sends ", s.bytes, " bytes to ", m.where(s.receiver),
                   " with tag ", s.tag, " in phase ", q, ", which receives ",
                   found->second.second->view.segment.bytes, " ('",
                   found->second.second->view.label, "')"));
    } else {
      remote_matched.insert(key);
    }
  }
  for (const auto& [key, found] : receives) {
    if (!problem.empty()) break;
    const auto [receiver, sender, tag, q] = key;
    if (m.map->owner(sender) != m.rank && !remote_matched.count(key))
      complain(cat(m.where(receiver), " receives from ", m.where(sender), " with tag ", tag,
                   " in phase ", q, ", but that unit sends nothing to it with tag ", tag,
                   " in phase ", (q + P - 1) % P));
  }
  agree_and_report(comm, problem);

  // Channels for the transfers with other ranks. Opening one can fail on this rank alone
  // (its link is open already: another program on the collection, or a unit's own
  // channel on a port from 2^30): every rank then hears of it.
  try {
    auto link_of = [&](std::int64_t local, std::int64_t remote, int tag) -> Impl::RemoteLink& {
      auto& link = m.links[{local, remote, tag}];
      if (!link) {
        link = std::make_unique<Impl::RemoteLink>();
        link->channel =
            Channel(*m.host, LinkSpec{m.collection, m.shape, m.shape.delinear(local),
                                      m.shape.delinear(remote), m.map->owner(remote),
                                      kTagLimit + tag, m.channel_stream, m.options.comm});
        link->name = cat("the transfers from ", m.where(remote), " to unit ",
                         m.shape.delinear(local), " with tag ", tag);
      }
      return *link;
    };
    std::map<std::int64_t, std::size_t> slot_of;
    for (std::size_t slot = 0; slot < m.units.size(); ++slot) {
      const Impl::Unit& u = m.units[slot];
      slot_of[u.linear] = slot;
      for (int q = 0; q < P; ++q)
        for (const PlannedTransfer& t : u.phases[static_cast<std::size_t>(q)].sends) {
          const std::int64_t to = m.shape.linear(t.peer);
          if (m.map->owner(to) == m.rank) continue;
          Impl::RemoteLink& link = link_of(u.linear, to, t.tag);
          link.slot = slot;
          link.peer_phases.push_back(next(q));
          m.remote_sends[static_cast<std::size_t>(q)].push_back({&link, t.view});
        }
    }
    for (auto& [id, link] : m.links) std::sort(link->peer_phases.begin(), link->peer_phases.end());
    std::map<LinkId, std::vector<std::pair<int, const PlannedTransfer*>>> rings;
    for (const auto& [key, found] : receives) {
      const auto [receiver, sender, tag, q] = key;
      if (m.map->owner(sender) != m.rank)
        rings[{receiver, sender, tag}].emplace_back(q, found.second);
    }
    for (auto& [id, views] : rings) {  // phases ascending
      Impl::RemoteLink& link = link_of(id.local, id.remote, id.tag);
      link.slot = slot_of.at(id.local);
      std::vector<Segment> buffers;
      std::vector<std::shared_ptr<const void>> keep;
      for (const auto& [q, t] : views) {
        link.phases.push_back(q);
        link.bytes.push_back(t->view.segment.bytes);
        buffers.push_back(t->view.segment);
        keep.push_back(t->view.keep);
        m.remote_receives[static_cast<std::size_t>(q)].push_back(&link);
      }
      Impl::RemoteLink* in = &link;
      link.ring = link.channel.start_ring(
          std::move(buffers), std::make_shared<std::vector<std::shared_ptr<const void>>>(keep), 1,
          [this, in, alive = std::weak_ptr<bool>(m.alive)](std::uint64_t transfer,
                                                           std::size_t bytes, std::size_t buffer) {
            if (alive.expired()) return;
            if (bytes != in->bytes[buffer])
              throw Error(cat(in->name, ": transfer ", transfer, " brought ", bytes,
                              " bytes into a view of ", in->bytes[buffer]));
            const auto uses = static_cast<std::int64_t>(in->phases.size());
            const auto t = static_cast<std::int64_t>(transfer);
            const std::int64_t step = t / uses * impl_->options.phases +
                                      in->phases[static_cast<std::size_t>(t % uses)];
            ++impl_->arrived[step];
            pump();
          });
    }
  } catch (...) {
    problem = cat("the step program of collection ", m.collection,
                  " could not open its channels: ", what_of_current(),
                  " (programs of one collection keep their tags apart; a unit's own channels take "
                  "ports below 2^29)");
  }
  agree_and_report(comm, problem);

  // Each phase's work and copies as one graph, where the backend records graphs; where no
  // transfer crosses ranks, also whole periods as one graph (periods_span).
  bool early = false;
  for (const auto& u : m.units)
    for (const auto& plan : u.phases) early = early || static_cast<bool>(plan.early);
  m.split = early && std::any_of(m.remote_receives.begin(), m.remote_receives.end(),
                                 [](const auto& links) { return !links.empty(); });
  std::string why;
  bool for_good = false;  // the work can be neither recorded nor launched as it is
  if (m.options.graphs && backend::graphs_supported() && !m.units.empty()) {
    using Parts = Impl::Parts;
    try {
      m.recording = std::make_unique<StreamPool>(static_cast<int>(m.units.size()));
      m.by_phase.resize(static_cast<std::size_t>(P));
      if (m.split) m.early_by_phase.resize(static_cast<std::size_t>(P));
      for (int q = 0; q < P && why.empty(); ++q) {
        const auto phase = static_cast<std::size_t>(q);
        why = m.record(q, 1, m.split ? Parts::rest : Parts::whole, m.by_phase[phase], for_good);
        if (why.empty() && m.split)
          why = m.record(q, 1, Parts::early, m.early_by_phase[phase], for_good);
      }
      // A graph of one kernel saves nothing over launching it, unless its nodes may come to
      // make the transfers with other ranks too (take_device_links).
      bool worth = m.remote() && m.options.comm == CommMode::device;
      for (const auto& list : {m.by_phase, m.early_by_phase})
        for (const auto& r : list)
          worth = worth || (r.graph && backend::graph_kernels(r.graph) > 1);
      if (why.empty() && worth && !m.remote()) m.period_span = periods_span(P, m.units.size());
      if (why.empty() && !worth) why = "-";  // nothing to say: each step is one kernel
    } catch (...) {
      // A graph call the driver refused: launching the work as it is still works.
      why = "building its graph failed: " + what_of_current();
    }
    if (!why.empty()) {
      for (auto& r : m.by_phase) m.drop(r);
      for (auto& r : m.early_by_phase) m.drop(r);
      m.by_phase.clear();
      m.early_by_phase.clear();
      m.drop(m.period);
      m.period_span = 0;
      m.recording.reset();
    }
    if (why == "-") why.clear();
  }
  // Work that Kokkos cannot launch again once a recording has taken its event ends the
  // program on every rank, saying how to write it.
  agree_and_report(comm,
                   for_good
                       ? cat("the step program of collection ", m.collection, " cannot run: ", why,
                             "; keep a work's kernel functors within 512 bytes (or launch them "
                             "with Kokkos::Experimental::WorkItemProperty::HintLightWeight), or "
                             "build the program with graphs = false")
                       : std::string());
  // One line for the job when some rank could not record its work.
  const int mine = why.empty() ? m.ranks : m.rank;
  int first = m.ranks, count = 0, one = why.empty() ? 0 : 1;
  check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(&one, &count, 1, MPI_INT, MPI_SUM, comm), "MPI_Allreduce");
  if (m.rank == first)
    print_error(cat("kodo: the step program of collection ", m.collection, " runs without device ",
                    "graphs on ", count, " rank(s), calling each unit's work every step: on rank ",
                    m.rank, ", ", why));

  // Where every transfer with another rank, on every rank, goes by a same-node route and
  // every rank records its steps, the graphs make those transfers themselves. The routes
  // are known once the rings' offers are answered: the job runs until quiet first.
  int candidate = !m.remote() || (!m.by_phase.empty() && m.options.comm == CommMode::device &&
                                  !backend::streams_run_in_call())
                      ? 1
                      : 0,
      remote_here = m.remote() ? 1 : 0, all_candidates = 0, remote_anywhere = 0;
  check_mpi(MPI_Allreduce(&candidate, &all_candidates, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(&remote_here, &remote_anywhere, 1, MPI_INT, MPI_MAX, comm),
            "MPI_Allreduce");
  if (all_candidates == 0 || remote_anywhere == 0) return;
  runtime_.run();
  int ready = m.device_routes_ready() ? 1 : 0, all_ready = 0;
  check_mpi(MPI_Allreduce(&ready, &all_ready, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  std::string failure;
  if (all_ready != 0 && m.remote()) {
    try {
      m.take_device_links();
    } catch (...) {
      failure = cat("the step program of collection ", m.collection, " on rank ", m.rank,
                    " could not record its transfers with other ranks: ", what_of_current());
    }
  }
  agree_and_report(comm, failure);
}

bool RankProgram::Impl::device_routes_ready() {
  // The graphs count transfers from 0: none may have gone yet.
  for (auto& [id, link] : links) {
    if (link->ring && (!(link->in = route_in(*link->ring)) || link->in->next != 0)) return false;
    if (!link->peer_phases.empty() &&
        (!(link->out = route_out(*link->channel.end_)) || link->out->next != 0))
      return false;
  }
  // A view a step both receives and sends on (or copies to a unit of this rank) is read
  // after its work too: its release would have to wait for that read, and the next
  // sends for the release. Such programs keep their transfers on the host.
  for (const Unit& u : units)
    for (const PlannedPhase& plan : u.phases)
      for (const PlannedTransfer& in : plan.receives)
        for (const PlannedTransfer& out : plan.sends) {
          const auto* a = static_cast<const std::byte*>(in.view.segment.data);
          const auto* b = static_cast<const std::byte*>(out.view.segment.data);
          if (a < b + out.view.segment.bytes && b < a + in.view.segment.bytes) return false;
        }
  return true;
}

// Before the first step, once device_routes_ready() found every route: the rings stop
// taking receives, and each phase's graph is recorded again with the transfers inside.
void RankProgram::Impl::take_device_links() {
  std::size_t sends = 0;
  for (const auto& list : remote_sends) sends += list.size();
  device_words = decltype(device_words)("kodo::StepProgram step and gates", 1 + sends);
  std::uint64_t* next_gate = device_words.data() + 1;
  for (auto& list : remote_sends)
    for (RemoteSend& s : list) s.gate = next_gate++;
  for (auto& [id, link] : links)
    if (link->ring) hand_ring_to_device(*link->ring);
  device_links = true;
  split = false;
  for (auto& r : by_phase) drop(r);
  for (auto& r : early_by_phase) drop(r);
  early_by_phase.clear();
  bool for_good = false;
  std::string why;
  for (int q = 0; q < options.phases && why.empty(); ++q)
    why = record(q, 1, Parts::whole, by_phase[static_cast<std::size_t>(q)], for_good);
  if (!why.empty()) throw Error(why);
  // Whole periods are recorded when first launched (whole_periods), as without device
  // links: a program advanced a step at a time (MiniMD's reneighboring steps) never pays
  // for a graph of 8+ steps of every unit.
  period_span = periods_span(options.phases, units.size());
}

// Whether step k starts a whole period that the steps asked for cover, its graph recorded
// (now, the first time). A period that cannot be recorded is given up: its steps run one
// graph each, as recorded at build.
bool RankProgram::Impl::whole_periods(std::int64_t k, std::int64_t target) {
  if (period_span == 0 || k % options.phases != 0 || target - k < period_span) return false;
  if (period.exec) return true;
  std::string why;
  try {
    bool for_good = false;
    why = record(0, period_span, Parts::whole, period, for_good);
  } catch (...) {
    why = what_of_current();
  }
  if (why.empty()) return true;
  drop(period);
  period_span = 0;
  return false;
}

// Step j of the span (phase (first + j) % P) is, for each unit u, a node E(u, j) holding
// u's work_without_receives, a node W(u, j) holding its work, and a node C(u, j) copying
// the views u sends to units of this rank. E(u, j) runs after u's step j - 1; W(u, j)
// after E(u, j) and every copy into u's views of step j - 1; C(u, j) after u's step j, and
// after the last step of each receiver that read the view it writes (step j + 1 - P, when
// it is in the span).
std::string RankProgram::Impl::record(int first, int span, Parts parts, Recorded& into,
                                      bool& for_good) {
  const int P = options.phases;
  const auto n = units.size();
  into.span = span;
  into.graph = backend::create_graph();
  using Node = backend::NativeGraphNode;
  const auto steps = static_cast<std::size_t>(span);
  std::vector<std::vector<Node>> early(steps, std::vector<Node>(n)),
      work = early, copy = early,
      last = early;  // last: u's final node of step j so far
  auto add = [&](const StepWork& w, const std::vector<Node>& after, std::size_t u, int q,
                 std::string& why) -> Node {
    std::string failure;
    Stream& on = recording->compute(u);
    Node node = backend::add_recorded(
        into.graph, on.native_handle(), [&] { w(on.space()); }, after, failure, for_good);
    if (!node)
      why = cat("the work of ", unit_name(units[u].index), " in phase ", q,
                " cannot be recorded: ", failure);
    return node;
  };
  bool any = false;
  std::string why;
  // With device_links, the transfers with other ranks as nodes too: a wait before the
  // work that reads one, a release after it, a send after the step that fills one (the
  // unit's step j + P, which fills it again, after it); each link's nodes in step order.
  std::vector<Node> all;  // every node, for the one that advances the step
  // By link and kind (0 wait, 1 release, 2 send): the node of the step before.
  std::map<std::pair<const void*, int>, Node> previous;
  std::vector<std::vector<Node>> sent(steps, std::vector<Node>(n));  // remote sends of u's step j
  std::vector<std::vector<Node>> handed(steps);  // the rank's releases and sends of step j
  auto transfer = [&](std::size_t j, std::uint64_t shift, std::uint64_t uses, std::uint64_t index) {
    return backend::StepTransfer{device_words.data(),
                                 static_cast<std::uint64_t>(j),
                                 shift,
                                 static_cast<std::uint64_t>(P),
                                 uses,
                                 index};
  };
  // Step j's transfer of a link it receives on in phase q.
  auto receive_of = [&](const RemoteLink* link, std::size_t j, int q) {
    return transfer(j, 0, link->phases.size(), RemoteLink::index_of(link->phases, q));
  };
  auto chain = [&](std::pair<const void*, int> key, Node node) {
    previous[key] = node;
    all.push_back(node);
    return node;
  };
  auto prior = [&](std::pair<const void*, int> key) {
    const auto it = previous.find(key);
    return it == previous.end() ? std::vector<Node>{} : std::vector<Node>{it->second};
  };
  // A wait of step j: after the link's wait before it and every release and send of the
  // rank's step j - 1 (which the peer may be waiting on).
  auto wait_after = [&](RemoteLink* link, std::size_t j) {
    std::vector<Node> after = prior({link, 0});
    if (j > 0) after.insert(after.end(), handed[j - 1].begin(), handed[j - 1].end());
    return after;
  };
  for (std::size_t j = 0; j < steps && why.empty(); ++j) {
    const int q = (first + static_cast<int>(j)) % P;
    const auto phase = static_cast<std::size_t>(q);
    for (std::size_t u = 0; u < n && why.empty(); ++u) {
      const PlannedPhase& plan = units[u].phases[phase];
      std::vector<Node> before;  // u's step j - 1
      if (j > 0)
        for (Node node : {last[j - 1][u], copy[j - 1][u]})
          if (node) before.push_back(node);
      if (device_links && j >= static_cast<std::size_t>(P) && sent[j - P][u])
        before.push_back(sent[j - P][u]);
      std::vector<Node> waits;
      if (device_links && parts != Parts::early)
        for (RemoteLink* link : remote_receives[phase])
          if (link->slot == u)
            waits.push_back(chain({link, 0},
                                  backend::add_transfer_wait(into.graph, receive_of(link, j, q),
                                                             link->in->arrived,
                                                             wait_after(link, j))));
      if (plan.early && parts != Parts::rest) {
        early[j][u] = add(plan.early, before, u, q, why);
        last[j][u] = early[j][u];
        any = true;
      }
      if (plan.work && parts != Parts::early && why.empty()) {
        std::vector<Node> after = early[j][u] ? std::vector<Node>{early[j][u]} : before;
        if (j > 0)
          for (std::size_t s : copy_senders[static_cast<std::size_t>((q + P - 1) % P)][u])
            if (copy[j - 1][s]) after.push_back(copy[j - 1][s]);
        after.insert(after.end(), waits.begin(), waits.end());
        work[j][u] = add(plan.work, after, u, q, why);
        last[j][u] = work[j][u];
        any = true;
      }
      if (!last[j][u] && j > 0) last[j][u] = last[j - 1][u];
    }
    // The rank's releases of step j, then its sends: no spinning node (a send's wait for the
    // peer's buffer, a wait for a transfer) can be started ahead of a node the peer waits on
    // (a graph's branches need not run side by side).
    if (device_links && parts != Parts::early && why.empty()) {
      std::vector<Node> releases;
      for (std::size_t u = 0; u < n; ++u)
        for (RemoteLink* link : remote_receives[phase])
          if (link->slot == u) {
            std::vector<Node> after = prior({link, 1});
            if (last[j][u]) after.push_back(last[j][u]);
            if (const auto it = previous.find({link, 0}); it != previous.end())
              after.push_back(it->second);  // the step's wait
            releases.push_back(chain({link, 1},
                                     backend::add_transfer_release(into.graph,
                                                                   receive_of(link, j, q),
                                                                   link->in->consumed, after)));
          }
      handed[j] = releases;
      for (std::size_t u = 0; u < n; ++u) {
        std::vector<Node> sends;
        for (RemoteSend& s : remote_sends[phase])
          if (s.link->slot == u) {
            const RemoteLink& link = *s.link;
            const RouteOut& r = *link.out;
            const auto uses = link.peer_phases.size();
            const auto index = RemoteLink::index_of(link.peer_phases, (q + 1) % P);
            std::vector<Node> after = prior({s.link, 2});
            if (last[j][u]) after.push_back(last[j][u]);
            after.insert(after.end(), releases.begin(), releases.end());
            sends.push_back(chain({s.link, 2},
                                  backend::add_transfer_send(
                                      into.graph, transfer(j, 1, uses, index), r.consumed, uses,
                                      r.to[index], s.view.segment.data, s.view.segment.bytes,
                                      r.size_words[index], r.arrived, s.gate, after)));
          }
        if (sends.empty()) continue;
        sent[j][u] = sends.size() == 1 ? sends[0] : backend::add_copies(into.graph, {}, sends);
        handed[j].push_back(sent[j][u]);
      }
    }
    if (parts == Parts::early) continue;
    const auto& list = copies[phase];
    for (std::size_t u = 0; u < list.size() && why.empty(); ++u) {
      if (list[u].empty()) continue;
      std::vector<Node> after;
      if (last[j][u]) after.push_back(last[j][u]);
      if (const int last_read = static_cast<int>(j) + 1 - P; last_read >= 0)
        for (std::size_t r : copy_receivers[phase][u])
          if (Node node = work[static_cast<std::size_t>(last_read)][r];
              node && std::find(after.begin(), after.end(), node) == after.end())
            after.push_back(node);
      copy[j][u] = backend::add_copies(into.graph, list[u], after);
      any = true;
    }
  }
  if (!why.empty()) return why;
  if (device_links) {
    for (const auto& nodes : {early, work, copy})
      for (const auto& step : nodes)
        for (Node node : step)
          if (node) all.push_back(node);
    backend::add_step_advance(into.graph, device_words.data(), static_cast<std::uint64_t>(span),
                              all);
    any = true;
  }
  if (!any) backend::add_copies(into.graph, {}, {});
  into.exec = backend::instantiate_graph(into.graph);
  return "";
}

bool RankProgram::replays_graphs() const { return !impl_->by_phase.empty(); }
bool RankProgram::transfers_on_device() const { return impl_->device_links; }

void RankProgram::advance(std::int64_t steps) {
  if (runtime_.scheduler().running())
    throw Error("StepProgram::advance is for the main program of every rank, between run() calls");
  if (steps < 0) throw Error(cat("StepProgram::advance takes a count of steps, not ", steps));
  if (impl_->map->epoch() != impl_->epoch)
    throw Error(cat("StepProgram::advance: collection ", impl_->collection,
                    "'s units moved since this program was built (kodo::migrate): build the "
                    "program again"));
  if (target_ > std::numeric_limits<std::int64_t>::max() - steps)
    throw Error(cat("StepProgram::advance: ", steps, " more steps overflow the step count"));
  target_ += steps;
  if (steps == 0) return;
  ChannelHost& host = *impl_->host;
  host.expect_event();
  host.queue_callback([this, alive = std::weak_ptr<bool>(impl_->alive)] {
    if (!alive.expired()) pump();
  });
}

// Launches the steps that may run now: in order, at most kAhead past the last known done
// (two graphs of whole periods, where longer), each once the transfers it reads from other
// ranks are in and the views it sends to them are free again.
void RankProgram::pump() {
  static const std::string region = "kodo::step program launch";
  const ToolRegion here(region);
  Impl& m = *impl_;
  const int P = m.options.phases;
  if (!primed_ && target_ > 0) prime();
  const std::int64_t ahead = std::max<std::int64_t>(kAhead, 2 * m.period_span);
  while (launched_ < target_ && launched_ - completed_ < ahead) {
    const std::int64_t k = launched_;
    const auto q = static_cast<std::size_t>(k % P);
    if (m.device_links) {
      const std::int64_t span = m.whole_periods(k, target_) ? m.period_span : 1;
      launch(k, span);
      launched_ += span;
      continue;
    }
    // The step of this phase before k (-1: the prime, before the last phase's first step)
    // has handed its views to the channels, and they are done with them.
    if (const std::int64_t previous = k - P; !m.remote_sends[q].empty() && previous >= -1 &&
                                             (m.last_sent[q] < previous || m.sends_pending[q] != 0))
      return;
    if (m.split && early_launched_ == k) {
      launch_early(k);
      early_launched_ = k + 1;
    }
    if (const std::size_t needed = m.remote_receives[q].size(); needed != 0) {
      const auto in = m.arrived.find(k);
      if (in == m.arrived.end() || in->second < needed) return;
      m.arrived.erase(in);
    }
    // Whole periods at once where they fit (nothing crosses ranks then).
    const std::int64_t span = m.whole_periods(k, target_) ? m.period_span : 1;
    launch(k, span);
    launched_ += span;
  }
}

// With `split`: step k's work_without_receives, before its views from other ranks are in.
void RankProgram::launch_early(std::int64_t k) {
  Impl& m = *impl_;
  const auto q = static_cast<std::size_t>(k % m.options.phases);
  if (!m.early_by_phase.empty()) {
    backend::launch_graph(m.stream->native_handle(), m.early_by_phase[q].exec);
    return;
  }
  for (const Impl::Unit& u : m.units)
    if (const auto& w = u.phases[q].early) w(m.stream->space());
}

void RankProgram::prime() {
  Impl& m = *impl_;
  const auto last = static_cast<std::size_t>(m.options.phases - 1);
  primed_ = true;
  for (const Impl::Unit& u : m.units)
    if (const auto& plan = u.phases[last]; plan.primes && plan.prime) plan.prime(m.stream->space());
  for (const auto& copies : m.copies[last])
    backend::enqueue_copies(m.stream->native_handle(), copies);
  if (m.remote_sends[last].empty()) return;
  if (m.device_links) {
    // Each link's transfer 0 (into the receivers' phase-0 views, the first of their ring):
    // after the prime's work, from the program's stream.
    for (const Impl::RemoteSend& s : m.remote_sends[last]) {
      const RouteOut& r = *s.link->out;
      backend::enqueue_copy_and_publish(m.stream->native_handle(), backend::DeviceWait{}, r.to[0],
                                        s.view.segment.data, s.view.segment.bytes, true,
                                        r.size_words[0], s.view.segment.bytes, r.arrived, 1,
                                        s.gate);
    }
    return;
  }
  runtime_.when_done(*m.source, [this, alive = std::weak_ptr<bool>(m.alive), last] {
    if (alive.expired()) return;
    send_remote(last, -1);
    pump();
  });
}

// The views phase q's step (-1: the prime) filled for units of other ranks leave; the
// phase's next step waits until they are sent.
void RankProgram::send_remote(std::size_t q, std::int64_t step) {
  Impl& m = *impl_;
  const auto alive = std::weak_ptr<bool>(m.alive);
  for (const Impl::RemoteSend& s : m.remote_sends[q]) {
    ++m.sends_pending[q];
    s.link->channel.send_segment(
        s.view.segment, s.view.keep,
        [this, q, alive] {
          if (alive.expired()) return;
          --impl_->sends_pending[q];
          pump();
        },
        true);
  }
  m.last_sent[q] = step;
}

void RankProgram::launch(std::int64_t k, std::int64_t span) {
  Impl& m = *impl_;
  const auto q = static_cast<std::size_t>(k % m.options.phases);
  Trace& trace = runtime_.scheduler().trace();
  const auto begin = trace.enabled() ? Trace::Clock::now() : Trace::Clock::time_point{};
  if (span > 1) {
    backend::launch_graph(m.stream->native_handle(), m.period.exec);
  } else if (!m.by_phase.empty()) {
    backend::launch_graph(m.stream->native_handle(), m.by_phase[q].exec);
  } else {
    for (const Impl::Unit& u : m.units) {
      if (const auto& w = u.phases[q].early; w && !m.split) w(m.stream->space());
      if (const auto& w = u.phases[q].work) w(m.stream->space());
    }
    for (const auto& copies : m.copies[q])
      backend::enqueue_copies(m.stream->native_handle(), copies);
  }
  if (trace.enabled())
    trace.span(span > 1 ? "step program: launch of a period" : "step program: launch of a step", 0,
               begin, Trace::Clock::now());
  const std::int64_t end = k + span;
  if ((m.remote() && !m.device_links) || end - unmarked_ >= kMarkEvery || end >= target_) {
    runtime_.when_done(*m.source,
                       [this, from = unmarked_, end, alive = std::weak_ptr<bool>(m.alive)] {
                         if (alive.expired()) return;
                         for (std::int64_t j = from; j < end; ++j) step_done(j);
                       });
    unmarked_ = end;
  }
}

// Step k's work is done: the transfers it read from other ranks are released (their
// buffers take later ones), the views it filled for units of other ranks leave.
void RankProgram::step_done(std::int64_t k) {
  Impl& m = *impl_;
  const auto q = static_cast<std::size_t>(k % m.options.phases);
  completed_ = k + 1;
  if (m.device_links) return pump();  // the graphs release and send
  for (Impl::RemoteLink* link : m.remote_receives[q])
    release_ring(link->ring.get(), nullptr, link->released++);
  if (!m.remote_sends[q].empty()) send_remote(q, k);
  pump();
}

}  // namespace kodo::detail
