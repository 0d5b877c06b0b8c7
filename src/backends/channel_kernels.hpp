#pragma once
// Kernels of same-node channels (native.hpp: enqueue_copy_and_publish), shared by the
// CUDA and HIP backends: included only by cuda/native.cpp and hip/native.cpp, compiled by
// nvcc or hipcc.

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif

#include <cstddef>
#include <cstdint>

namespace kodo::backend::kernels {

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

__global__ void copy_and_publish_kernel(unsigned char* to, const unsigned char* from,
                                        std::size_t bytes, std::uint64_t* size_word,
                                        std::uint64_t size, std::uint64_t* count_word,
                                        std::uint64_t count) {
  copy_part(to, from, bytes, threadIdx.x, blockDim.x);
  publish(size_word, size, count_word, count);
}
__global__ void copy_kernel(unsigned char* to, const unsigned char* from, std::size_t bytes) {
  copy_part(to, from, bytes, std::size_t(blockIdx.x) * blockDim.x + threadIdx.x,
            std::size_t(gridDim.x) * blockDim.x);
}
__global__ void publish_kernel(std::uint64_t* size_word, std::uint64_t size,
                               std::uint64_t* count_word, std::uint64_t count) {
  publish(size_word, size, count_word, count);
}

}  // namespace kodo::backend::kernels
