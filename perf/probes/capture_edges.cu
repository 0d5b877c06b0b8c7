// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What an order between two streams costs the host while they are captured: an event
// recorded on one and waited for by the other (cudaEventRecord + cudaStreamWaitEvent),
// against the other given the one's current nodes (cudaStreamGetCaptureInfo +
// cudaStreamUpdateCaptureDependencies). And a recording's close, its streams joining the
// origin: each used stream's event waited for by the origin, against one update of the
// origin with every stream's nodes. No kodo; 8 streams and an origin, as a rank's pool:
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -o capture_edges capture_edges.cu
//   ./capture_edges [turns]      (run it as several processes: the host's two speeds)
//
// Prints per call (us, median over turns) and the graphs' node and edge counts, which
// must agree between the two ways.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                        \
  do {                                                                                  \
    cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

__global__ void empty_kernel() {}

namespace {
constexpr int kStreams = 8;
constexpr int kEdges = 24;  // orders between streams in a turn (Jacobi3D's task path: ~30)
using Clock = std::chrono::steady_clock;
double us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

struct Pool {
  cudaStream_t origin;
  cudaStream_t s[kStreams];
  cudaEvent_t begin_event, ev[kStreams];
  std::vector<cudaGraphNode_t> nodes;  // reused
};

void nodes_of(cudaStream_t s, std::vector<cudaGraphNode_t>& out) {
  cudaStreamCaptureStatus status;
  const cudaGraphNode_t* deps = nullptr;
  size_t n = 0;
  CHECK(cudaStreamGetCaptureInfo(s, &status, nullptr, nullptr, &deps, nullptr, &n));
  out.insert(out.end(), deps, deps + n);
}

// One turn; `nodes_way`: orders and the close by nodes, else by events. Adds each part's
// time per call to `t`.
void turn(Pool& p, bool nodes_way, double t[4], size_t shape[2]) {
  CHECK(cudaStreamBeginCapture(p.origin, cudaStreamCaptureModeRelaxed));
  CHECK(cudaEventRecord(p.begin_event, p.origin));
  for (auto s : p.s) CHECK(cudaStreamWaitEvent(s, p.begin_event, 0));
  const auto t0 = Clock::now();
  for (auto s : p.s) empty_kernel<<<1, 32, 0, s>>>();
  const auto t1 = Clock::now();
  for (int k = 0; k < kEdges; ++k) {
    const int i = k % kStreams, j = (k * 3 + 1) % kStreams;
    if (i == j) continue;
    if (nodes_way) {
      p.nodes.clear();
      nodes_of(p.s[i], p.nodes);
      CHECK(cudaStreamUpdateCaptureDependencies(p.s[j], p.nodes.data(), nullptr, p.nodes.size(),
                                                cudaStreamAddCaptureDependencies));
    } else {
      CHECK(cudaEventRecord(p.ev[i], p.s[i]));
      CHECK(cudaStreamWaitEvent(p.s[j], p.ev[i], 0));
    }
  }
  const auto t2 = Clock::now();
  for (auto s : p.s) empty_kernel<<<1, 32, 0, s>>>();
  const auto t3 = Clock::now();
  if (nodes_way) {
    p.nodes.clear();
    for (auto s : p.s) nodes_of(s, p.nodes);
    std::sort(p.nodes.begin(), p.nodes.end());
    p.nodes.erase(std::unique(p.nodes.begin(), p.nodes.end()), p.nodes.end());
    CHECK(cudaStreamUpdateCaptureDependencies(p.origin, p.nodes.data(), nullptr, p.nodes.size(),
                                              cudaStreamAddCaptureDependencies));
  } else {
    for (int i = 0; i < kStreams; ++i) {
      std::vector<cudaGraphNode_t>& n = p.nodes;
      n.clear();
      nodes_of(p.s[i], n);  // kodo's recorded_on
      if (n.empty()) continue;
      CHECK(cudaEventRecord(p.ev[i], p.s[i]));
      CHECK(cudaStreamWaitEvent(p.origin, p.ev[i], 0));
    }
  }
  const auto t4 = Clock::now();
  cudaGraph_t g = nullptr;
  CHECK(cudaStreamEndCapture(p.origin, &g));
  CHECK(cudaGraphGetNodes(g, nullptr, &shape[0]));
  CHECK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &shape[1]));
  CHECK(cudaGraphDestroy(g));
  t[0] += us(t0, t1) / kStreams;  // a captured launch
  t[1] += us(t1, t2) / kEdges;    // an order between two streams
  t[2] += us(t3, t4);             // the close's joins
  t[3] += us(t2, t3) / kStreams;
}
}  // namespace

int main(int argc, char** argv) {
  const int turns = argc > 1 ? std::atoi(argv[1]) : 4000;
  Pool p;
  CHECK(cudaStreamCreateWithFlags(&p.origin, cudaStreamNonBlocking));
  for (auto& s : p.s) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&p.begin_event, cudaEventDisableTiming));
  for (auto& e : p.ev) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  p.nodes.reserve(64);
  // Rounds of 100 turns each way, alternating, so both see the same host.
  std::vector<double> part[2][3];
  size_t shape[2][2] = {};
  for (int w = 0; w < 2; ++w) turn(p, w == 1, std::vector<double>(4).data(), shape[w]);
  for (int r = 0; r < turns / 100; ++r)
    for (int w = 0; w < 2; ++w) {
      double t[4] = {};
      for (int k = 0; k < 100; ++k) turn(p, w == 1, t, shape[w]);
      part[w][0].push_back((t[0] + t[3]) / 200);
      part[w][1].push_back(t[1] / 100);
      part[w][2].push_back(t[2] / 100);
    }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  for (int w = 0; w < 2; ++w)
    std::printf("%s: captured launch %.3f us, order between streams %.3f us, close's joins "
                "%.3f us; graph %zu nodes %zu edges\n",
                w ? "nodes " : "events", median(part[w][0]), median(part[w][1]),
                median(part[w][2]), shape[w][0], shape[w][1]);
  return 0;
}
