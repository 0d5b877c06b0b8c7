// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Ping-pong latency and streaming bandwidth between two units on two ranks over a
// kodo::Channel, GPU-aware (device) and host-staged (host), into a receive ring of two
// buffers (ring: the same-node route between ranks of one node, KODO_CHANNELS=auto; UCX
// with KODO_CHANNELS=ucx), and as entry-method calls carrying the view (call), with views in the
// default memory space (device memory on a GPU build: GPU 0 <-> GPU 1 with one rank per GPU). Calls
// carry views of up to KODO_EAGER_BYTES (default 8 KiB) with the message and larger ones by
// rendezvous, into views from the receiving rank's pool: the default sizes cover both.
//
//   mpiexec -n 2 pingpong_bench [--sizes 8,...] [--modes device,host,ring,call] [--window 32]
//                               [--csv FILE]
//
// Latency: unit 0 sends, unit 1 sends back on arrival; half the round trip, averaged.
// Bandwidth: unit 0 sends `window` messages back to back into receives unit 1 posted
// in advance (all into one buffer, as ucx_perftest does), unit 1 answers with 8 bytes
// when all have landed; bytes moved over time. Every send is kodo::data_ready (the
// buffers are not written between sends), so what is timed is kodo's channel and
// scheduler path over UCX. The receiver checks the data of each trial's last message.
// perf/pingpong.sh runs ucx_perftest beside it.

#include "options.hpp"
#include "report.hpp"

#include <kodo/kodo.hpp>

#include <algorithm>
#include <cinttypes>
#include <optional>
#include <sstream>

namespace {

using Buffer = Kokkos::View<std::byte*>;

struct Trial {
  std::int64_t bytes = 0;
  int iterations = 0;
  int window = 1;  // 1: latency (ping-pong); > 1: bandwidth
  int mode = 0;    // 0, 1, 3, 4: the unit's channels (device, host-staged, ring, stream); 2: calls
};
constexpr int kCallMode = 2, kRingMode = 3, kStreamMode = 4;

class Endpoint : public kodo::WorkUnit<Endpoint> {
 public:
  Endpoint(const kodo::UnitInit<Endpoint>& init, std::int64_t max_bytes)
      : WorkUnit(init),
        out_("out", max_bytes),
        in_("in", max_bytes),
        ack_("ack", 8),
        ack_in_("ack_in", 8) {
    kodo::Stream& s = streams().communication(0);
    const kodo::Index3 peer{1 - init.index.x, 0, 0};
    channel_[0] = open_channel(s, peer, kodo::CommMode::device, 0);
    channel_[1] = open_channel(s, peer, kodo::CommMode::host_staged, 1);
    channel_[2] = open_channel(s, peer, kodo::CommMode::device, 2);
    ring_buffers_ = {Buffer("ring0", max_bytes), Buffer("ring1", max_bytes)};
    ring_ = channel_[2].open_ring(ring_buffers_,
                                  [this](const kodo::Arrival<Buffer>& a) { on_ring(a); });
    Kokkos::deep_copy(out_, std::byte{1});
    Kokkos::fence();
  }

  // Both units get the trial, and unit 1 posts its receives; unit 0 waits for lead().
  // The main program calls lead() only once this is done on every rank (a run() in
  // between): otherwise a transfer or call of the new trial could reach unit 1 before its
  // start(), and be answered as the old trial's. (Stream mode queues every hop of both
  // units here: a hand-over that comes early is taken by the stream, not by unit 1.)
  void start(Trial t) {
    trial_ = t;
    done_ = 0;
    out_view_ = Kokkos::subview(out_, std::make_pair<std::int64_t>(0, t.bytes));
    in_view_ = Kokkos::subview(in_, std::make_pair<std::int64_t>(0, t.bytes));
    last_ = Buffer();
    received_ = 0;
    if (t.mode == kStreamMode) return stream_trial();
    if (index().x == 1 && t.mode != kCallMode && t.mode != kRingMode) post_round();
  }
  // Unit 0 times the trial and leads it.
  void lead() {
    if (index().x != 0 || trial_.mode == kStreamMode) return;
    began_ = perf::seconds();
    trial_.mode == kCallMode ? call_round() : lead_round();
  }
  // Whether the stream mode can run: the ring takes the same-node route.
  bool ring_waits() const { return ring_.waits_on_streams(); }

  // Calls mode: an entry method carrying the view (the receiving runtime takes a view
  // from its pool and the data lands in it). Only the trial's last view is kept, for
  // verify(): each view kept longer would hold pool memory that later calls could reuse.
  void take(Buffer data) {
    if (index().x == 0) return on_answer();
    if (++received_ < trial_.window) return;
    received_ = 0;
    if (++done_ == trial_.iterations) last_ = data;
    unit({0, 0, 0}).send<&Endpoint::take>(trial_.window == 1 ? data : ack_);
  }

  // After a trial, outside its time: unit 1 checks the data it received last.
  void verify() {
    if (index().x == 1) check(last_);
  }

  double seconds = 0;  // unit 0: the trial's time

 private:
  kodo::Channel& link() {
    return channel_[trial_.mode == kRingMode || trial_.mode == kStreamMode ? 2 : trial_.mode];
  }

  // Stream mode (latency only): every hop queued up front on the ring's stream, no host
  // in between: unit 0 sends, its stream waits for the answer (ReceiveRing::wait) and
  // releases it; unit 1's stream waits for each transfer, sends it back from the ring's
  // buffer and releases it. Unit 0's time ends when the last answer is handed over.
  void stream_trial() {
    kodo::Stream& s = streams().communication(0);
    const std::uint64_t first = ring_next_;
    ring_next_ += static_cast<std::uint64_t>(trial_.iterations);
    if (index().x == 0) began_ = perf::seconds();
    for (int i = 0; i < trial_.iterations; ++i) {
      const std::uint64_t k = first + static_cast<std::uint64_t>(i);
      if (index().x == 0) link().send(out_view_);
      ring_.wait(s, k);
      if (index().x == 1) {
        last_ =
            Kokkos::subview(ring_buffers_[k % 2], std::make_pair<std::int64_t>(0, trial_.bytes));
        link().send(last_);
      }
      ring_.release(s, k);
    }
  }

  // Unit 0: a round is `window` sends, then the answer.
  void lead_round() {
    if (trial_.mode != kRingMode)
      link().recv(trial_.window == 1 ? in_view_ : ack_in_, [this] { on_answer(); });
    for (int w = 0; w < trial_.window; ++w) link().send(out_view_, kodo::data_ready);
  }
  void on_answer() {
    if (++done_ < trial_.iterations) return trial_.mode == kCallMode ? call_round() : lead_round();
    seconds = perf::seconds() - began_;
  }
  void call_round() {
    for (int w = 0; w < trial_.window; ++w) unit({1, 0, 0}).send<&Endpoint::take>(out_view_);
  }

  // The data is what unit 0 sent (every byte 1).
  static void check(const Buffer& data) {
    if (data.extent(0) == 0) return;
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, data);
    for (std::size_t i = 0; i < h.extent(0); ++i)
      if (h(i) != std::byte{1})
        kodo::fatal("pingpong_bench: received data differs from what was sent");
  }

  // Unit 1: receives for a round, then the answer.
  void post_round() {
    received_ = 0;
    for (int w = 0; w < trial_.window; ++w) link().recv(in_view_, [this] { on_message(); });
  }
  void on_message() {
    if (++received_ < trial_.window) return;
    const bool more = ++done_ < trial_.iterations;
    if (more) post_round();  // before answering: the next round may follow at once
    last_ = in_view_;
    link().send(trial_.window == 1 ? in_view_ : ack_, kodo::data_ready);
  }

  // Ring mode: each transfer lands in the next of the ring's two buffers (the sender waits
  // for a buffer's release); unit 1 answers from the buffer it was handed, which is
  // released once the answer has left it.
  void on_ring(const kodo::Arrival<Buffer>& a) {
    if (trial_.mode == kStreamMode) {  // waited for and released on the stream already
      if (index().x == 0 && ++done_ == trial_.iterations) seconds = perf::seconds() - began_;
      return;
    }
    ring_next_ = a.transfer + 1;
    if (index().x == 0) {
      ring_.release(a.transfer);
      return on_answer();
    }
    if (++received_ < trial_.window) return ring_.release(a.transfer);
    received_ = 0;
    ++done_;
    last_ = Kokkos::subview(a.view, std::make_pair<std::size_t>(0, a.count));
    link().send(trial_.window == 1 ? last_ : ack_, kodo::data_ready);
    ring_.release(streams().communication(0), a.transfer);
  }

  kodo::Channel channel_[3];
  kodo::ReceiveRing<Buffer> ring_;
  std::vector<Buffer> ring_buffers_;
  // The ring's next transfer to take: handed over (ring mode) or waited for (stream
  // mode, whose hand-overs may come before the unit's trial starts).
  std::uint64_t ring_next_ = 0;
  Buffer out_, in_, ack_, ack_in_;
  Buffer out_view_, in_view_;  // the first `bytes` of out_ and in_
  Buffer last_;                // unit 1: the data received last
  Trial trial_;
  int done_ = 0, received_ = 0;
  double began_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  perf::Options options(
      "pingpong_bench",
      "Ping-pong latency and streaming bandwidth between two units on two ranks (run it on "
      "exactly 2): over a channel, GPU-aware (device) and host-staged (host), into a receive "
      "ring (ring), and as calls carrying a view (call); stream: the ring's latency with every "
      "hop queued up front behind waits on the device (ReceiveRing::wait; the same-node route "
      "only).");
  std::ostringstream default_sizes;  // 8 B to 64 MiB
  for (std::int64_t s = 8; s <= (64 << 20); s *= 2) default_sizes << (s == 8 ? "" : ",") << s;
  const auto& sizes = options.integers("--sizes", default_sizes.str(), 1, std::int64_t{1} << 30,
                                       "message sizes in bytes, comma-separated",
                                       "8 B to 64 MiB by powers of 2");
  const auto& modes = options.words("--modes", {"device", "host", "ring", "stream", "call"},
                                    "device,host,ring,stream,call",
                                    "which to measure, comma-separated");
  const auto& window_option =
      options.integer("--window", 32, 2, 1 << 16, "messages in flight in the bandwidth test");
  const auto& most_option = options.integer(
      "--iterations", 5000, 20, 1 << 24,
      "the most round trips of a latency test (a tenth of it, at least 20, for a bandwidth "
      "test); fewer for large messages");
  const auto& csv_file = options.file("--csv", "also write the rows to FILE");
  if (const auto exit = options.parse(runtime, argc, argv)) return *exit;
  if (runtime.size() != 2) {
    if (runtime.rank() == 0) std::fprintf(stderr, "pingpong_bench: run it on exactly 2 ranks\n");
    return 2;
  }
  const int window = static_cast<int>(window_option);
  const double most = static_cast<double>(most_option);
  std::int64_t max_bytes = 8;
  for (auto s : sizes) max_bytes = std::max(max_bytes, s);

  std::optional<perf::Csv> csv;  // rank 0 reports
  if (runtime.rank() == 0)
    csv.emplace(csv_file, argc, argv,
                "mode,test,bytes,iterations,window,latency_us,bandwidth_GBps");
  auto units = kodo::Collection<Endpoint>::create(runtime, {2, 1, 1}, max_bytes);
  for (int mode : {0, 1, kRingMode, kStreamMode, kCallMode}) {
    const char* name = mode == 0             ? "device"
                       : mode == 1           ? "host"
                       : mode == kRingMode   ? "ring"
                       : mode == kStreamMode ? "stream"
                                             : "call";
    if (std::find(modes.begin(), modes.end(), name) == modes.end()) continue;
    if (mode == kStreamMode) {
      // The ring must have carried a transfer by the route (the ring mode, or a warm-up).
      units.broadcast_local<&Endpoint::start>(Trial{8, 2, 1, kRingMode});
      runtime.run();
      units.broadcast_local<&Endpoint::lead>();
      runtime.run();
      int waits = 0, all = 0;
      units.for_each_local([&](Endpoint& e) { waits = e.ring_waits(); });
      MPI_Allreduce(&waits, &all, 1, MPI_INT, MPI_MIN, runtime.comm());
      if (!all) {
        if (runtime.rank() == 0)
          std::fprintf(stderr,
                       "pingpong_bench: stream mode skipped: the ring does not take the "
                       "same-node route, or may not wait on streams there (KODO_CHANNELS=ucx, "
                       "ranks on two nodes, or ranks sharing a GPU)\n");
        continue;
      }
    }
    for (const std::int64_t bytes : sizes) {
      for (const int w : {1, window}) {
        if (mode == kStreamMode && w != 1) continue;  // latency only
        // Enough repetitions for a stable time, few for large messages.
        const double volume = static_cast<double>(bytes) * w;
        const int iterations =
            static_cast<int>(std::clamp(2e9 / std::max(volume, 1.0), 20.0,
                                        w == 1 ? most : std::max(20.0, most / 10)));
        Trial t{bytes, iterations, w, mode};
        // Warm-up (connections, staging buffers, UCX registration caches), then timed.
        for (const Trial& run : {Trial{bytes, std::min(iterations, 20), w, mode}, t}) {
          units.broadcast_local<&Endpoint::start>(run);
          runtime.run();
          units.broadcast_local<&Endpoint::lead>();
          runtime.run();
        }
        units.broadcast_local<&Endpoint::verify>();
        runtime.run();
        if (runtime.rank() != 0) continue;
        double seconds = 0;
        units.for_each_local([&](Endpoint& e) { seconds = e.seconds; });
        char line[256];
        if (w == 1)
          std::snprintf(line, sizeof line, "%s,latency,%" PRId64 ",%d,1,%.3f,", name, bytes,
                        iterations, seconds / iterations / 2 * 1e6);
        else
          std::snprintf(line, sizeof line, "%s,bandwidth,%" PRId64 ",%d,%d,,%.3f", name, bytes,
                        iterations, w, volume * iterations / seconds * 1e-9);
        csv->row(line);
      }
    }
  }
  return 0;
}
