// Host backend: work on a host execution space runs to completion in the call that
// enqueues it, so a "stream" is only a name and its counter is written at once.

#include "../native.hpp"

#include "../../core/error.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace kodo::backend {

const char* name() { return "host"; }
int device_count() { return 0; }
void select_device(int device) {
  throw Error("the host backend has no device " + std::to_string(device));
}
std::string device_name(int) { return "host"; }
std::string device_bus_id(int) { return "host"; }

NativeStream create_stream(Priority priority) {
  // A distinct non-null token per stream keeps handles comparable.
  return new Priority(priority);
}
void destroy_stream(NativeStream stream) { delete static_cast<Priority*>(stream); }

NativeEvent create_event() { return new int(0); }
void destroy_event(NativeEvent event) { delete static_cast<int*>(event); }
void order_after(NativeStream, NativeStream, NativeEvent) {}

void check_stream(NativeStream) {}

void record_event(NativeEvent, NativeStream) {}
bool event_reached(NativeEvent) { return true; }

std::uint64_t* allocate_counters(std::size_t count, std::uint64_t** device_address) {
  auto* p = new std::uint64_t[count]();
  *device_address = p;
  return p;
}
void free_counters(std::uint64_t* host_address) { delete[] host_address; }

void enqueue_counter_write(NativeStream, std::uint64_t* device_address, std::uint64_t value) {
  std::atomic_ref<std::uint64_t>(*device_address).store(value, std::memory_order_release);
}

}  // namespace kodo::backend
