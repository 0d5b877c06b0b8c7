// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Scheduler cost per message on the host: a unit invoking an entry method of a unit on
// the same rank, dispatched by Runtime::run(). Two patterns: a chain (each message sends
// the next, so nothing overlaps) and a burst (all queued, then run). And the cost of a
// coroutine's resume beside a callback's: device work awaited n times in a row, with
// nothing enqueued, by when_done continuations (each asks for the next) and by a task
// (kodo::Task) looping over co_await when_done. And the chain with a task at its end: each
// message is an entry method that puts a value in an inbox, which the unit's task awaits
// before it sends the next (chain_task: a dispatch and a resume per message).
//
//   dispatch_bench [--messages 1000000] [--csv FILE]

#include "options.hpp"
#include "report.hpp"

#include <kodo/kodo.hpp>

#include <cinttypes>

namespace {

class Pinger : public kodo::WorkUnit<Pinger> {
 public:
  explicit Pinger(const kodo::UnitInit<Pinger>& init) : WorkUnit(init) {}
  void hop(std::int64_t left) {
    ++count;
    if (left > 0) unit(index()).send<&Pinger::hop>(left - 1);
  }
  void burst(std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) unit(index()).send<&Pinger::tick>(i);
  }
  void tick(std::int64_t) { ++count; }
  void continuations(std::int64_t left) {
    ++count;
    if (left > 0) when_done(streams().compute(0), [this, left] { continuations(left - 1); });
  }
  kodo::Task task(std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      co_await when_done(streams().compute(0));
      ++count;
    }
  }
  void give(std::int64_t i) { inbox_.put(i, i); }
  kodo::Task chain_task(std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      unit(index()).send<&Pinger::give>(i);
      count += co_await inbox_.take(i) == i;
    }
  }
  std::int64_t count = 0;

 private:
  kodo::Inbox<std::int64_t, std::int64_t> inbox_;
};

}  // namespace

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  perf::Options options(
      "dispatch_bench",
      "Scheduler cost per message: a unit calling an entry method of a unit on its own rank, "
      "as a chain (each message sends the next) and as a burst (all queued, then run); and "
      "device work awaited in a row by when_done continuations and by a coroutine task; and a "
      "chain whose messages a task awaits (chain_task: each resumes it).");
  const auto& n = options.integer("--messages", 1000000, 1, std::int64_t{1} << 40,
                                  "messages per pattern and repetition");
  const auto& csv_file = options.file("--csv", "also write the rows to FILE");
  if (const auto exit = options.parse(runtime, argc, argv)) return *exit;
  const bool root = runtime.rank() == 0;
  std::unique_ptr<perf::Csv> csv;
  if (root)
    csv = std::make_unique<perf::Csv>(csv_file, argc, argv, "pattern,messages,ns_per_message");
  auto units = kodo::Collection<Pinger>::create(runtime, {runtime.size(), 1, 1});
  for (const std::string pattern :
       {"chain", "chain_task", "burst", "when_done_continuations", "when_done_task"}) {
    for (int rep = 0; rep < 3; ++rep) {
      MPI_Barrier(runtime.comm());
      const double t0 = perf::seconds();
      if (pattern == "chain")
        units.broadcast_local<&Pinger::hop>(n - 1);
      else if (pattern == "chain_task")
        units.broadcast_local<&Pinger::chain_task>(n);
      else if (pattern == "burst")
        units.broadcast_local<&Pinger::burst>(n);
      else if (pattern == "when_done_continuations")
        units.broadcast_local<&Pinger::continuations>(n - 1);
      else
        units.broadcast_local<&Pinger::task>(n);
      runtime.run();
      const double per = (perf::seconds() - t0) / static_cast<double>(n) * 1e9;
      if (root && rep == 2) {  // the first two warm up
        char line[128];
        std::snprintf(line, sizeof line, "%s,%" PRId64 ",%.1f", pattern.c_str(), n, per);
        csv->row(line);
      }
    }
  }
  return 0;
}
