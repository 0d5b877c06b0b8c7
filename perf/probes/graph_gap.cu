// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What a chain of graphs costs the device between one graph and the next, against the same
// kernels issued on streams: the shape of a recorded turn of Jacobi3D's overlapped task path
// (a boundary kernel, then an inner update beside a copy), one turn after another, with the
// host far ahead. Not built with kodo (CUDA only):
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -o graph_gap perf/probes/graph_gap.cu && ./graph_gap
//
// Prints us an iteration for: the kernels on streams; one graph a turn (two instantiated
// graphs taken in turn, as kodo's recordings do); the same with kodo's close after each
// launch (an event recorded on the graph's stream, nine streams waiting for it); two turns
// in one graph. The differences are the device's time between graphs.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                     \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,                 \
                   cudaGetErrorString(e_));                                          \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

__global__ void copy(const double2* __restrict__ from, double2* __restrict__ to, long n) {
  const long stride = long(gridDim.x) * blockDim.x;
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += stride) to[i] = from[i];
}

struct Work {
  double2 *a0, *a1, *b0, *b1, *c0, *c1;
  long na, nb, nc;
};

void launch(const Work& w, char which, cudaStream_t s) {
  const int threads = 512, blocks = 132 * 4;
  if (which == 'a') copy<<<blocks, threads, 0, s>>>(w.a0, w.a1, w.na);
  if (which == 'b') copy<<<blocks, threads, 0, s>>>(w.b0, w.b1, w.nb);
  if (which == 'c') copy<<<blocks, threads, 0, s>>>(w.c0, w.c1, w.nc);
}

// One turn: b on `main`, then a on `main` beside c on `side`, joined back to `main`.
void turn(const Work& w, cudaStream_t main, cudaStream_t side, cudaEvent_t fork,
          cudaEvent_t join) {
  launch(w, 'b', main);
  CHECK(cudaEventRecord(fork, main));
  CHECK(cudaStreamWaitEvent(side, fork, 0));
  launch(w, 'c', side);
  launch(w, 'a', main);
  CHECK(cudaEventRecord(join, side));
  CHECK(cudaStreamWaitEvent(main, join, 0));
}

cudaGraphExec_t record(const Work& w, int turns, cudaStream_t main, cudaStream_t side,
                       cudaEvent_t fork, cudaEvent_t join) {
  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(main, cudaStreamCaptureModeRelaxed));
  for (int t = 0; t < turns; ++t) turn(w, main, side, fork, join);
  CHECK(cudaStreamEndCapture(main, &g));
  cudaGraphExec_t e;
  CHECK(cudaGraphInstantiate(&e, g, 0));
  CHECK(cudaGraphDestroy(g));
  return e;
}

template <class Issue>
double per_iteration(int iterations, cudaStream_t main, Issue&& issue) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 50; ++i) issue(i);
  CHECK(cudaStreamSynchronize(main));
  CHECK(cudaEventRecord(start, main));
  for (int i = 0; i < iterations; ++i) issue(i);
  CHECK(cudaEventRecord(stop, main));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  return 1000.0 * ms / iterations;
}

int main(int argc, char** argv) {
  // Defaults near Jacobi3D 192^3 at ODF 8 on an H200: a ~40 us inner update, an ~8 us
  // boundary, ~3 us of copies (16-byte elements, read and written).
  Work w{};
  w.na = argc > 1 ? std::atol(argv[1]) : 3400000;
  w.nb = argc > 2 ? std::atol(argv[2]) : 500000;
  w.nc = argc > 3 ? std::atol(argv[3]) : 150000;
  const int iterations = argc > 4 ? std::atoi(argv[4]) : 2000;
  for (auto [p, n] : {std::pair{&w.a0, w.na}, {&w.a1, w.na}, {&w.b0, w.nb}, {&w.b1, w.nb},
                      {&w.c0, w.nc}, {&w.c1, w.nc}})
    CHECK(cudaMalloc(p, n * sizeof(double2)));
  int least, greatest;
  CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t main, side, others[9];
  CHECK(cudaStreamCreateWithPriority(&main, cudaStreamNonBlocking, least));
  CHECK(cudaStreamCreateWithPriority(&side, cudaStreamNonBlocking, least));
  for (auto& o : others) CHECK(cudaStreamCreateWithFlags(&o, cudaStreamNonBlocking));
  cudaEvent_t fork, join, closed;
  CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&closed, cudaEventDisableTiming));

  const double serial = per_iteration(iterations, main, [&](int) {
    launch(w, 'b', main);
    launch(w, 'a', main);
    launch(w, 'c', main);
  });
  const double streams =
      per_iteration(iterations, main, [&](int) { turn(w, main, side, fork, join); });
  cudaGraphExec_t one[2] = {record(w, 1, main, side, fork, join),
                            record(w, 1, main, side, fork, join)};
  const double graphs = per_iteration(iterations, main,
                                      [&](int i) { CHECK(cudaGraphLaunch(one[i % 2], main)); });
  const double graphs_closed = per_iteration(iterations, main, [&](int i) {
    CHECK(cudaGraphLaunch(one[i % 2], main));
    CHECK(cudaEventRecord(closed, main));
    for (auto o : others) CHECK(cudaStreamWaitEvent(o, closed, 0));
  });
  cudaGraphExec_t two = record(w, 2, main, side, fork, join);
  const double graphs_of_two =
      per_iteration(iterations / 2, main, [&](int) { CHECK(cudaGraphLaunch(two, main)); }) / 2;
  const double a_alone = per_iteration(iterations, main, [&](int) { launch(w, 'a', main); });

  std::printf("elements (16 B): inner %ld, boundary %ld, copies %ld; %d iterations\n", w.na, w.nb,
              w.nc, iterations);
  std::printf("us an iteration: inner alone %.2f; b, a, c in series on one stream %.2f\n",
              a_alone, serial);
  std::printf("  on streams (c beside a) %.2f\n", streams);
  std::printf("  one graph a turn %.2f (+%.2f)\n", graphs, graphs - streams);
  std::printf("  one graph a turn, kodo's close after each %.2f (+%.2f)\n", graphs_closed,
              graphs_closed - streams);
  std::printf("  two turns a graph %.2f (+%.2f)\n", graphs_of_two, graphs_of_two - streams);
  return 0;
}
