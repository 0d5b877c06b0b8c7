// HIP backend: the same mechanisms as cuda/, through their HIP equivalents.

#include "../native.hpp"

#include "../../tasking/error.hpp"

#include <hip/hip_runtime.h>

#include <string>

namespace kodo::backend {
namespace {

void check(hipError_t e, const char* what) {
  if (e != hipSuccess) throw Error(std::string("kodo: HIP ") + what + " failed: " + hipGetErrorString(e));
}

}  // namespace

const char* name() { return "hip"; }

int device_count() {
  int n = 0;
  const hipError_t e = hipGetDeviceCount(&n);
  if (e == hipErrorNoDevice || e == hipErrorInsufficientDriver) return 0;
  check(e, "device query");
  return n;
}

void select_device(int device) { check(hipSetDevice(device), "device selection"); }

std::string device_name(int device) {
  hipDeviceProp_t p{};
  check(hipGetDeviceProperties(&p, device), "device properties");
  return p.name;
}

std::string device_bus_id(int device) {
  char id[32] = {};
  check(hipDeviceGetPCIBusId(id, sizeof id, device), "PCI bus id query");
  return id;
}

NativeStream create_stream(Priority priority) {
  int least = 0, greatest = 0;
  check(hipDeviceGetStreamPriorityRange(&least, &greatest), "stream priority query");
  hipStream_t s = nullptr;
  check(hipStreamCreateWithPriority(&s, hipStreamNonBlocking,
                                    priority == Priority::communication ? greatest : least),
        "stream creation");
  return s;
}
void destroy_stream(NativeStream stream) { (void)hipStreamDestroy(static_cast<hipStream_t>(stream)); }

NativeEvent create_event() {
  hipEvent_t e = nullptr;
  check(hipEventCreateWithFlags(&e, hipEventDisableTiming), "event creation");
  return e;
}
void destroy_event(NativeEvent event) { (void)hipEventDestroy(static_cast<hipEvent_t>(event)); }

void order_after(NativeStream waiter, NativeStream source, NativeEvent event) {
  check(hipEventRecord(static_cast<hipEvent_t>(event), static_cast<hipStream_t>(source)), "event record");
  check(hipStreamWaitEvent(static_cast<hipStream_t>(waiter), static_cast<hipEvent_t>(event), 0),
        "stream wait");
}

void check_stream(NativeStream stream) {
  const hipError_t e = hipStreamQuery(static_cast<hipStream_t>(stream));
  if (e != hipSuccess && e != hipErrorNotReady) check(e, "device work (stream failed)");
}

void record_event(NativeEvent event, NativeStream stream) {
  check(hipEventRecord(static_cast<hipEvent_t>(event), static_cast<hipStream_t>(stream)),
        "event record");
}
bool event_reached(NativeEvent event) {
  const hipError_t e = hipEventQuery(static_cast<hipEvent_t>(event));
  if (e == hipErrorNotReady) return false;
  check(e, "event query");
  return true;
}

// Coherent: the host spins on values the device writes, which must not sit in a cache.
std::uint64_t* allocate_counters(std::size_t count, std::uint64_t** device_address) {
  void* host = nullptr;
  check(hipHostMalloc(&host, count * sizeof(std::uint64_t), hipHostMallocMapped | hipHostMallocPortable | hipHostMallocCoherent),
        "pinned counter allocation");
  auto* p = static_cast<std::uint64_t*>(host);
  for (std::size_t i = 0; i < count; ++i) p[i] = 0;
  void* dev = nullptr;
  check(hipHostGetDevicePointer(&dev, host, 0), "mapped pointer query");
  *device_address = static_cast<std::uint64_t*>(dev);
  return p;
}
void free_counters(std::uint64_t* host_address) { (void)hipHostFree(host_address); }

void enqueue_counter_write(NativeStream stream, std::uint64_t* device_address, std::uint64_t value) {
  check(hipStreamWriteValue64(static_cast<hipStream_t>(stream), device_address, value, 0),
        "stream counter write");
}

}  // namespace kodo::backend
