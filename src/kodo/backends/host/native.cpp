// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend: work on a host execution space runs to completion in the call that
// enqueues it, so a "stream" is only a name and its counter is written at once.

#include <kodo/backends/detail/native.hpp>

#include <kodo/core/error.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
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

void record_event(NativeStream, NativeEvent) {}
bool event_reached(NativeEvent) { return true; }
NativeEvent create_timing_event() { return new int(0); }
double seconds_between(NativeEvent, NativeEvent) { return 0; }

std::uint64_t* allocate_counters(std::size_t count, std::uint64_t** device_address) {
  auto* p = new std::uint64_t[count]();
  *device_address = p;
  return p;
}
void free_counters(std::uint64_t* host_address) { delete[] host_address; }

void enqueue_counter_write(NativeStream, std::uint64_t* device_address, std::uint64_t value) {
  std::atomic_ref<std::uint64_t>(*device_address).store(value, std::memory_order_release);
}

void* register_shared_host(void* host, std::size_t) { return host; }
void unregister_shared_host(void*) {}

bool export_memory(const void*, MemoryExport&, std::string& why) {
  why = "host memory is not mapped into other processes (it travels through the node's segments)";
  return false;
}
void* import_memory(const std::array<std::byte, 64>&, std::size_t&, std::string& why) {
  why = "the host backend maps no device memory";
  return nullptr;
}
void release_import(void*) {}

bool streams_run_in_call() { return true; }

bool enqueue_wait(NativeStream, const DeviceWait& wait) {
  auto load = [](const std::uint64_t* word) {
    return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(word))
        .load(std::memory_order_acquire);
  };
  return !wait.word || load(wait.word) >= wait.value || (wait.abandon && load(wait.abandon) != 0);
}

// Work enqueued on a host stream runs in the call: the copy is done when the stores are.
// `first` is the caller's to honour (it holds the transfer until its buffer is free).
void enqueue_copy_and_publish(NativeStream, const DeviceWait&, void* to, const void* from,
                              std::size_t bytes, bool, std::uint64_t* size_word, std::uint64_t size,
                              std::uint64_t* count_word, std::uint64_t count, std::uint64_t*) {
  if (bytes != 0) std::memcpy(to, from, bytes);
  std::atomic_ref<std::uint64_t>(*size_word).store(size, std::memory_order_release);
  std::atomic_ref<std::uint64_t>(*count_word).store(count, std::memory_order_release);
}

// No graphs: the step program runs each step's work itself (streams_run_in_call).
bool graphs_supported() { return false; }
NativeGraph create_graph() { throw Error("the host backend has no device graphs"); }
void destroy_graph(NativeGraph) {}
RecordedWork record_work(NativeStream, const std::function<void()>&, std::string& why,
                         bool& for_good) {
  why = "the host backend has no device graphs";
  for_good = false;
  return nullptr;
}
NativeGraphNode add_work(NativeGraph, RecordedWork, const std::vector<NativeGraphNode>&) {
  throw Error("the host backend has no device graphs");
}
void destroy_work(RecordedWork) {}
NativeGraphNode add_copies(NativeGraph, const std::vector<DeviceCopy>&,
                           const std::vector<NativeGraphNode>&) {
  throw Error("the host backend has no device graphs");
}
NativeGraphNode add_transfer_wait(NativeGraph, const StepTransfer&, const DeviceWait&,
                                  const std::vector<NativeGraphNode>&) {
  throw Error("the host backend has no device graphs");
}
NativeGraphNode add_transfer_release(NativeGraph, const StepTransfer&, std::uint64_t*,
                                     const std::vector<NativeGraphNode>&) {
  throw Error("the host backend has no device graphs");
}
NativeGraphNode add_transfer_send(NativeGraph, const StepTransfer&, const DeviceWait&,
                                  std::uint64_t, void*, const void*, std::size_t, std::uint64_t*,
                                  std::uint64_t*, std::uint64_t*,
                                  const std::vector<NativeGraphNode>&) {
  throw Error("the host backend has no device graphs");
}
NativeGraphNode add_step_advance(NativeGraph, std::uint64_t*, std::uint64_t,
                                 const std::vector<NativeGraphNode>&) {
  throw Error("the host backend has no device graphs");
}
std::size_t graph_kernels(NativeGraph) { return 0; }
NativeGraphExec instantiate_graph(NativeGraph) {
  throw Error("the host backend has no device graphs");
}
void destroy_graph_exec(NativeGraphExec) {}
void launch_graph(NativeStream, NativeGraphExec) {
  throw Error("the host backend has no device graphs");
}
void enqueue_copy(NativeStream, void* to, const void* from, std::size_t bytes) {
  if (bytes != 0) std::memmove(to, from, bytes);
}

void enqueue_copies(NativeStream stream, const std::vector<DeviceCopy>& copies) {
  for (const DeviceCopy& c : copies) enqueue_copy(stream, c.to, c.from, c.bytes);
}

}  // namespace kodo::backend
