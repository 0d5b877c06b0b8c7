// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// How fast and how cheaply the rank learns that device work is done.
//
//   latency: a kernel spins until the host releases it, then stores a flag into host
//   memory and ends. A helper thread timestamps the flag (device completion as the
//   host sees it); the main thread timestamps the moment it learns of completion by
//   (a) the completion engine (a counter the stream writes), (b) polling
//   cudaEventQuery/hipEventQuery, (c) fencing the stream. Median over the trials.
//
//   polling cost: P operations pending on the rank's streams (held back by spinning
//   kernels); the time of one completion-engine poll, against one sweep of event
//   queries over the P operations' events.
//
//   completion_bench [--trials 2000] [--csv FILE]
// Device backends only: on the host backend work completes in the launching call.
// It measures internals on purpose: the backend's own event calls (backends/detail/native.hpp)
// and the completion engine itself (tasking/scheduling/detail/completion_engine.hpp), side by side.

#include "options.hpp"
#include "report.hpp"

#include <kodo/backends/detail/native.hpp>
#include <kodo/kodo.hpp>
#include <kodo/tasking/scheduling/detail/completion_engine.hpp>

#include <atomic>
#include <cinttypes>
#include <thread>

namespace {

using Pinned = Kokkos::SharedHostPinnedSpace;
using Space = kodo::ExecutionSpace;

struct Flags {
  volatile std::uint64_t* go;
  volatile std::uint64_t* started;
  volatile std::uint64_t* done;
};

// One thread that waits for `go >= ticket`, then reports `done = ticket`.
void launch_gate(const Space& space, Flags f, std::uint64_t ticket) {
  Kokkos::parallel_for(
      "bench::gate", Kokkos::RangePolicy<Space>(space, 0, 1), KOKKOS_LAMBDA(int) {
        *f.started = ticket;
        while (*f.go < ticket) {
        }
        *f.done = ticket;
      });
}

}  // namespace

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  perf::Options options("completion_bench",
                        "How fast and how cheaply a rank learns that device work is done: the "
                        "completion engine against event queries and stream fences. Device "
                        "backends only.");
  const auto& trials = options.integer("--trials", 2000, 1, 1 << 24, "latency trials per method");
  const auto& csv_file = options.file("--csv", "also write the rows to FILE");
  if (const auto exit = options.parse(runtime, argc, argv)) return *exit;
  if (kodo::host_build) {
    std::fprintf(
        stderr,
        "completion_bench: needs a device backend (host work completes in the launching call)\n");
    return 2;
  }
  perf::Csv csv(csv_file, argc, argv, "measure,method,pending,median_us,p90_us,samples");
  Kokkos::View<std::uint64_t*, Pinned> storage("flags", 3);
  Kokkos::deep_copy(storage, 0);
  Flags f{storage.data(), storage.data() + 1, storage.data() + 2};
  kodo::Stream& stream = runtime.streams().communication(0);
  kodo::CompletionEngine engine;
  kodo::backend::NativeEvent event = kodo::backend::create_event();
  std::uint64_t ticket = 0;

  // --- latency -------------------------------------------------------------------
  // The watcher spins on its own core for the whole run; per trial it announces that
  // it is watching before the kernel is released, so its timestamp is never late.
  std::atomic<std::uint64_t> watching{0}, watch_for{0};
  std::atomic<double> observed{0};
  std::atomic<bool> quit{false};
  std::thread watcher([&] {
    std::uint64_t last = 0;
    while (!quit) {
      const std::uint64_t k = watch_for.load();
      if (k == last) continue;
      watching = k;
      while (*f.done < k) {
      }
      observed = perf::seconds();
      last = k;
    }
  });
  const int n = static_cast<int>(trials);
  for (const char* method : {"completion_engine", "event_query", "fence"}) {
    std::vector<double> latency;
    double last_observed = observed.load();
    for (int t = 0; t < n; ++t) {
      const std::uint64_t k = ++ticket;
      launch_gate(stream.space(), f, k);
      bool fired = false;
      double learned = 0;
      const std::string m = method;
      if (m == "completion_engine")
        engine.when_done(stream, [&] {
          learned = perf::seconds();
          fired = true;
        });
      if (m == "event_query") kodo::backend::record_event(stream.native_handle(), event);
      while (*f.started < k) {
      }
      watch_for = k;
      while (watching.load() != k) {
      }
      *f.go = k;
      if (m == "completion_engine") {
        while (!fired) engine.poll();
      } else if (m == "event_query") {
        while (!kodo::backend::event_reached(event)) {
        }
        learned = perf::seconds();
      } else {
        stream.space().fence();
        learned = perf::seconds();
      }
      while (observed.load() == 0 || last_observed == observed.load()) {
      }
      last_observed = observed.load();
      if (t >= 10) latency.push_back((learned - observed.load()) * 1e6);  // skip warm-up
    }
    char line[256];
    std::snprintf(line, sizeof line, "latency,%s,1,%.3f,%.3f,%zu", method, perf::median(latency),
                  perf::percentile(latency, 0.9), latency.size());
    csv.row(line);
  }

  quit = true;
  watch_for = ++ticket;  // wake the watcher out of its idle loop
  *f.done = ticket;
  watcher.join();

  // --- polling cost with P pending operations ------------------------------------
  auto& pool = runtime.streams();
  const int streams = 2 * pool.per_priority();
  auto stream_at = [&](int i) -> kodo::Stream& {
    return i % 2 ? pool.communication(i / 2) : pool.compute(i / 2);
  };
  for (const int pending : {1, 16, 256}) {
    const std::uint64_t k = ++ticket;
    for (int i = 0; i < streams; ++i) launch_gate(stream_at(i).space(), f, k);
    std::vector<kodo::backend::NativeEvent> events(pending);
    int outstanding = 0;
    for (int p = 0; p < pending; ++p) {
      kodo::Stream& s = stream_at(p % streams);
      engine.when_done(s, [&] { --outstanding; });
      ++outstanding;
      events[p] = kodo::backend::create_event();
      kodo::backend::record_event(s.native_handle(), events[p]);
    }
    constexpr int loops = 20000;
    std::vector<double> poll_us, query_us;
    for (int l = 0; l < loops; ++l) {
      double t0 = perf::seconds();
      engine.poll();
      poll_us.push_back((perf::seconds() - t0) * 1e6);
      if (l % 20 == 0) {  // event sweeps are slow: fewer samples
        t0 = perf::seconds();
        int reached = 0;
        for (auto e : events) reached += kodo::backend::event_reached(e);
        query_us.push_back((perf::seconds() - t0) * 1e6);
        if (reached) std::fprintf(stderr, "warning: %d events reached while held back\n", reached);
      }
    }
    *f.go = k;
    while (outstanding > 0) engine.poll();
    for (auto e : events) kodo::backend::destroy_event(e);
    char line[256];
    std::snprintf(line, sizeof line, "poll_cost,completion_engine,%d,%.4f,%.4f,%zu", pending,
                  perf::median(poll_us), perf::percentile(poll_us, 0.9), poll_us.size());
    csv.row(line);
    std::snprintf(line, sizeof line, "poll_cost,event_query_sweep,%d,%.4f,%.4f,%zu", pending,
                  perf::median(query_us), perf::percentile(query_us, 0.9), query_us.size());
    csv.row(line);
  }
  Kokkos::fence();
  kodo::backend::destroy_event(event);
  return 0;
}
