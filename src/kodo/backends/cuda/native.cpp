// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// CUDA backend: what differs from HIP here, the rest written once for both in
// detail/gpu_native.hpp, compiled here against CUDA's names. The completion counter is
// written by a stream memory operation (cuStreamWriteValue64): no kernel launch, and the
// host learns of completion by reading its own memory instead of calling cudaEventQuery
// (1.36 us a call on H200).
// Same-node channels publish with a kernel instead: on H200 a memop write followed by a
// peer's memop wait took 6.5 us a hop, a kernel's store seen by a spinning peer 2.8 us
// (perf/probes/device_hop.cu; perf/results/device_hop_probe_h200.csv).

#include <kodo/backends/detail/native.hpp>

#include <kodo/backends/detail/channel_kernels.hpp>
#include <kodo/backends/detail/cuda_check.hpp>
#include <kodo/core/error.hpp>

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

namespace kodo::backend {

const char* name() { return "cuda"; }

std::string device_name(int device) {
  cudaDeviceProp p{};
  KODO_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  return p.name;
}

std::uint64_t* allocate_counters(std::size_t count, std::uint64_t** device_address) {
  void* host = nullptr;
  KODO_CUDA_CHECK(cudaHostAlloc(&host, count * sizeof(std::uint64_t),
                                cudaHostAllocMapped | cudaHostAllocPortable));
  auto* p = static_cast<std::uint64_t*>(host);
  for (std::size_t i = 0; i < count; ++i) p[i] = 0;
  void* dev = nullptr;
  KODO_CUDA_CHECK(cudaHostGetDevicePointer(&dev, host, 0));
  *device_address = static_cast<std::uint64_t*>(dev);
  return p;
}
void free_counters(std::uint64_t* host_address) { cudaFreeHost(host_address); }

void enqueue_counter_write(NativeStream stream, std::uint64_t* device_address,
                           std::uint64_t value) {
  KODO_CUDA_CHECK(cuStreamWriteValue64(static_cast<CUstream>(stream),
                                       reinterpret_cast<CUdeviceptr>(device_address), value,
                                       CU_STREAM_WRITE_VALUE_DEFAULT));
}

bool export_memory(const void* data, MemoryExport& out, std::string& why) {
  CUdeviceptr start = 0;
  std::size_t size = 0;
  if (cuMemGetAddressRange(&start, &size, reinterpret_cast<CUdeviceptr>(data)) != CUDA_SUCCESS) {
    why = "the memory is not a CUDA device allocation";
    return false;
  }
  cudaIpcMemHandle_t handle{};
  const cudaError_t e = cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(start));
  if (e != cudaSuccess) {
    cudaGetLastError();
    why = std::string("cudaIpcGetMemHandle refused it (") + cudaGetErrorString(e) +
          "; memory from cudaMallocAsync pools cannot be exported this way)";
    return false;
  }
  static_assert(sizeof handle <= sizeof out.handle);
  std::memcpy(out.handle.data(), &handle, sizeof handle);
  out.offset = reinterpret_cast<CUdeviceptr>(data) - start;
  return true;
}

void* import_memory(const std::array<std::byte, 64>& exported, std::size_t& bytes,
                    std::string& why) {
  cudaIpcMemHandle_t handle{};
  std::memcpy(&handle, exported.data(), sizeof handle);
  void* start = nullptr;
  const cudaError_t e = cudaIpcOpenMemHandle(&start, handle, cudaIpcMemLazyEnablePeerAccess);
  if (e != cudaSuccess) {
    cudaGetLastError();
    why = std::string("cudaIpcOpenMemHandle failed: ") + cudaGetErrorString(e);
    return nullptr;
  }
  CUdeviceptr base = 0;
  if (cuMemGetAddressRange(&base, &bytes, reinterpret_cast<CUdeviceptr>(start)) != CUDA_SUCCESS) {
    cudaIpcCloseMemHandle(start);
    why = "the mapped allocation's size is unknown (cuMemGetAddressRange)";
    return nullptr;
  }
  return start;
}
void release_import(void* start) { cudaIpcCloseMemHandle(start); }

// --- what gpu_native.hpp asks of this backend -----------------------------------------

namespace {

bool device_addressable(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

// What the shared code (gpu_native.hpp) asks of this backend: errors thrown, a wait's bound
// (in nanoseconds already), a transfer's nodes at the device's greatest priority, as a
// communication stream's kernels: else a face waits for the whole of a kernel the graph
// started beside it.
void check_gpu(cudaError_t e, const char* what) { check_cuda(e, what); }
DeviceWait on_device(DeviceWait wait) { return wait; }
void prioritize_transfer(cudaGraphNode_t node, int greatest) {
  cudaKernelNodeAttrValue first{};
  first.priority = greatest;
  KODO_CUDA_CHECK(cudaGraphKernelNodeSetAttribute(node, cudaKernelNodeAttributePriority, &first));
}
}  // namespace
}  // namespace kodo::backend

#define KODO_GPU(name) cuda##name
#define KODO_GPU_NAME(name) "cuda" #name
#define KODO_GPU_CHECK KODO_CUDA_CHECK
#include <kodo/backends/detail/gpu_native.hpp>

namespace kodo::backend {

NativeGraphExec instantiate_graph(NativeGraph graph) {
  cudaGraphExec_t exec = nullptr;
  // Each kernel node runs at its own priority (a transfer's the greatest, a captured
  // kernel its stream's), not at the priority of the stream the graph is launched into.
  KODO_CUDA_CHECK(cudaGraphInstantiateWithFlags(&exec, build_of(graph).graph,
                                                cudaGraphInstantiateFlagUseNodePriority));
  return exec;
}

void enqueue_copies(NativeStream stream, const std::vector<DeviceCopy>& copies) {
  // One launch for up to kCopiesPerLaunch copies: one call where a cudaMemcpyAsync each
  // took ~1 us of the host's time (and one node where a recorded turn had one a copy).
  kernels::in_copy_batches(copies, [&](const kernels::CopyBatch& batch, unsigned count,
                                       std::size_t largest) {
    const dim3 grid(kernels::copy_blocks(largest), count);
    kernels::
        copy_batch_kernel<<<grid, kernels::kCopyThreads, 0, static_cast<cudaStream_t>(stream)>>>(
            batch);
    check_cuda(cudaGetLastError(), "a kernel launch (same-rank copies)");
  });
}

}  // namespace kodo::backend
