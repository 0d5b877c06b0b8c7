// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// HIP backend: what differs from CUDA here, the rest written once for both in
// detail/gpu_native.hpp, compiled here against HIP's names.

#include <kodo/backends/detail/native.hpp>

#include <kodo/backends/detail/channel_kernels.hpp>
#include <kodo/backends/detail/hip_check.hpp>
#include <kodo/core/error.hpp>

#include <hip/hip_runtime.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace kodo::backend {

const char* name() { return "hip"; }

std::string device_name(int device) {
  hipDeviceProp_t p{};
  KODO_HIP_CHECK(hipGetDeviceProperties(&p, device));
  return p.name;
}

// Coherent: the host spins on values the device writes, which must not sit in a cache.
std::uint64_t* allocate_counters(std::size_t count, std::uint64_t** device_address) {
  void* host = nullptr;
  KODO_HIP_CHECK(hipHostMalloc(&host, count * sizeof(std::uint64_t),
                               hipHostMallocMapped | hipHostMallocPortable |
                                   hipHostMallocCoherent));
  auto* p = static_cast<std::uint64_t*>(host);
  for (std::size_t i = 0; i < count; ++i) p[i] = 0;
  void* dev = nullptr;
  KODO_HIP_CHECK(hipHostGetDevicePointer(&dev, host, 0));
  *device_address = static_cast<std::uint64_t*>(dev);
  return p;
}
void free_counters(std::uint64_t* host_address) { (void)hipHostFree(host_address); }

void enqueue_counter_write(NativeStream stream, std::uint64_t* device_address,
                           std::uint64_t value) {
  KODO_HIP_CHECK(hipStreamWriteValue64(static_cast<hipStream_t>(stream), device_address, value, 0));
}

bool export_memory(const void* data, MemoryExport& out, std::string& why) {
  hipDeviceptr_t start{};
  std::size_t size = 0;
  if (hipMemGetAddressRange(&start, &size, const_cast<void*>(data)) != hipSuccess) {
    (void)hipGetLastError();
    why = "the memory is not a HIP device allocation";
    return false;
  }
  hipIpcMemHandle_t handle{};
  const hipError_t e = hipIpcGetMemHandle(&handle, reinterpret_cast<void*>(start));
  if (e != hipSuccess) {
    (void)hipGetLastError();
    why = std::string("hipIpcGetMemHandle refused it (") + hipGetErrorString(e) +
          "; memory from hipMallocAsync pools, Kokkos' default on HIP, cannot be exported this "
          "way)";
    return false;
  }
  static_assert(sizeof handle <= sizeof out.handle);
  std::memcpy(out.handle.data(), &handle, sizeof handle);
  out.offset = static_cast<std::uint64_t>(static_cast<const char*>(data) -
                                          reinterpret_cast<const char*>(start));
  return true;
}

void* import_memory(const std::array<std::byte, 64>& exported, std::size_t& bytes,
                    std::string& why) {
  hipIpcMemHandle_t handle{};
  std::memcpy(&handle, exported.data(), sizeof handle);
  void* start = nullptr;
  const hipError_t e = hipIpcOpenMemHandle(&start, handle, hipIpcMemLazyEnablePeerAccess);
  if (e != hipSuccess) {
    (void)hipGetLastError();
    why = std::string("hipIpcOpenMemHandle failed: ") + hipGetErrorString(e);
    return nullptr;
  }
  hipDeviceptr_t base{};
  if (hipMemGetAddressRange(&base, &bytes, start) != hipSuccess) {
    (void)hipGetLastError();
    (void)hipIpcCloseMemHandle(start);
    why = "the mapped allocation's size is unknown (hipMemGetAddressRange)";
    return nullptr;
  }
  return start;
}
void release_import(void* start) { (void)hipIpcCloseMemHandle(start); }

// --- what gpu_native.hpp asks of this backend -----------------------------------------

namespace {

// DeviceWait::timeout_ns in the device's wall-clock ticks (what the kernels read).
// (A process uses one device: the rate is read once.)
DeviceWait in_ticks(DeviceWait wait) {
  static const std::uint64_t khz = [] {
    int device = 0, rate = 0;
    KODO_HIP_CHECK(hipGetDevice(&device));
    KODO_HIP_CHECK(hipDeviceGetAttribute(&rate, hipDeviceAttributeWallClockRate, device));
    return static_cast<std::uint64_t>(rate);
  }();
  if (wait.word) wait.timeout_ns = std::max<std::uint64_t>(1, wait.timeout_ns / 1000000 * khz);
  return wait;
}

bool device_addressable(const void* p) {
  hipPointerAttribute_t a{};
  if (hipPointerGetAttributes(&a, p) != hipSuccess) {
    (void)hipGetLastError();
    return false;
  }
#if HIP_VERSION_MAJOR >= 6
  const auto type = a.type;
#else
  const auto type = a.memoryType;
#endif
  return type == hipMemoryTypeDevice || type == hipMemoryTypeUnified || a.isManaged;
}

// What the shared code (gpu_native.hpp) asks of this backend: errors thrown, a wait's bound
// in the device's ticks, a transfer node at the priority of the stream the graph runs on.
void check_gpu(hipError_t e, const char* what) { check_hip(e, what); }
DeviceWait on_device(DeviceWait wait) { return in_ticks(wait); }
void prioritize_transfer(hipGraphNode_t, int) {}
}  // namespace
}  // namespace kodo::backend

#define KODO_GPU(name) hip##name
#define KODO_GPU_NAME(name) "hip" #name
#define KODO_GPU_CHECK KODO_HIP_CHECK
#include <kodo/backends/detail/gpu_native.hpp>

namespace kodo::backend {

NativeGraphExec instantiate_graph(NativeGraph graph) {
  hipGraphExec_t exec = nullptr;
  KODO_HIP_CHECK(hipGraphInstantiate(&exec, build_of(graph).graph, nullptr, nullptr, 0));
  return exec;
}

void enqueue_copies(NativeStream stream, const std::vector<DeviceCopy>& copies) {
  for (const DeviceCopy& c : copies) enqueue_copy(stream, c.to, c.from, c.bytes);
}

}  // namespace kodo::backend
