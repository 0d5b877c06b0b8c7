// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/programs/step_program.hpp>

#include <kodo/backends/detail/native.hpp>
#include <kodo/backends/detail/tool_region.hpp>
#include <kodo/core/detail/agree.hpp>
#include <kodo/tasking/programs/detail/step_program_impl.hpp>
#include <kodo/tasking/scheduling/detail/scheduler.hpp>
#include <kodo/tasking/scheduling/runtime.hpp>

#include <algorithm>
#include <limits>

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
constexpr int kMaxPhases = 1 << 16;

}  // namespace

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
  impl_->drop_recorded_work();
}

void RankProgram::add(const Index3& unit, std::vector<PlannedPhase> phases) {
  impl_->units.push_back({unit, impl_->shape.linear(unit), std::move(phases)});
}

void RankProgram::fail_planning(const std::string& problem) {
  if (impl_->planning_problem.empty()) impl_->planning_problem = problem;
}

// Collective: the plans checked and matched, then the channels opened
// (step_program_build.cpp), then the graphs recorded (step_program_graphs.cpp); every rank
// fails together on a problem any rank finds.
void RankProgram::build() {
  const WatchdogPhase watching(runtime_.scheduler().watchdog(),
                               "building a step program (kodo::StepProgram)");
  Impl& m = *impl_;
  m.rounds.assign(static_cast<std::size_t>(m.options.phases), 0);
  for (const Impl::Unit& u : m.units)
    for (std::size_t q = 0; q < m.rounds.size(); ++q)
      m.rounds[q] = std::max(m.rounds[q], u.phases[q].together.size());
  std::string problem = m.planning_problem;
  Impl::Receives receives;
  m.check_plans(receives, problem);
  m.check_receives_apart(receives, problem);
  std::vector<std::vector<SendRecord>> outgoing(static_cast<std::size_t>(m.ranks));
  m.match_sends_on_rank(receives, outgoing, problem);
  agree_and_report(m.comm, problem);
  m.match_sends_from_other_ranks(receives, outgoing, problem);
  agree_and_report(m.comm, problem);
  m.open_channels(*this, receives, problem);
  agree_and_report(m.comm, problem);
  bool for_good = false;  // the work can be neither recorded nor launched as it is
  m.report_graphs(m.record_graphs(for_good), for_good);
  m.take_device_links_where_all_can(runtime_);
}

bool RankProgram::replays_graphs() const {
  return !impl_->by_phase.empty() && !impl_->graphs_given_up;
}
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
  if (!m.early_by_phase.empty() && !m.graphs_given_up)
    if (void* exec = m.executable(m.early_by_phase[q], q, "work_without_receives")) {
      backend::launch_graph(m.stream->native_handle(), exec);
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
  void* step_graph = span == 1 && !m.by_phase.empty() && !m.graphs_given_up
                         ? m.executable(m.by_phase[q], q, "a step")
                         : nullptr;
  if (span > 1) {
    backend::launch_graph(m.stream->native_handle(), m.period.exec);
  } else if (step_graph) {
    backend::launch_graph(m.stream->native_handle(), step_graph);
  } else {
    for (const Impl::Unit& u : m.units)
      if (const auto& w = u.phases[q].early; w && !m.split) w(m.stream->space());
    for (std::size_t r = 0; r < m.rounds[q]; ++r) m.launch_together(q, r, m.stream->space());
    for (const Impl::Unit& u : m.units)
      if (const auto& w = u.phases[q].work) w(m.stream->space());
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

// Round `round` of every unit's work_together in phase `phase`, as one launch per functor
// type on `on`.
void RankProgram::Impl::launch_together(std::size_t phase, std::size_t round,
                                        const ExecutionSpace& on) {
  round_batch_list.clear();
  std::size_t b = 0;
  try {
    for (const Unit& u : units) {
      const auto& together = u.phases[phase].together;
      if (round >= together.size()) continue;
      if (b == round_batches.size())
        round_batches.push_back(std::make_unique<KernelBatch>(*stream));
      KernelBatch& batch = *round_batches[b++];
      together[round](batch);
      round_batch_list.push_back(&batch);
    }
    BatchLauncher::launch_together(on, round_batch_list, round_all, round_group);
  } catch (...) {
    round_batches.clear();  // none keeps kernels of a round that did not go out whole
    throw;
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
