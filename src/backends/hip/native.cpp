// HIP backend: the same mechanisms as cuda/, through their HIP equivalents.

#include "../native.hpp"

#include "../../core/error.hpp"
#include "../channel_kernels.hpp"

#include <hip/hip_runtime.h>

#include <algorithm>
#include <cstring>
#include <source_location>
#include <string>

namespace kodo::backend {
namespace {

// A failed call becomes an Error naming the call and where it was made.
void check(hipError_t e, const char* call,
           std::source_location at = std::source_location::current()) {
  if (e != hipSuccess)
    throw Error(detail::call_failed("HIP", call, at.file_name(), static_cast<int>(at.line()),
                                    hipGetErrorString(e)));
}

}  // namespace

const char* name() { return "hip"; }

int device_count() {
  int n = 0;
  const hipError_t e = hipGetDeviceCount(&n);
  if (e == hipErrorNoDevice || e == hipErrorInsufficientDriver) return 0;
  check(e, "hipGetDeviceCount");
  return n;
}

void select_device(int device) { check(hipSetDevice(device), "hipSetDevice"); }

std::string device_name(int device) {
  hipDeviceProp_t p{};
  check(hipGetDeviceProperties(&p, device), "hipGetDeviceProperties");
  return p.name;
}

std::string device_bus_id(int device) {
  char id[32] = {};
  check(hipDeviceGetPCIBusId(id, sizeof id, device), "hipDeviceGetPCIBusId");
  return id;
}

NativeStream create_stream(Priority priority) {
  int least = 0, greatest = 0;
  check(hipDeviceGetStreamPriorityRange(&least, &greatest), "hipDeviceGetStreamPriorityRange");
  hipStream_t s = nullptr;
  check(hipStreamCreateWithPriority(&s, hipStreamNonBlocking,
                                    priority == Priority::communication ? greatest : least),
        "hipStreamCreateWithPriority");
  return s;
}
void destroy_stream(NativeStream stream) {
  (void)hipStreamDestroy(static_cast<hipStream_t>(stream));
}

NativeEvent create_event() {
  hipEvent_t e = nullptr;
  check(hipEventCreateWithFlags(&e, hipEventDisableTiming), "hipEventCreateWithFlags");
  return e;
}
void destroy_event(NativeEvent event) { (void)hipEventDestroy(static_cast<hipEvent_t>(event)); }

void order_after(NativeStream waiter, NativeStream source, NativeEvent event) {
  check(hipEventRecord(static_cast<hipEvent_t>(event), static_cast<hipStream_t>(source)),
        "hipEventRecord");
  check(hipStreamWaitEvent(static_cast<hipStream_t>(waiter), static_cast<hipEvent_t>(event), 0),
        "hipStreamWaitEvent");
}

void check_stream(NativeStream stream) {
  const hipError_t e = hipStreamQuery(static_cast<hipStream_t>(stream));
  if (e != hipSuccess && e != hipErrorNotReady) check(e, "hipStreamQuery (the stream failed)");
}

void record_event(NativeEvent event, NativeStream stream) {
  check(hipEventRecord(static_cast<hipEvent_t>(event), static_cast<hipStream_t>(stream)),
        "hipEventRecord");
}
bool event_reached(NativeEvent event) {
  const hipError_t e = hipEventQuery(static_cast<hipEvent_t>(event));
  if (e == hipErrorNotReady) return false;
  check(e, "hipEventQuery");
  return true;
}

// Coherent: the host spins on values the device writes, which must not sit in a cache.
std::uint64_t* allocate_counters(std::size_t count, std::uint64_t** device_address) {
  void* host = nullptr;
  check(hipHostMalloc(&host, count * sizeof(std::uint64_t),
                      hipHostMallocMapped | hipHostMallocPortable | hipHostMallocCoherent),
        "hipHostMalloc");
  auto* p = static_cast<std::uint64_t*>(host);
  for (std::size_t i = 0; i < count; ++i) p[i] = 0;
  void* dev = nullptr;
  check(hipHostGetDevicePointer(&dev, host, 0), "hipHostGetDevicePointer");
  *device_address = static_cast<std::uint64_t*>(dev);
  return p;
}
void free_counters(std::uint64_t* host_address) { (void)hipHostFree(host_address); }

void enqueue_counter_write(NativeStream stream, std::uint64_t* device_address,
                           std::uint64_t value) {
  check(hipStreamWriteValue64(static_cast<hipStream_t>(stream), device_address, value, 0),
        "hipStreamWriteValue64");
}

void* register_shared_host(void* host, std::size_t bytes) {
  check(hipHostRegister(host, bytes, hipHostRegisterPortable | hipHostRegisterMapped),
        "hipHostRegister");
  void* device = nullptr;
  check(hipHostGetDevicePointer(&device, host, 0), "hipHostGetDevicePointer");
  return device;
}
void unregister_shared_host(void* host) { (void)hipHostUnregister(host); }

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

bool streams_run_in_call() { return false; }

namespace {
// DeviceWait::timeout_ns in the device's wall-clock ticks (what the kernels read).
// (A process uses one device: the rate is read once.)
DeviceWait in_ticks(DeviceWait wait) {
  static const std::uint64_t khz = [] {
    int device = 0, rate = 0;
    check(hipGetDevice(&device), "hipGetDevice");
    check(hipDeviceGetAttribute(&rate, hipDeviceAttributeWallClockRate, device),
          "hipDeviceGetAttribute(wall clock rate)");
    return static_cast<std::uint64_t>(rate);
  }();
  if (wait.word) wait.timeout_ns = std::max<std::uint64_t>(1, wait.timeout_ns / 1000000 * khz);
  return wait;
}
}  // namespace

bool enqueue_wait(NativeStream stream, const DeviceWait& wait) {
  if (!wait.word) return true;
  hipLaunchKernelGGL(kernels::wait_kernel, dim3(1), dim3(1), 0, static_cast<hipStream_t>(stream),
                     in_ticks(wait));
  check(hipGetLastError(), "a kernel launch (channel wait)");
  return true;
}

void enqueue_copy_and_publish(NativeStream stream, const DeviceWait& wait, void* to,
                              const void* from, std::size_t bytes, bool from_device,
                              std::uint64_t* size_word, std::uint64_t size,
                              std::uint64_t* count_word, std::uint64_t count) {
  auto s = static_cast<hipStream_t>(stream);
  auto* t = static_cast<unsigned char*>(to);
  const auto* f = static_cast<const unsigned char*>(from);
  const DeviceWait first = in_ticks(wait);
  constexpr std::size_t kOneBlock = 32 * 1024;
  if (from_device && bytes <= kOneBlock) {
    hipLaunchKernelGGL(kernels::copy_and_publish_kernel, dim3(1), dim3(512), 0, s, first, t, f,
                       bytes, size_word, size, count_word, count);
  } else {
    if (from_device) {
      const auto blocks = static_cast<unsigned>(std::min<std::size_t>(1024, (bytes + 8191) / 8192));
      hipLaunchKernelGGL(kernels::copy_kernel, dim3(blocks), dim3(512), 0, s, first, t, f, bytes);
    } else if (bytes != 0) {
      hipLaunchKernelGGL(kernels::wait_kernel, dim3(1), dim3(1), 0, s, first);
      check(hipMemcpyAsync(to, from, bytes, hipMemcpyDefault, s), "hipMemcpyAsync");
    }
    hipLaunchKernelGGL(kernels::publish_kernel, dim3(1), dim3(32), 0, s, first, size_word, size,
                       count_word, count);
  }
  check(hipGetLastError(), "a kernel launch (channel copy)");
}

}  // namespace kodo::backend
