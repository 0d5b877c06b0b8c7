// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Probe (not part of the build): what one thread pays for a system-scope fence, a
// device-scope fence and host-memory words, on an idle GPU and beside a kernel that
// streams HBM at full bandwidth (the same-node route's transfer nodes do these).
//
//   nvcc -O2 -arch=sm_90 fence_cost.cu -o fence_cost && ./fence_cost
//
// Results: perf/results/fence_cost_h200_session55.csv.
#include <cuda_runtime.h>

#include <cstdio>
#include <unistd.h>
#define CK(x)                                        \
  do {                                               \
    cudaError_t e = (x);                             \
    if (e != cudaSuccess) {                          \
      printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      return 1;                                      \
    }                                                \
  } while (0)
__device__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__global__ void stream_kernel(const float4* a, float4* b, size_t n, int reps) {
  for (int r = 0; r < reps; ++r)
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
      float4 v = a[i];
      v.x += 1.f;
      b[i] = v;
    }
}
__global__ void fence_kernel(int mode, int iters, double* out,
                             volatile unsigned long long* host_word,
                             volatile unsigned long long* dev_word) {
  unsigned long long acc = 0;
  const unsigned long long t0 = now();
  for (int i = 0; i < iters; ++i) {
    switch (mode) {
      case 0: __threadfence_system(); break;
      case 1: __threadfence(); break;
      case 2:
        *host_word = i;
        __threadfence_system();
        break;
      case 3:
        *dev_word = i;
        __threadfence();
        break;
      case 4: acc += *host_word; break;
      case 5:
        *dev_word = i;
        __threadfence_system();
        break;
    }
  }
  const unsigned long long t1 = now();
  out[mode] = double(t1 - t0) / iters;
  if (acc == 12345) out[9] = 1;
}
int main() {
  const size_t n = size_t(1) << 26;  // 1 GiB of float4 each way
  float4 *a, *b;
  double* out;
  unsigned long long *hw, *dw;
  CK(cudaMalloc(&a, n * 16));
  CK(cudaMalloc(&b, n * 16));
  CK(cudaMallocManaged(&out, 10 * sizeof(double)));
  CK(cudaHostAlloc(&hw, 64, cudaHostAllocMapped));
  CK(cudaMalloc(&dw, 64));
  int least, greatest;
  CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t lo, hi;
  CK(cudaStreamCreateWithPriority(&lo, cudaStreamNonBlocking, least));
  CK(cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking, greatest));
  const char* names[] = {"fence_sys",           "fence_gpu", "host_store+fence_sys",
                         "dev_store+fence_gpu", "host_load", "dev_store+fence_sys"};
  printf("mode,load,ns_per_op\n");
  for (int loaded = 0; loaded < 2; ++loaded)
    for (int mode = 0; mode < 6; ++mode) {
      if (loaded) {
        stream_kernel<<<132 * 4, 256, 0, lo>>>(a, b, n, 64);
        usleep(3000);
      }
      fence_kernel<<<1, 1, 0, hi>>>(mode, 500, out, hw, dw);
      CK(cudaDeviceSynchronize());
      printf("%s,%s,%.1f\n", names[mode], loaded ? "hbm_stream" : "idle", out[mode]);
    }
  // how long the stream kernel runs (to know the fences ran inside it)
  cudaEvent_t s, e;
  cudaEventCreate(&s);
  cudaEventCreate(&e);
  cudaEventRecord(s, lo);
  stream_kernel<<<132 * 4, 256, 0, lo>>>(a, b, n, 8);
  cudaEventRecord(e, lo);
  CK(cudaDeviceSynchronize());
  float ms;
  cudaEventElapsedTime(&ms, s, e);
  printf("# stream kernel %.2f ms, %.0f GB/s\n", ms, 2.0 * n * 16 * 8 / ms / 1e6);
  return 0;
}
