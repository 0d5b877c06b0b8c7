// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Kernels of same-node channels (native.hpp: enqueue_wait, enqueue_copy_and_publish), of
// device graphs' copy nodes (add_copies) and transfer nodes (add_transfer_*, with the
// nodes' wiring), shared by the CUDA and HIP backends: included
// only by cuda/native.cpp and hip/native.cpp, compiled by nvcc or hipcc.

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif

#include <kodo/backends/detail/native.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kodo::backend::kernels {

// A clock for bounding waits: nanoseconds on CUDA; on HIP the wall clock's ticks (the
// host converts DeviceWait::timeout_ns to them before the launch).
__device__ inline std::uint64_t wait_clock() {
#if defined(__HIPCC__)
  return wall_clock64();
#else
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}

__device__ inline void pause_briefly() {
#if defined(__HIPCC__)
  __builtin_amdgcn_s_sleep(2);
#else
  __nanosleep(200);
#endif
}

// DeviceWait's loop, for one thread: true once the count is reached; false once the
// other side abandoned the link (work behind a receive wait goes on; a copy into a
// buffer the receiver may still read is skipped) or the bound is spent (failure stored).
// The words live in host memory, and reads of one word by many waiting threads are served
// one after another: the abandon and failure words (the latter one word for all of a
// rank's waits) are read once every 32 rounds, the count every round.
__device__ bool wait_for_count(const DeviceWait& w) {
  if (!w.word) return true;
  const auto* word = reinterpret_cast<const volatile std::uint64_t*>(w.word);
  const auto* abandon = reinterpret_cast<const volatile std::uint64_t*>(w.abandon);
  auto* failure = reinterpret_cast<volatile std::uint64_t*>(w.failure_word);
  const std::uint64_t start = wait_clock();
  for (unsigned round = 1; *word < w.value; ++round) {
    if (round % 32 == 0) {
      if (abandon && *abandon != 0) return false;
      if (*failure != 0) return false;  // another wait failed: the job is ending
      if (wait_clock() - start > w.timeout_ns) {
        *failure = w.failure;
        __threadfence_system();
        return false;
      }
    }
    pause_briefly();
  }
  __threadfence_system();  // what the other side wrote before the count, seen after it
  return true;
}

// Thread 0 waits for the whole block; false for every thread when the wait failed.
__device__ bool block_waits(const DeviceWait& w) {
  __shared__ int ok;
  if (threadIdx.x == 0) ok = wait_for_count(w);
  __syncthreads();
  return ok != 0;
}

__global__ void wait_kernel(DeviceWait w) { wait_for_count(w); }

// Copies with 16-byte words when both ends allow it.
__device__ void copy_part(unsigned char* to, const unsigned char* from, std::size_t bytes,
                          std::size_t first, std::size_t stride) {
  const bool wide =
      ((reinterpret_cast<std::uintptr_t>(to) | reinterpret_cast<std::uintptr_t>(from)) & 15) == 0;
  std::size_t done = 0;
  if (wide) {
    const std::size_t words = bytes / 16;
    auto* t = reinterpret_cast<uint4*>(to);
    const auto* f = reinterpret_cast<const uint4*>(from);
    for (std::size_t i = first; i < words; i += stride) t[i] = f[i];
    done = words * 16;
  }
  for (std::size_t i = done + first; i < bytes; i += stride) to[i] = from[i];
}

// The stores that publish a transfer: after everything this thread's block (and the
// kernels before it on the stream) wrote, at system scope, size before count.
__device__ void publish(std::uint64_t* size_word, std::uint64_t size, std::uint64_t* count_word,
                        std::uint64_t count) {
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0) {
    *reinterpret_cast<volatile std::uint64_t*>(size_word) = size;
    __threadfence_system();
    *reinterpret_cast<volatile std::uint64_t*>(count_word) = count;
  }
}

__global__ void copy_and_publish_kernel(DeviceWait first, unsigned char* to,
                                        const unsigned char* from, std::size_t bytes,
                                        std::uint64_t* size_word, std::uint64_t size,
                                        std::uint64_t* count_word, std::uint64_t count) {
  if (!block_waits(first)) return;
  copy_part(to, from, bytes, threadIdx.x, blockDim.x);
  publish(size_word, size, count_word, count);
}
// A large copy's wait: one thread waits and stores the outcome (1: go on, 0: skip the
// copy) in a word of device memory that every block of the copy then reads. Blocks that
// each read the wait's word in host memory are served one after another (about 1 us a
// block between two H200s, perf/results/device_hop_route_flags_h200x2.csv).
__global__ void gate_kernel(DeviceWait first, std::uint64_t* gate) {
  *reinterpret_cast<volatile std::uint64_t*>(gate) = wait_for_count(first) ? 1 : 0;
}
// The publish after it waits again, which then passes at once, so a failed wait also
// skips the stores. No gate: no wait.
__global__ void copy_kernel(const std::uint64_t* gate, unsigned char* to, const unsigned char* from,
                            std::size_t bytes) {
  if (gate && *reinterpret_cast<const volatile std::uint64_t*>(gate) == 0) return;
  copy_part(to, from, bytes, std::size_t(blockIdx.x) * blockDim.x + threadIdx.x,
            std::size_t(gridDim.x) * blockDim.x);
}
// After a gated copy (`gate` not null) its outcome decides; otherwise the wait again.
__global__ void publish_kernel(DeviceWait first, const std::uint64_t* gate,
                               std::uint64_t* size_word, std::uint64_t size,
                               std::uint64_t* count_word, std::uint64_t count) {
  if (gate ? *reinterpret_cast<const volatile std::uint64_t*>(gate) == 0 : !block_waits(first))
    return;
  publish(size_word, size, count_word, count);
}

// --- transfers made by a graph's nodes (native.hpp: StepTransfer) ---------------------

__device__ inline std::uint64_t transfer_of(const StepTransfer& s) {
  const std::uint64_t k = *reinterpret_cast<const volatile std::uint64_t*>(s.step) + s.offset;
  return (k + s.shift) / s.phases * s.uses + s.index;
}
__global__ void transfer_wait_kernel(StepTransfer s, DeviceWait arrived) {
  arrived.value = transfer_of(s) + 1;
  wait_for_count(arrived);
}
__global__ void transfer_release_kernel(StepTransfer s, std::uint64_t* consumed) {
  __threadfence_system();  // the step's reads of the buffer are done before
  *reinterpret_cast<volatile std::uint64_t*>(consumed) = transfer_of(s) + 1;
}
__global__ void transfer_gate_kernel(StepTransfer s, DeviceWait free, std::uint64_t buffers,
                                     std::uint64_t* gate) {
  const std::uint64_t t = transfer_of(s);
  bool go = true;
  if (t >= buffers) {
    free.value = t + 1 - buffers;
    go = wait_for_count(free);
  }
  *reinterpret_cast<volatile std::uint64_t*>(gate) = go ? 1 : 0;
}
__global__ void transfer_publish_kernel(StepTransfer s, const std::uint64_t* gate,
                                        std::uint64_t* size_word, std::uint64_t size,
                                        std::uint64_t* count_word) {
  if (*reinterpret_cast<const volatile std::uint64_t*>(gate) == 0) return;
  publish(size_word, size, count_word, transfer_of(s) + 1);
}
__global__ void step_advance_kernel(std::uint64_t* step, std::uint64_t steps) { *step += steps; }

// Copies passed by value, as a kernel's parameters (no list in device memory to fill
// first): enqueue_copies launches one kernel, and add_copies adds one kernel node, for up
// to kCopiesPerLaunch of them.
inline constexpr unsigned kCopiesPerLaunch = 64;  // 1.5 KiB of parameters
struct CopyBatch {
  DeviceCopy copies[kCopiesPerLaunch];
};
// Calls take(batch, count, largest) for each kCopiesPerLaunch of `copies` (those of a byte
// or more, in order): a batch, how many it holds and its largest copy's bytes.
template <class Take>
void in_copy_batches(const std::vector<DeviceCopy>& copies, Take&& take) {
  CopyBatch batch{};
  unsigned count = 0;
  std::size_t largest = 0;
  for (const DeviceCopy& c : copies) {
    if (c.bytes == 0) continue;
    batch.copies[count++] = c;
    largest = c.bytes > largest ? c.bytes : largest;
    if (count < kCopiesPerLaunch) continue;
    take(batch, count, largest);
    batch = CopyBatch{};  // a recorded turn's unused entries repeat too
    count = 0;
    largest = 0;
  }
  if (count > 0) take(batch, count, largest);
}
__global__ void copy_batch_kernel(CopyBatch batch) {
  const DeviceCopy c = batch.copies[blockIdx.y];
  copy_part(static_cast<unsigned char*>(c.to), static_cast<const unsigned char*>(c.from), c.bytes,
            std::size_t(blockIdx.x) * blockDim.x + threadIdx.x,
            std::size_t(gridDim.x) * blockDim.x);
}
// Blocks of kCopyThreads for a copy of `bytes` (16 bytes a thread), or for a list of copies
// whose largest is `bytes`.
inline constexpr unsigned kCopyThreads = 512;
inline unsigned copy_blocks(std::size_t bytes) {
  const std::size_t blocks = (bytes + 8191) / 8192;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 1024 ? 1024 : blocks);
}

// --- a graph's transfer nodes (native.hpp: add_transfer_wait, add_transfer_release,
// add_transfer_send, add_step_advance), made of the kernels above with the backend's
// `add`: add(graph, kernel, blocks, threads, arguments, after) adds a kernel node. ---------

template <class Add>
NativeGraphNode transfer_wait_node(Add add, NativeGraph graph, StepTransfer s, DeviceWait arrived,
                                   const std::vector<NativeGraphNode>& after) {
  void* arguments[] = {&s, &arrived};
  return add(graph, reinterpret_cast<const void*>(&transfer_wait_kernel), 1, 1, arguments, after);
}

template <class Add>
NativeGraphNode transfer_release_node(Add add, NativeGraph graph, StepTransfer s,
                                      std::uint64_t* consumed_word,
                                      const std::vector<NativeGraphNode>& after) {
  void* arguments[] = {&s, &consumed_word};
  return add(graph, reinterpret_cast<const void*>(&transfer_release_kernel), 1, 1, arguments,
             after);
}

// One thread waits for a free buffer (the gate), the copy on every SM reads the gate, and
// one thread publishes (a copy of no bytes has no copy node).
template <class Add>
NativeGraphNode transfer_send_nodes(Add add, NativeGraph graph, StepTransfer s, DeviceWait free,
                                    std::uint64_t buffers, void* to, const void* from,
                                    std::size_t bytes, std::uint64_t* size_word,
                                    std::uint64_t* count_word, std::uint64_t* gate,
                                    const std::vector<NativeGraphNode>& after) {
  void* gate_arguments[] = {&s, &free, &buffers, &gate};
  NativeGraphNode last =
      add(graph, reinterpret_cast<const void*>(&transfer_gate_kernel), 1, 1, gate_arguments, after);
  const std::uint64_t* open = gate;
  if (bytes != 0) {
    auto* t = static_cast<unsigned char*>(to);
    const auto* f = static_cast<const unsigned char*>(from);
    void* copy_arguments[] = {&open, &t, &f, &bytes};
    last = add(graph, reinterpret_cast<const void*>(&copy_kernel), copy_blocks(bytes), kCopyThreads,
               copy_arguments, {last});
  }
  std::uint64_t size = bytes;
  void* publish_arguments[] = {&s, &open, &size_word, &size, &count_word};
  return add(graph, reinterpret_cast<const void*>(&transfer_publish_kernel), 1, 32,
             publish_arguments, {last});
}

template <class Add>
NativeGraphNode step_advance_node(Add add, NativeGraph graph, std::uint64_t* step,
                                  std::uint64_t steps, const std::vector<NativeGraphNode>& after) {
  void* arguments[] = {&step, &steps};
  return add(graph, reinterpret_cast<const void*>(&step_advance_kernel), 1, 1, arguments, after);
}

}  // namespace kodo::backend::kernels
