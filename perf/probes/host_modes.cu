// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Probe (not part of the build): how fast this process's host runs, part by part, without
// kodo. On the lent H200 machines one process runs kodo's host path ~1.5x slower than the
// next, for its whole life (every CUDA call alike, cudaGetLastError included); run this
// many times, one process each, to see which of the parts below share the two speeds:
//   spin      a dependent integer chain (the core's clock)
//   l1        a pointer chase in 16 KiB (the core's caches)
//   tlb       a pointer chase over 64 MiB, one line per 4 KiB page (address translation)
//   dram      a pointer chase over 256 MiB, random lines (memory)
//   error     cudaGetLastError (a call into CUDA's runtime that does no device work)
//   launch    an empty kernel launched on a stream (the launch path)
// Prints one CSV line: process id, then ns per step of each part.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 host_modes.cu -o host_modes
//   for i in $(seq 8); do ./host_modes; done

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include <unistd.h>

namespace {

__global__ void empty_kernel() {}

template <class F>
double ns_per_step(std::size_t steps, F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f(steps);
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(steps);
}

// A cycle through `slots` of `next` (each slot's index: where to go next), `stride` apart.
std::vector<std::uint64_t> chase_cycle(std::size_t words, std::size_t stride, std::uint64_t seed) {
  const std::size_t slots = words / stride;
  std::vector<std::size_t> order(slots);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::shuffle(order.begin() + 1, order.end(), std::mt19937_64(seed));
  std::vector<std::uint64_t> next(words, 0);
  for (std::size_t i = 0; i < slots; ++i)
    next[order[i] * stride] = order[(i + 1) % slots] * stride;
  return next;
}

double chase(const std::vector<std::uint64_t>& next, std::size_t steps) {
  volatile std::uint64_t sink = 0;
  const double ns = ns_per_step(steps, [&](std::size_t n) {
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < n; ++i) at = next[at];
    sink = at;
  });
  (void)sink;
  return ns;
}

}  // namespace

int main() {
  cudaFree(nullptr);  // the context, first
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);

  volatile std::uint64_t sink = 0;
  const double spin = ns_per_step(200'000'000, [&](std::size_t n) {
    std::uint64_t x = 1;
    for (std::size_t i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink = x;
  });
  const double l1 = chase(chase_cycle(2048, 8, 1), 50'000'000);
  const double tlb = chase(chase_cycle(8u << 20, 512, 2), 10'000'000);
  const double dram = chase(chase_cycle(32u << 20, 8, 3), 5'000'000);
  const double error = ns_per_step(2'000'000, [](std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) (void)cudaGetLastError();
  });
  for (int i = 0; i < 1000; ++i) empty_kernel<<<1, 32, 0, stream>>>();
  cudaStreamSynchronize(stream);
  // Launched in rounds of 1000 with a wait between: the queue never fills.
  const double launch = ns_per_step(200'000, [&](std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      empty_kernel<<<1, 32, 0, stream>>>();
      if (i % 1000 == 999) cudaStreamSynchronize(stream);
    }
  });
  (void)sink;
  std::printf("pid,spin,l1,tlb,dram,error,launch\n%d,%.3f,%.3f,%.2f,%.2f,%.2f,%.1f\n",
              static_cast<int>(getpid()), spin, l1, tlb, dram, error, launch);
  cudaStreamDestroy(stream);
  return 0;
}
