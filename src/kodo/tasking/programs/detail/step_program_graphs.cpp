// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A step program's device graphs: each phase's step recorded at build (where the backend
// records graphs), whole periods recorded when first launched, and, where every rank's
// transfers with other ranks go by same-node routes, those transfers inside the graphs.
#include <kodo/backends/detail/instance_scratch.hpp>
#include <kodo/core/detail/agree.hpp>
#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/tasking/programs/detail/step_program_impl.hpp>
#include <kodo/tasking/scheduling/runtime.hpp>

namespace kodo::detail {
namespace {

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

// Each phase's work and copies as one graph, where the backend records graphs; where no
// transfer crosses ranks, also whole periods as one graph (periods_span).
std::string RankProgram::Impl::record_graphs(bool& for_good) {
  const int P = options.phases;
  bool early = false;
  for (const auto& u : units)
    for (const auto& plan : u.phases) early = early || static_cast<bool>(plan.early);
  split = early && std::any_of(remote_receives.begin(), remote_receives.end(),
                               [](const auto& links) { return !links.empty(); });
  std::string why;
  if (!options.graphs || !backend::graphs_supported() || units.empty()) return why;
  try {
    recording.clear();
    for (std::size_t u = 0; u < units.size(); ++u)
      recording.push_back(std::make_unique<Stream>(false, nullptr, nullptr));
    by_phase.resize(static_cast<std::size_t>(P));
    if (split) early_by_phase.resize(static_cast<std::size_t>(P));
    why = record_phases(for_good);
    // Work that grew its instance's scratch left the recordings made before it reading
    // freed memory: all again, at the grown sizes (Kokkos only grows them).
    if (why.empty() && stale_recorded_work()) {
      for (auto& r : by_phase) drop(r);
      for (auto& r : early_by_phase) drop(r);
      drop_recorded_work();
      why = record_phases(for_good);
      if (const auto stale = why.empty() ? stale_recorded_work() : std::nullopt)
        why = cat(std::get<2>(*stale) >= kRound
                      ? cat("the kernels of round ", std::get<2>(*stale) - kRound,
                            " of work_together")
                      : cat("the work of ", unit_name(units[std::get<0>(*stale)].index)),
                  " in phase ", std::get<1>(*stale),
                  " move the scratch memory Kokkos keeps for an execution-space instance "
                  "(reductions, team scratch) each time they are recorded");
    }
    // A graph of one kernel saves nothing over launching it, unless its nodes may come to
    // make the transfers with other ranks too (take_device_links).
    bool worth = remote() && options.comm == CommMode::device;
    for (const auto& list : {by_phase, early_by_phase})
      for (const auto& r : list) worth = worth || (r.graph && backend::graph_kernels(r.graph) > 1);
    if (why.empty() && worth && !remote()) period_span = periods_span(P, units.size());
    if (why.empty() && !worth) why = "-";  // nothing to say: each step is one kernel
  } catch (...) {
    // A graph call the driver refused: launching the work as it is still works.
    why = "building its graph failed: " + what_of_current();
  }
  if (!why.empty()) {
    for (auto& r : by_phase) drop(r);
    for (auto& r : early_by_phase) drop(r);
    by_phase.clear();
    early_by_phase.clear();
    drop(period);
    period_span = 0;
    recording.clear();
  }
  // No graph will hold the work again where no whole period will be recorded, unless the
  // phases are recorded again with the transfers between their nodes (device links).
  if (period_span == 0 && !may_take_device_links()) drop_recorded_work();
  if (why == "-") why.clear();
  return why;
}

// Each phase's step as one graph (two where `split`), its units' work recorded.
std::string RankProgram::Impl::record_phases(bool& for_good) {
  std::string why;
  for (int q = 0; q < options.phases && why.empty(); ++q) {
    const auto phase = static_cast<std::size_t>(q);
    why = record(q, 1, split ? Parts::rest : Parts::whole, by_phase[phase], for_good);
    if (why.empty() && split) why = record(q, 1, Parts::early, early_by_phase[phase], for_good);
  }
  return why;
}

std::optional<std::tuple<std::size_t, int, int>> RankProgram::Impl::stale_recorded_work() const {
  for (const auto& [key, recorded] : recorded_work)
    if (recorded.scratch != backend::instance_scratch(recording[std::get<0>(key)]->space()))
      return key;
  return std::nullopt;
}

// Work that Kokkos cannot launch again once a recording has taken its event ends the
// program on every rank, saying how to write it; else one line for the job when some rank
// could not record its work.
void RankProgram::Impl::report_graphs(const std::string& why, bool for_good) const {
  agree_and_report(comm,
                   for_good
                       ? cat("the step program of collection ", collection, " cannot run: ", why,
                             "; keep a work's kernel functors within 512 bytes (or launch them "
                             "with Kokkos::Experimental::WorkItemProperty::HintLightWeight), or "
                             "build the program with graphs = false")
                       : std::string());
  const int mine = why.empty() ? ranks : rank;
  int first = ranks, count = 0, one = why.empty() ? 0 : 1;
  KODO_MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  KODO_MPI_CHECK(MPI_Allreduce(&one, &count, 1, MPI_INT, MPI_SUM, comm));
  if (rank == first)
    print_error(cat("kodo: the step program of collection ", collection, " runs without device ",
                    "graphs on ", count, " rank(s), calling each unit's work every step: on rank ",
                    rank, ", ", why));
}

// Where every transfer with another rank, on every rank, goes by a same-node route and
// every rank records its steps, the graphs make those transfers themselves. The routes
// are known once the rings' offers are answered: the job runs until quiet first.
void RankProgram::Impl::take_device_links_where_all_can(Runtime& runtime) {
  int candidate = !remote() || may_take_device_links() ? 1 : 0, remote_here = remote() ? 1 : 0,
      all_candidates = 0, remote_anywhere = 0;
  KODO_MPI_CHECK(MPI_Allreduce(&candidate, &all_candidates, 1, MPI_INT, MPI_MIN, comm));
  KODO_MPI_CHECK(MPI_Allreduce(&remote_here, &remote_anywhere, 1, MPI_INT, MPI_MAX, comm));
  // The recorded work kept for device links goes where they are not taken.
  struct DropUnused {
    Impl& m;
    ~DropUnused() {
      if (!m.device_links && m.period_span == 0) m.drop_recorded_work();
    }
  } drop_unused{*this};
  if (all_candidates == 0 || remote_anywhere == 0) return;
  runtime.run();
  int ready = device_routes_ready() ? 1 : 0, all_ready = 0;
  KODO_MPI_CHECK(MPI_Allreduce(&ready, &all_ready, 1, MPI_INT, MPI_MIN, comm));
  std::string failure;
  if (all_ready != 0 && remote()) {
    try {
      take_device_links();
    } catch (...) {
      failure = cat("the step program of collection ", collection, " on rank ", rank,
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
// taking receives, and each phase's graph is recorded again with the transfers inside
// (from the units' work as recorded at build).
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
    if (why.empty()) period.exec = backend::instantiate_graph(period.graph);
  } catch (...) {
    why = what_of_current();
  }
  drop_recorded_work();  // recorded once more at most (the period's), or never again
  if (why.empty()) return true;
  drop(period);
  period_span = 0;
  return false;
}

// `r`, phase `phase`'s graph of `what`, ready to launch: instantiated the first time. Where
// that fails, the rank's steps run without graphs from then on (one line says so), as a
// build whose graphs failed does; with device links, whose transfers only the graphs make,
// the job ends (the scheduler's fatal error, on every rank).
void* RankProgram::Impl::executable(Recorded& r, std::size_t phase, const char* what) {
  if (r.exec) return r.exec;
  try {
    r.exec = backend::instantiate_graph(r.graph);
    return r.exec;
  } catch (...) {
    const std::string failure = cat("instantiating its graph of phase ", phase, " (", what,
                                    ") failed: ", what_of_current());
    if (device_links)
      throw Error(cat("the step program of collection ", collection, " on rank ", rank, ": ",
                      failure));
    graphs_given_up = true;
    period_span = 0;
    print_error(cat("kodo: the step program of collection ", collection, " on rank ", rank,
                    " runs without device graphs from here on, calling each unit's work every "
                    "step: ",
                    failure));
    return nullptr;
  }
}

// Step j of the span (phase (first + j) % P) is, for each unit u, a node E(u, j) holding
// u's work_without_receives, a node W(u, j) holding its work, and a node C(u, j) copying
// the views u sends to units of this rank; and, where the phase has rounds of
// work_together, a node R(r, j) for each round r holding every unit's kernels of it.
// E(u, j) runs after u's step j - 1; W(u, j) after E(u, j) and every copy into u's views
// of step j - 1 (or, where u has rounds, after the last round); R(0, j) after all that of
// every unit with rounds, R(r, j) after R(r - 1, j); C(u, j) after u's step j, and after
// the last step of each receiver that read the view it writes (step j + 1 - P, when it is
// in the span).
//
// With device_links, the transfers with other ranks are nodes too: a wait before the
// work that reads one, a release after it, a send after the step that fills one (the
// unit's step j + P, which fills it again, after it); each link's nodes in step order.
struct RankProgram::Impl::Recorder {
  using Node = backend::NativeGraphNode;
  using Key = std::pair<const void*, int>;  // a link and a kind: 0 wait, 1 release, 2 send

  Impl& m;
  Parts parts;
  Recorded& into;
  bool& for_good;
  int P;
  std::size_t n;
  std::vector<std::vector<Node>> early, work, copy;
  std::vector<std::vector<Node>> last;  // u's final node of step j so far
  // What u's rounds or work of step j wait for (its step j - 1, its E(u, j), the copies
  // into its views, its waits), and the last round of step j.
  std::vector<std::vector<std::vector<Node>>> ready;
  std::vector<Node> last_round, rounds;  // by step; every round node
  bool any = false;
  std::string why;
  std::vector<Node> all;                  // every node, for the one that advances the step
  std::map<Key, Node> previous;           // by link and kind: the node of the step before
  std::vector<std::vector<Node>> sent;    // remote sends of u's step j
  std::vector<std::vector<Node>> handed;  // the rank's releases and sends of step j

  Recorder(Impl& m, std::size_t steps, Parts parts, Recorded& into, bool& for_good)
      : m(m),
        parts(parts),
        into(into),
        for_good(for_good),
        P(m.options.phases),
        n(m.units.size()),
        early(steps, std::vector<Node>(n)),
        work(early),
        copy(early),
        last(early),
        ready(steps, std::vector<std::vector<Node>>(n)),
        last_round(steps),
        sent(steps, std::vector<Node>(n)),
        handed(steps) {}

  // Unit u's work of phase q of `kind` (kWork, kEarly), recorded the first time a graph
  // takes it; with kind kRound + r, round r of every unit's work_together (u = 0).
  Node add(int kind, const std::vector<Node>& after, std::size_t u, int q) {
    auto& [recorded, scratch] = m.recorded_work[{u, q, kind}];
    if (!recorded) {
      std::string failure;
      Stream& on = *m.recording[u];
      const auto phase = static_cast<std::size_t>(q);
      const PlannedPhase& plan = m.units[u].phases[phase];
      scratch = backend::instance_scratch(on.space());
      recorded = backend::record_work(
          on.native_handle(),
          [&] {
            if (kind == kWork) plan.work(on.space());
            if (kind == kEarly) plan.early(on.space());
            if (kind >= kRound)
              m.launch_together(phase, static_cast<std::size_t>(kind - kRound), on.space());
          },
          failure, for_good);
      if (!recorded) {
        why = kind >= kRound
                  ? cat("the kernels of round ", kind - kRound, " of work_together in phase ", q,
                        " cannot be recorded: ", failure)
                  : cat("the work of ", m.unit_name(m.units[u].index), " in phase ", q,
                        " cannot be recorded: ", failure);
        return nullptr;
      }
    }
    return backend::add_work(into.graph, recorded, after);
  }
  backend::StepTransfer transfer(std::size_t j, std::uint64_t shift, std::uint64_t uses,
                                 std::uint64_t index) const {
    return backend::StepTransfer{m.device_words.data(),
                                 static_cast<std::uint64_t>(j),
                                 shift,
                                 static_cast<std::uint64_t>(P),
                                 uses,
                                 index};
  }
  // Step j's transfer of a link it receives on in phase q.
  backend::StepTransfer receive_of(const RemoteLink* link, std::size_t j, int q) const {
    return transfer(j, 0, link->phases.size(), RemoteLink::index_of(link->phases, q));
  }
  Node chain(Key key, Node node) {
    previous[key] = node;
    all.push_back(node);
    return node;
  }
  std::vector<Node> prior(Key key) const {
    const auto it = previous.find(key);
    return it == previous.end() ? std::vector<Node>{} : std::vector<Node>{it->second};
  }
  // A wait of step j: after the link's wait before it and every release and send of the
  // rank's step j - 1 (which the peer may be waiting on).
  std::vector<Node> wait_after(RemoteLink* link, std::size_t j) const {
    std::vector<Node> after = prior({link, 0});
    if (j > 0) after.insert(after.end(), handed[j - 1].begin(), handed[j - 1].end());
    return after;
  }

  void add_unit_start(std::size_t j, int q, std::size_t u);
  void add_rounds(std::size_t j, int q);
  void add_unit_work(std::size_t j, int q, std::size_t u);
  void add_releases_and_sends(std::size_t j, int q);
  void add_copies(std::size_t j, int q);
  void add_step_advance(int span);
};

// Unit u's step j up to its rounds and work: the waits for its transfers from other
// ranks, its work_without_receives, and what its rounds and work wait for.
void RankProgram::Impl::Recorder::add_unit_start(std::size_t j, int q, std::size_t u) {
  const auto phase = static_cast<std::size_t>(q);
  const PlannedPhase& plan = m.units[u].phases[phase];
  std::vector<Node> before;  // u's step j - 1, and what read the views step j writes again
  if (j > 0)
    for (Node node : {last[j - 1][u], copy[j - 1][u]})
      if (node) before.push_back(node);
  // The copies of step j - P read the send views this step fills again (a unit with
  // nothing to do in a phase between leaves them off its chain).
  if (j >= static_cast<std::size_t>(P) && copy[j - P][u]) before.push_back(copy[j - P][u]);
  if (m.device_links && j >= static_cast<std::size_t>(P) && sent[j - P][u])
    before.push_back(sent[j - P][u]);
  std::vector<Node> waits;
  if (m.device_links && parts != Parts::early)
    for (RemoteLink* link : m.remote_receives[phase])
      if (link->slot == u)
        waits.push_back(chain({link, 0},
                              backend::add_transfer_wait(into.graph, receive_of(link, j, q),
                                                         link->in->arrived, wait_after(link, j))));
  if (plan.early && parts != Parts::rest) {
    early[j][u] = add(kEarly, before, u, q);
    last[j][u] = early[j][u];
    any = true;
  }
  std::vector<Node>& after = ready[j][u];
  after = early[j][u] ? std::vector<Node>{early[j][u]} : before;
  if (j > 0)
    for (std::size_t s : m.copy_senders[static_cast<std::size_t>((q + P - 1) % P)][u])
      if (copy[j - 1][s]) after.push_back(copy[j - 1][s]);
  after.insert(after.end(), waits.begin(), waits.end());
}

// Step j's rounds of work_together, after what every unit with rounds waits for.
void RankProgram::Impl::Recorder::add_rounds(std::size_t j, int q) {
  const auto phase = static_cast<std::size_t>(q);
  if (parts == Parts::early || m.rounds[phase] == 0) return;
  std::vector<Node> after;
  for (std::size_t u = 0; u < n; ++u)
    if (!m.units[u].phases[phase].together.empty())
      after.insert(after.end(), ready[j][u].begin(), ready[j][u].end());
  for (std::size_t r = 0; r < m.rounds[phase] && why.empty(); ++r) {
    last_round[j] = add(kRound + static_cast<int>(r), after, 0, q);
    rounds.push_back(last_round[j]);
    after = {last_round[j]};
    any = true;
  }
}

// Unit u's work of step j, after its rounds where it has some.
void RankProgram::Impl::Recorder::add_unit_work(std::size_t j, int q, std::size_t u) {
  const PlannedPhase& plan = m.units[u].phases[static_cast<std::size_t>(q)];
  const bool rounds_of_u = parts != Parts::early && !plan.together.empty();
  if (rounds_of_u) {
    work[j][u] = last_round[j];  // (the node that reads u's receives last, so far)
    last[j][u] = last_round[j];
  }
  if (plan.work && parts != Parts::early && why.empty()) {
    work[j][u] = add(kWork, rounds_of_u ? std::vector<Node>{last_round[j]} : ready[j][u], u, q);
    last[j][u] = work[j][u];
    any = true;
  }
  if (!last[j][u] && j > 0) last[j][u] = last[j - 1][u];
}

// The rank's releases of step j, then its sends: no spinning node (a send's wait for the
// peer's buffer, a wait for a transfer) can be started ahead of a node the peer waits on
// (a graph's branches need not run side by side).
void RankProgram::Impl::Recorder::add_releases_and_sends(std::size_t j, int q) {
  const auto phase = static_cast<std::size_t>(q);
  std::vector<Node> releases;
  for (std::size_t u = 0; u < n; ++u)
    for (RemoteLink* link : m.remote_receives[phase])
      if (link->slot == u) {
        std::vector<Node> after = prior({link, 1});
        if (last[j][u]) after.push_back(last[j][u]);
        if (const auto it = previous.find({link, 0}); it != previous.end())
          after.push_back(it->second);  // the step's wait
        releases.push_back(chain({link, 1},
                                 backend::add_transfer_release(into.graph, receive_of(link, j, q),
                                                               link->in->consumed, after)));
      }
  handed[j] = releases;
  for (std::size_t u = 0; u < n; ++u) {
    std::vector<Node> sends;
    for (RemoteSend& s : m.remote_sends[phase])
      if (s.link->slot == u) {
        const RemoteLink& link = *s.link;
        const RouteOut& r = *link.out;
        const auto uses = link.peer_phases.size();
        const auto index = RemoteLink::index_of(link.peer_phases, (q + 1) % P);
        std::vector<Node> after = prior({s.link, 2});
        if (last[j][u]) after.push_back(last[j][u]);
        after.insert(after.end(), releases.begin(), releases.end());
        sends.push_back(chain({s.link, 2},
                              backend::add_transfer_send(into.graph, transfer(j, 1, uses, index),
                                                         r.consumed, uses, r.to[index],
                                                         s.view.segment.data, s.view.segment.bytes,
                                                         r.size_words[index], r.arrived, s.gate,
                                                         after)));
      }
    if (sends.empty()) continue;
    sent[j][u] = sends.size() == 1 ? sends[0] : backend::add_copies(into.graph, {}, sends);
    handed[j].push_back(sent[j][u]);
  }
}

// Step j's copies into the views of units of this rank: a node a sending unit, but one
// for all the units whose step ends with the phase's last round (they meet there: a node
// each would only add launches).
void RankProgram::Impl::Recorder::add_copies(std::size_t j, int q) {
  const auto phase = static_cast<std::size_t>(q);
  const auto& list = m.copies[phase];
  // After the sender's step j, and the last step of each receiver that read the view the
  // copy writes (step j + 1 - P, when it is in the span).
  auto add_after = [&](std::size_t u, std::vector<Node>& after) {
    if (last[j][u] && std::find(after.begin(), after.end(), last[j][u]) == after.end())
      after.push_back(last[j][u]);
    if (const int last_read = static_cast<int>(j) + 1 - P; last_read >= 0)
      for (std::size_t r : m.copy_receivers[phase][u])
        if (Node node = work[static_cast<std::size_t>(last_read)][r];
            node && std::find(after.begin(), after.end(), node) == after.end())
          after.push_back(node);
  };
  std::vector<backend::DeviceCopy> together;
  std::vector<Node> together_after;
  std::vector<std::size_t> joined;
  for (std::size_t u = 0; u < list.size() && why.empty(); ++u) {
    if (list[u].empty()) continue;
    if (last_round[j] && last[j][u] == last_round[j]) {
      together.insert(together.end(), list[u].begin(), list[u].end());
      add_after(u, together_after);
      joined.push_back(u);
      continue;
    }
    std::vector<Node> after;
    add_after(u, after);
    copy[j][u] = backend::add_copies(into.graph, list[u], after);
    any = true;
  }
  if (joined.empty() || !why.empty()) return;
  const Node node = backend::add_copies(into.graph, together, together_after);
  for (std::size_t u : joined) copy[j][u] = node;
  any = true;
}

// With device_links: the node that advances the step count, after every other.
void RankProgram::Impl::Recorder::add_step_advance(int span) {
  for (const auto& nodes : {early, work, copy})
    for (const auto& step : nodes)
      for (Node node : step)
        if (node) all.push_back(node);
  all.insert(all.end(), rounds.begin(), rounds.end());
  backend::add_step_advance(into.graph, m.device_words.data(), static_cast<std::uint64_t>(span),
                            all);
  any = true;
}

std::string RankProgram::Impl::record(int first, int span, Parts parts, Recorded& into,
                                      bool& for_good) {
  into.span = span;
  into.graph = backend::create_graph();
  const auto steps = static_cast<std::size_t>(span);
  Recorder graph(*this, steps, parts, into, for_good);
  for (std::size_t j = 0; j < steps && graph.why.empty(); ++j) {
    const int q = (first + static_cast<int>(j)) % options.phases;
    for (std::size_t u = 0; u < units.size() && graph.why.empty(); ++u)
      graph.add_unit_start(j, q, u);
    if (graph.why.empty()) graph.add_rounds(j, q);
    for (std::size_t u = 0; u < units.size() && graph.why.empty(); ++u)
      graph.add_unit_work(j, q, u);
    if (device_links && parts != Parts::early && graph.why.empty())
      graph.add_releases_and_sends(j, q);
    if (parts != Parts::early) graph.add_copies(j, q);
  }
  if (!graph.why.empty()) return graph.why;
  if (device_links) graph.add_step_advance(span);
  if (!graph.any) backend::add_copies(into.graph, {}, {});
  return "";
}

}  // namespace kodo::detail
