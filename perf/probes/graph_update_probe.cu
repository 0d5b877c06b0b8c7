// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Probe (not part of the build; CUDA only): what cudaGraphExecUpdate and cudaGraphLaunch
// cost a recorded turn depending on which instantiated program the turn's captured graph
// updates. A turn here is 8 streams x 6 kernels with a 128-byte argument and one device
// copy each, captured on an origin stream as kodo's recording does
// (backends/detail/recording.hpp), ~63 us of device time. Rows: host us per turn for the
// capture, the update and the launch, and the wall time per turn of 400 pipelined turns.
//
//   nvcc -O2 -arch=sm_90 graph_update_probe.cu -o graph_update_probe && ./graph_update_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#define CK(x)                                          \
  do {                                                 \
    cudaError_t ck_ = (x);                             \
    if (ck_ != cudaSuccess) {                          \
      printf("%s: %s\n", #x, cudaGetErrorString(ck_)); \
      exit(1);                                         \
    }                                                  \
  } while (0)
struct Arg {
  double* in;
  double* out;
  long n;
  double pad[13];
};
__global__ void work(Arg a) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < a.n) a.out[i] = a.in[i] * 0.5 + 1.0;
}
double now() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now()
                                                       .time_since_epoch())
      .count();
}
int S = 8, K = 6;
long N = 110592;  // 192^3/8/8 ~ per-kernel points
std::vector<cudaStream_t> st;
cudaStream_t origin;
cudaEvent_t ev0;
std::vector<cudaEvent_t> evs;
double *A, *B;
cudaGraph_t capture(int parity) {
  CK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeRelaxed));
  CK(cudaEventRecord(ev0, origin));
  for (int s = 0; s < S; ++s) CK(cudaStreamWaitEvent(st[s], ev0, 0));
  for (int s = 0; s < S; ++s)
    for (int k = 0; k < K; ++k) {
      Arg a{};
      a.n = N;
      double* x = parity ? B : A;
      double* y = parity ? A : B;
      a.in = x + (s * K + k) * N;
      a.out = y + (s * K + k) * N;
      work<<<(N + 255) / 256, 256, 0, st[s]>>>(a);
      if (k == 2) {
        int t = (s + 1) % S;
        CK(cudaMemcpyAsync(y + t * K * N, x + s * K * N, 8 * 4096, cudaMemcpyDeviceToDevice,
                           st[s]));
      }
    }
  for (int s = 0; s < S; ++s) {
    CK(cudaEventRecord(evs[s], st[s]));
    CK(cudaStreamWaitEvent(origin, evs[s], 0));
  }
  cudaGraph_t g;
  CK(cudaStreamEndCapture(origin, &g));
  return g;
}
int main() {
  st.resize(S);
  evs.resize(S);
  for (auto& s : st) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (auto& e : evs) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  CK(cudaStreamCreateWithFlags(&origin, cudaStreamNonBlocking));
  CK(cudaEventCreateWithFlags(&ev0, cudaEventDisableTiming));
  CK(cudaMalloc(&A, sizeof(double) * S * K * N));
  CK(cudaMalloc(&B, sizeof(double) * S * K * N));
  cudaGraph_t g0 = capture(0), g1 = capture(1);
  size_t nodes;
  cudaGraphGetNodes(g0, nullptr, &nodes);
  printf("nodes %zu\n", nodes);
  cudaGraphExec_t X[2];
  CK(cudaGraphInstantiate(&X[0], g0, 0));
  CK(cudaGraphInstantiate(&X[1], g1, 0));
  // mode: 0 update the last-launched exec (in flight) alternating params (kodo today)
  //       1 update the exec from two turns ago (same params as its last)
  //       2 one exec, same params each turn (period 1), update in flight
  //       3 no update: launch the matching exec directly (replay floor, still capturing)
  //       4 update idle exec with changed params (swap: X[t%2] gets parity (t+1)%2)
  //       5 one exec, same params, no capture, launch only
  const char* names[] = {
      "update last (in flight), params alternate", "update two-ago, params match",
      "one exec, period 1, update in flight",      "capture, no update, launch match",
      "update idle exec, params differ",           "launch only"};
  for (int rep = 0; rep < 2; ++rep)
    for (int mode = 0; mode < 6; ++mode) {
      const int T = 400;
      double tc = 0, tu = 0, tl = 0;
      CK(cudaDeviceSynchronize());
      double t0 = now();
      for (int t = 0; t < T; ++t) {
        int parity = (mode == 2 || mode == 5) ? 0 : t % 2;
        double a = now();
        cudaGraph_t g = nullptr;
        if (mode != 5) g = capture(parity);
        double b = now();
        cudaGraphExec_t x;
        if (mode == 0)
          x = X[0];
        else if (mode == 1 || mode == 3)
          x = X[parity];
        else if (mode == 4)
          x = X[1 - parity];
        else
          x = X[0];
        if (mode != 3 && mode != 5) {
          cudaGraphExecUpdateResultInfo info;
          CK(cudaGraphExecUpdate(x, g, &info));
        }
        double c = now();
        CK(cudaGraphLaunch(x, origin));
        double d = now();
        if (g) cudaGraphDestroy(g);
        tc += b - a;
        tu += c - b;
        tl += d - c;
      }
      CK(cudaDeviceSynchronize());
      double t1 = now();
      printf("%-45s capture %7.2f update %7.2f launch %7.2f wall/turn %7.2f us\n", names[mode],
             tc / T, tu / T, tl / T, (t1 - t0) / T);
    }
  // device time per turn
  cudaEvent_t e1, e2;
  cudaEventCreate(&e1);
  cudaEventCreate(&e2);
  cudaEventRecord(e1, origin);
  for (int t = 0; t < 100; ++t) cudaGraphLaunch(X[t % 2], origin);
  cudaEventRecord(e2, origin);
  cudaEventSynchronize(e2);
  float ms;
  cudaEventElapsedTime(&ms, e1, e2);
  printf("device per turn %.2f us\n", ms * 10);
}
