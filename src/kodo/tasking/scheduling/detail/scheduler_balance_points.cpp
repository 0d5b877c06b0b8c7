// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Tasks at balance points (scheduler.hpp): counted, their counts cross-checked between
// ranks once the job is quiet, the collections whose units all reached one balanced, and
// their frames dropped when a run fails.
#include <kodo/core/detail/agree.hpp>
#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/tasking/scheduling/detail/scheduler.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kodo::detail {

std::uint64_t Scheduler::parked_tasks() const {
  std::uint64_t n = 0;
  for (const auto& c : collections_) n += c->parked.size();
  return n;
}

// Every rank's count of its tasks at balance points, by collection, then as it reported
// them to the quiet wave (`reports`, rank by rank), against what every rank knows: no rank
// counts more units of a collection than its map places there, each rank reported as many
// to the wave, and the counts add up to what the wave counted (`wave`). Fills `parked` with
// the job-wide count of each collection; returns what does not add up.
std::string Scheduler::check_parked_reports(const std::vector<std::uint64_t>& reports,
                                            std::uint64_t wave,
                                            std::vector<std::uint64_t>& parked) const {
  const std::size_t n = collections_.size();
  std::uint64_t total = 0;
  for (int rank = 0; rank < size_; ++rank) {
    const std::uint64_t* report = reports.data() + static_cast<std::size_t>(rank) * (n + 1);
    std::uint64_t counted = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto placed = static_cast<std::uint64_t>(collections_[i]->map().count(rank));
      if (report[i] > placed)
        return cat("rank ", rank,
                   "'s report at a balance point does not add up: its field "
                   "parked_tasks counts ",
                   report[i], " of its units of collection ", i,
                   " at a balance point, but the collection's map places ", placed,
                   " unit(s) on that rank");
      parked[i] += report[i];  // each no more than the collection's units: no wrap
      counted += report[i];
    }
    if (counted != report[n])
      return cat("rank ", rank,
                 "'s report at a balance point does not add up: its field "
                 "parked_tasks was ",
                 report[n], " in the termination wave, but it counts ", counted,
                 " task(s) at balance points now");
    total += counted;
  }
  if (total != wave)
    return cat(
        "the ranks' reports at a balance point do not add up: the termination wave "
        "counted ",
        wave,
        " task(s) at balance points (field parked_tasks), but the "
        "ranks count ",
        total,
        " now (a rank sent the wave another count than it "
        "reports here)");
  return {};
}

void Scheduler::balance_parked() {
  const std::size_t n = collections_.size();
  std::vector<std::uint64_t> mine, reports((n + 1) * static_cast<std::size_t>(size_)), parked(n);
  for (const auto& c : collections_) mine.push_back(c->parked.size());
  mine.push_back(termination_.reported(TerminationDetector::parked_tasks_field));
  std::optional<WatchdogPhase> watching;  // until the balancers run: they watch their own
  watching.emplace(watchdog_, "a balance point (each rank's count of the units there)");
  KODO_MPI_CHECK(MPI_Allgather(mine.data(), static_cast<int>(n + 1), MPI_UINT64_T, reports.data(),
                               static_cast<int>(n + 1), MPI_UINT64_T, comm_));
  // Every rank has the same reports: all throw alike (run() drops the parked tasks).
  if (const std::string lie = check_parked_reports(reports, parked_at_quiet_, parked); !lie.empty())
    throw Error(lie);
  // Every parked task ends first (its frame points at its unit, which a migration
  // rebuilds), and no collection is balanced from a run() nested in another's balancing.
  std::string problem;
  std::vector<std::vector<std::function<void()>>> go_on(parked.size());
  const std::uint64_t* own = reports.data() + static_cast<std::size_t>(rank_) * (n + 1);
  for (std::size_t i = 0; i < parked.size(); ++i) {
    CollectionBase& c = *collections_[i];
    // What this rank's report said, as every rank received it, against the tasks it holds.
    if (problem.empty() && own[i] != c.parked.size())
      problem = cat("rank ", rank_,
                    "'s report at a balance point does not add up: its field parked_tasks "
                    "counts ",
                    own[i], " of its units of collection ", i, " at a balance point, but it holds ",
                    c.parked.size(), " task(s) there");
    if (parked[i] == 0) continue;
    if (problem.empty() && parked[i] != static_cast<std::uint64_t>(c.shape().size()))
      problem = cat("the job went quiet with ", parked[i], " of the ", c.shape().size(),
                    " units of collection ", c.id(),
                    " at a balance point: the others' tasks ended or never reached it (every "
                    "unit's task awaits the balance point, in the same phase)");
    else if (problem.empty() && !c.balance_at_point)
      problem = cat("the units of collection ", c.id(),
                    " reached a balance point, but the main program set no balancer for it on "
                    "rank ",
                    rank_, " (kodo::balance_points before run())");
    for (auto& [linear, p] : c.parked) {
      p.frame.destroy();
      go_on[i].push_back(std::move(p.go_on));
    }
    c.parked.clear();
  }
  agree_and_report(comm_, problem);
  watching.reset();
  for (std::size_t i = 0; i < parked.size(); ++i) {
    if (parked[i] == 0) continue;
    running_ = false;  // the balancer runs the quiet job as the main program would
    watchdog_.running(false);
    collections_[i]->balance_at_point();
    watchdog_.running(true);
    running_ = true;
  }
  recording_->issued_outside();  // migrations' copies come before the next turn's graph
  // What each rank does alone from here on cannot fail on one rank only and leave the
  // others waiting: a call that cannot be sent ends the job.
  try {
    for (const auto& calls : go_on)
      for (const auto& f : calls) f();
  } catch (...) {
    fatal(cat("the calls that go on from a balance point could not be sent: ", what_of_current()));
  }
}

void Scheduler::drop_parked() {
  for (const auto& c : collections_) {
    for (auto& [linear, p] : c->parked) p.frame.destroy();
    c->parked.clear();
  }
}

}  // namespace kodo::detail
