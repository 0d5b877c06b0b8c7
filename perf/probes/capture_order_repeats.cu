// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Orders repeated inside a capture (backend::order_after_recorded, compiled in from
// src/kodo/backends/cuda/capture.cpp): an order given twice while its source recorded
// nothing new is given once, one given after new work on the source is given again,
// reads ordered after slow writes on another stream see them, and every turn's graph has
// the same shape. Counts the capture-dependency updates by wrapping the CUDA call. Not
// built with kodo; from the repository's root, on a machine with a GPU (CUDA 13):
//
//   nvcc -std=c++20 -arch=sm_90 -I src -o capture_order_repeats perf/probes/capture_order_repeats.cu
//   ./capture_order_repeats     # PASS or FAIL, exit status 0 or 1
#include <cuda_runtime.h>
#include <cstdio>
static int updates = 0;
static cudaError_t counted_update(cudaStream_t s, cudaGraphNode_t* n, const cudaGraphEdgeData* d,
                                  size_t c, unsigned f) {
  ++updates;
  return cudaStreamUpdateCaptureDependencies(s, n, d, c, f);
}
#define cudaStreamUpdateCaptureDependencies counted_update
#include "../../src/kodo/backends/cuda/capture.cpp"  // (the file under check, whole)
#undef cudaStreamUpdateCaptureDependencies
// (kodo's error.cpp needs MPI: the two definitions a failed check would use, stood in.)
kodo::Error::Error(const std::string& what) : std::runtime_error(what) {}
std::string kodo::detail::call_failed(const char* library, const char* call, const char*, int,
                                      const std::string& reason) {
  return std::string(library) + " " + call + ": " + reason;
}

__global__ void slow_write(long* v, long value) {
  long x = 1;
  for (int k = 0; k < 200000; ++k) x = (x * 3 + value) % 1000003;
  *v = value + (x < 0 ? 1 : 0);
}
__global__ void read_check(const long* v, long expected, int* wrong) {
  if (*v != expected) atomicAdd(wrong, 1);
}

int main() {
  using kodo::backend::order_after_recorded;
  cudaStream_t origin, s, w;
  cudaStreamCreateWithFlags(&origin, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&w, cudaStreamNonBlocking);
  cudaEvent_t start, es, ew;
  for (cudaEvent_t* e : {&start, &es, &ew}) cudaEventCreateWithFlags(e, cudaEventDisableTiming);
  long* v;
  int* wrong;
  cudaMalloc(&v, sizeof(long));
  cudaMalloc(&wrong, sizeof(int));
  cudaMemset(wrong, 0, sizeof(int));
  int bad_turns = 0;
  size_t first_nodes = 0, first_edges = 0;
  for (int turn = 0; turn < 4; ++turn) {
    updates = 0;
    int orders = 0;
    cudaStreamBeginCapture(origin, cudaStreamCaptureModeRelaxed);
    cudaEventRecord(start, origin);
    cudaStreamWaitEvent(s, start, 0);
    cudaStreamWaitEvent(w, start, 0);
    for (long lap = 1; lap <= 4; ++lap) {
      slow_write<<<1, 1, 0, s>>>(v, 2 * lap - 1);
      orders += order_after_recorded(w, s);
      orders += order_after_recorded(w, s);  // again: left out
      read_check<<<1, 1, 0, w>>>(v, 2 * lap - 1, wrong);
      orders += order_after_recorded(s, w);
      slow_write<<<1, 1, 0, s>>>(v, 2 * lap);
      orders += order_after_recorded(w, s);  // after new work: given
      read_check<<<1, 1, 0, w>>>(v, 2 * lap, wrong);
      orders += order_after_recorded(s, w);
    }
    cudaEventRecord(es, s);
    cudaEventRecord(ew, w);
    cudaStreamWaitEvent(origin, es, 0);
    cudaStreamWaitEvent(origin, ew, 0);
    cudaGraph_t g;
    if (cudaStreamEndCapture(origin, &g) != cudaSuccess) { std::printf("capture failed\n"); return 1; }
    size_t nodes = 0, edges = 0;
    cudaGraphGetNodes(g, nullptr, &nodes);
    cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &edges);
    if (turn == 0) { first_nodes = nodes; first_edges = edges; }
    cudaGraphExec_t x;
    cudaGraphInstantiate(&x, g, 0);
    cudaGraphLaunch(x, origin);
    cudaStreamSynchronize(origin);
    int h = -1;
    cudaMemcpy(&h, wrong, sizeof(int), cudaMemcpyDeviceToHost);
    std::printf("turn %d: orders %d, updates %d, graph %zu nodes %zu edges, wrong reads so far %d\n", turn,
                orders, updates, nodes, edges, h);
    bad_turns += (updates != 16 || nodes != first_nodes || edges != first_edges);
    cudaGraphExecDestroy(x);
    cudaGraphDestroy(g);
  }
  int h = -1;
  cudaMemcpy(&h, wrong, sizeof(int), cudaMemcpyDeviceToHost);
  std::printf("%s: wrong reads %d, turns off the expected counts or shape %d, last error %s\n",
              h == 0 && bad_turns == 0 ? "PASS" : "FAIL", h, bad_turns,
              cudaGetErrorString(cudaGetLastError()));
  return h == 0 && bad_turns == 0 ? 0 : 1;
}
