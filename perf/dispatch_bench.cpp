// Scheduler cost per message on the host: a unit invoking an entry method of a unit on
// the same rank, dispatched by Runtime::run(). Two patterns: a chain (each message sends
// the next, so nothing overlaps) and a burst (all queued, then run).
//
//   dispatch_bench [--messages 1000000] [--csv FILE]

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
  std::int64_t count = 0;
};

constexpr const char* kUsage =
    "usage: dispatch_bench [--messages 1000000] [--csv FILE]\n"
    "Scheduler cost per message: a unit calling an entry method of a unit on its own rank,\n"
    "as a chain (each message sends the next) and as a burst (all queued, then run).\n"
    "  --messages  messages per pattern and repetition (default 1000000)\n"
    "  --csv       also write the rows to FILE\n";

}  // namespace

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(kUsage)) return 0;
  const bool root = runtime.rank() == 0;
  std::unique_ptr<perf::Csv> csv;
  if (root)
    csv = std::make_unique<perf::Csv>(perf::csv_path(argc, argv), argc, argv,
                                      "pattern,messages,ns_per_message");
  const std::int64_t n = std::stoll(perf::option(argc, argv, "--messages", "1000000"));
  auto units = kodo::Collection<Pinger>::create(runtime, {runtime.size(), 1, 1});
  for (const char* pattern : {"chain", "burst"}) {
    for (int rep = 0; rep < 3; ++rep) {
      MPI_Barrier(runtime.comm());
      const double t0 = perf::seconds();
      if (std::string(pattern) == "chain")
        units.broadcast_local<&Pinger::hop>(n - 1);
      else
        units.broadcast_local<&Pinger::burst>(n);
      runtime.run();
      const double per = (perf::seconds() - t0) / static_cast<double>(n) * 1e9;
      if (root && rep == 2) {  // the first two warm up
        char line[128];
        std::snprintf(line, sizeof line, "%s,%" PRId64 ",%.1f", pattern, n, per);
        csv->row(line);
      }
    }
  }
  return 0;
}
