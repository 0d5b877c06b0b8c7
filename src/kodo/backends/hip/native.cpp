// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// HIP backend: the same mechanisms as cuda/, through their HIP equivalents.

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

int device_count() {
  int n = 0;
  const hipError_t e = hipGetDeviceCount(&n);
  if (e == hipErrorNoDevice || e == hipErrorInsufficientDriver) return 0;
  check_hip(e, "hipGetDeviceCount");
  return n;
}

void select_device(int device) { KODO_HIP_CHECK(hipSetDevice(device)); }

std::string device_name(int device) {
  hipDeviceProp_t p{};
  KODO_HIP_CHECK(hipGetDeviceProperties(&p, device));
  return p.name;
}

std::string device_bus_id(int device) {
  char id[32] = {};
  KODO_HIP_CHECK(hipDeviceGetPCIBusId(id, sizeof id, device));
  return id;
}

NativeStream create_stream(Priority priority) {
  int least = 0, greatest = 0;
  KODO_HIP_CHECK(hipDeviceGetStreamPriorityRange(&least, &greatest));
  hipStream_t s = nullptr;
  KODO_HIP_CHECK(hipStreamCreateWithPriority(&s, hipStreamNonBlocking,
                                             priority == Priority::communication ? greatest
                                                                                 : least));
  return s;
}
void destroy_stream(NativeStream stream) {
  (void)hipStreamDestroy(static_cast<hipStream_t>(stream));
}

NativeEvent create_event() {
  hipEvent_t e = nullptr;
  KODO_HIP_CHECK(hipEventCreateWithFlags(&e, hipEventDisableTiming));
  return e;
}
void destroy_event(NativeEvent event) { (void)hipEventDestroy(static_cast<hipEvent_t>(event)); }

void order_after(NativeStream waiter, NativeStream source, NativeEvent event) {
  KODO_HIP_CHECK(hipEventRecord(static_cast<hipEvent_t>(event), static_cast<hipStream_t>(source)));
  KODO_HIP_CHECK(hipStreamWaitEvent(static_cast<hipStream_t>(waiter),
                                    static_cast<hipEvent_t>(event), 0));
}

void check_stream(NativeStream stream) {
  const hipError_t e = hipStreamQuery(static_cast<hipStream_t>(stream));
  if (e != hipSuccess && e != hipErrorNotReady) check_hip(e, "hipStreamQuery (the stream failed)");
}

void record_event(NativeStream stream, NativeEvent event) {
  KODO_HIP_CHECK(hipEventRecord(static_cast<hipEvent_t>(event), static_cast<hipStream_t>(stream)));
}
bool event_reached(NativeEvent event) {
  const hipError_t e = hipEventQuery(static_cast<hipEvent_t>(event));
  if (e == hipErrorNotReady) return false;
  check_hip(e, "hipEventQuery");
  return true;
}

NativeEvent create_timing_event() {
  hipEvent_t e = nullptr;
  KODO_HIP_CHECK(hipEventCreate(&e));
  return e;
}
double seconds_between(NativeEvent start, NativeEvent end) {
  float ms = 0;
  KODO_HIP_CHECK(hipEventElapsedTime(&ms, static_cast<hipEvent_t>(start),
                                     static_cast<hipEvent_t>(end)));
  return ms * 1e-3;
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

void* register_shared_host(void* host, std::size_t bytes) {
  KODO_HIP_CHECK(hipHostRegister(host, bytes, hipHostRegisterPortable | hipHostRegisterMapped));
  void* device = nullptr;
  KODO_HIP_CHECK(hipHostGetDevicePointer(&device, host, 0));
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
    KODO_HIP_CHECK(hipGetDevice(&device));
    KODO_HIP_CHECK(hipDeviceGetAttribute(&rate, hipDeviceAttributeWallClockRate, device));
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
  check_hip(hipGetLastError(), "a kernel launch (channel wait)");
  return true;
}

void enqueue_copy_and_publish(NativeStream stream, const DeviceWait& wait, void* to,
                              const void* from, std::size_t bytes, bool from_device,
                              std::uint64_t* size_word, std::uint64_t size,
                              std::uint64_t* count_word, std::uint64_t count, std::uint64_t* gate) {
  auto s = static_cast<hipStream_t>(stream);
  auto* t = static_cast<unsigned char*>(to);
  const auto* f = static_cast<const unsigned char*>(from);
  const DeviceWait first = in_ticks(wait);
  constexpr std::size_t kOneBlock = 32 * 1024;
  if (from_device && bytes <= kOneBlock) {
    hipLaunchKernelGGL(kernels::copy_and_publish_kernel, dim3(1), dim3(kernels::kCopyThreads), 0, s,
                       first, t, f, bytes, size_word, size, count_word, count);
  } else {
    if (from_device) {
      const unsigned blocks = kernels::copy_blocks(bytes);
      if (first.word) hipLaunchKernelGGL(kernels::gate_kernel, dim3(1), dim3(1), 0, s, first, gate);
      hipLaunchKernelGGL(kernels::copy_kernel, dim3(blocks), dim3(kernels::kCopyThreads), 0, s,
                         static_cast<const std::uint64_t*>(first.word ? gate : nullptr), t, f,
                         bytes);
    } else if (bytes != 0) {
      hipLaunchKernelGGL(kernels::wait_kernel, dim3(1), dim3(1), 0, s, first);
      KODO_HIP_CHECK(hipMemcpyAsync(to, from, bytes, hipMemcpyDefault, s));
    }
    const std::uint64_t* gated = from_device && first.word ? gate : nullptr;
    hipLaunchKernelGGL(kernels::publish_kernel, dim3(1), dim3(32), 0, s, first, gated, size_word,
                       size, count_word, count);
  }
  check_hip(hipGetLastError(), "a kernel launch (channel copy)");
}

// --- device graphs (as in cuda/native.cpp) ---------------------------------------------

namespace {

// A graph being built.
struct GraphBuild {
  hipGraph_t graph = nullptr;
};
GraphBuild& build_of(NativeGraph graph) { return *static_cast<GraphBuild*>(graph); }

// The nodes of `after`, each once (the driver refuses a dependency named twice).
std::vector<hipGraphNode_t> nodes_of(const std::vector<NativeGraphNode>& after) {
  std::vector<hipGraphNode_t> nodes;
  for (NativeGraphNode n : after)
    if (n && std::find(nodes.begin(), nodes.end(), static_cast<hipGraphNode_t>(n)) == nodes.end())
      nodes.push_back(static_cast<hipGraphNode_t>(n));
  return nodes;
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

// Why replaying `graph` would not repeat what recording it enqueued, or "" (the first
// reason found), as in cuda/native.cpp.
std::string unreplayable(hipGraph_t graph, bool& for_good) {
  std::size_t count = 0;
  KODO_HIP_CHECK(hipGraphGetNodes(graph, nullptr, &count));
  std::vector<hipGraphNode_t> nodes(count);
  KODO_HIP_CHECK(hipGraphGetNodes(graph, nodes.data(), &count));
  std::string why;
  for (hipGraphNode_t node : nodes) {
    hipGraphNodeType type{};
    KODO_HIP_CHECK(hipGraphNodeGetType(node, &type));
    std::string found;
    switch (type) {
      case hipGraphNodeTypeKernel:
      case hipGraphNodeTypeMemset:
      case hipGraphNodeTypeEmpty: break;
      case hipGraphNodeTypeMemcpy: {
        hipMemcpy3DParms p{};
        KODO_HIP_CHECK(hipGraphMemcpyNodeGetParams(node, &p));
        const bool from_host = !p.srcArray && !device_addressable(p.srcPtr.ptr);
        const bool to_host = !p.dstArray && !device_addressable(p.dstPtr.ptr);
        if (from_host && !to_host) {
          for_good = true;
          found =
              "it copies from host memory to the device (Kokkos does so to launch a kernel "
              "whose functor is large, through constant memory, from a buffer that later "
              "launches overwrite; a copy from a host view looks the same)";
        }  // a copy into host memory replays alike
        break;
      }
      case hipGraphNodeTypeGraph: {
        hipGraph_t child = nullptr;
        KODO_HIP_CHECK(hipGraphChildGraphNodeGetGraph(node, &child));
        found = unreplayable(child, for_good);
        break;
      }
      default:
        found = "it holds an operation a graph replays otherwise (graph node type " +
                std::to_string(static_cast<int>(type)) +
                ": an event, a host function or a memory allocation)";
    }
    if (why.empty()) why = found;
  }
  return why;
}

}  // namespace

bool graphs_supported() { return true; }

NativeGraph create_graph() {
  auto build = std::make_unique<GraphBuild>();
  KODO_HIP_CHECK(hipGraphCreate(&build->graph, 0));
  return build.release();
}

void destroy_graph(NativeGraph graph) {
  auto* build = static_cast<GraphBuild*>(graph);
  if (!build) return;
  (void)hipGraphDestroy(build->graph);
  delete build;
}

RecordedWork record_work(NativeStream stream, const std::function<void()>& enqueue,
                         std::string& why, bool& for_good) {
  for_good = false;
  auto s = static_cast<hipStream_t>(stream);
  hipError_t e = hipStreamBeginCapture(s, hipStreamCaptureModeRelaxed);
  if (e != hipSuccess) {
    (void)hipGetLastError();
    why = std::string("the stream cannot record (") + hipGetErrorString(e) + ")";
    return nullptr;
  }
  std::string failure;
  try {
    enqueue();
  } catch (...) {
    failure = "it failed while recorded: " + detail::what_of_current();
  }
  hipGraph_t recorded = nullptr;
  e = hipStreamEndCapture(s, &recorded);
  if (failure.empty() && e != hipSuccess)
    failure = std::string("recording it failed (") + hipGetErrorString(e) +
              "; a fence or a host read of device data cannot be recorded)";
  (void)hipGetLastError();
  // What was recorded before a failure counts too: a kernel launched through constant
  // memory before the work threw has taken Kokkos' event; so has a second such launch,
  // which throws on finding the event taken.
  if (recorded) {
    std::string found;
    try {
      found = unreplayable(recorded, for_good);
    } catch (...) {
      found = "looking at what was recorded failed: " + detail::what_of_current();
    }
    if (failure.empty()) failure = found;
  }
  if (failure.find("hipErrorCapturedEvent") != std::string::npos) for_good = true;
  if (!failure.empty()) {
    if (recorded) (void)hipGraphDestroy(recorded);
    why = failure;
    return nullptr;
  }
  if (!recorded) KODO_HIP_CHECK(hipGraphCreate(&recorded, 0));  // nothing was enqueued
  return recorded;
}

NativeGraphNode add_work(NativeGraph graph, RecordedWork work,
                         const std::vector<NativeGraphNode>& after) {
  auto recorded = static_cast<hipGraph_t>(work);
  const auto deps = nodes_of(after);
  std::size_t count = 0;
  KODO_HIP_CHECK(hipGraphGetNodes(recorded, nullptr, &count));
  hipGraphNode_t node = nullptr;
  const hipError_t e =
      count == 0 ? hipGraphAddEmptyNode(&node, build_of(graph).graph, deps.data(), deps.size())
                 : hipGraphAddChildGraphNode(&node, build_of(graph).graph, deps.data(), deps.size(),
                                             recorded);  // the node holds a copy
  check_hip(e, "hipGraphAddChildGraphNode");
  return node;
}

void destroy_work(RecordedWork work) {
  if (work) (void)hipGraphDestroy(static_cast<hipGraph_t>(work));
}

NativeGraphNode add_copies(NativeGraph graph, const std::vector<DeviceCopy>& copies,
                           const std::vector<NativeGraphNode>& after) {
  GraphBuild& build = build_of(graph);
  const auto deps = nodes_of(after);
  // A kernel node for each kCopiesPerLaunch copies, their list its parameters (the node
  // keeps a copy): no device memory to allocate and fill for a node. Several are joined.
  std::vector<hipGraphNode_t> parts;
  kernels::in_copy_batches(copies, [&](kernels::CopyBatch& batch, unsigned count,
                                       std::size_t largest) {
    void* arguments[] = {&batch};
    hipKernelNodeParams p{};
    p.func = reinterpret_cast<void*>(&kernels::copy_batch_kernel);
    p.gridDim = dim3(kernels::copy_blocks(largest), count);
    p.blockDim = dim3(kernels::kCopyThreads);
    p.kernelParams = arguments;
    hipGraphNode_t node = nullptr;
    KODO_HIP_CHECK(hipGraphAddKernelNode(&node, build.graph, deps.data(), deps.size(), &p));
    parts.push_back(node);
  });
  if (parts.size() == 1) return parts[0];
  const auto& join = parts.empty() ? deps : parts;
  hipGraphNode_t node = nullptr;
  KODO_HIP_CHECK(hipGraphAddEmptyNode(&node, build.graph, join.data(), join.size()));
  return node;
}

namespace {
// Adds a kernel node of `blocks` x `threads` running `kernel` with `arguments`.
hipGraphNode_t add_kernel(NativeGraph graph, const void* kernel, unsigned blocks, unsigned threads,
                          void** arguments, const std::vector<NativeGraphNode>& after) {
  const auto deps = nodes_of(after);
  hipKernelNodeParams p{};
  p.func = const_cast<void*>(kernel);
  p.gridDim = dim3(blocks);
  p.blockDim = dim3(threads);
  p.kernelParams = arguments;
  hipGraphNode_t node = nullptr;
  KODO_HIP_CHECK(hipGraphAddKernelNode(&node, build_of(graph).graph, deps.data(), deps.size(), &p));
  return node;
}
}  // namespace

NativeGraphNode add_transfer_wait(NativeGraph graph, const StepTransfer& transfer,
                                  const DeviceWait& arrived,
                                  const std::vector<NativeGraphNode>& after) {
  return kernels::transfer_wait_node(add_kernel, graph, transfer, in_ticks(arrived), after);
}

NativeGraphNode add_transfer_release(NativeGraph graph, const StepTransfer& transfer,
                                     std::uint64_t* consumed_word,
                                     const std::vector<NativeGraphNode>& after) {
  return kernels::transfer_release_node(add_kernel, graph, transfer, consumed_word, after);
}

NativeGraphNode add_transfer_send(NativeGraph graph, const StepTransfer& transfer,
                                  const DeviceWait& free, std::uint64_t buffers, void* to,
                                  const void* from, std::size_t bytes, std::uint64_t* size_word,
                                  std::uint64_t* count_word, std::uint64_t* gate,
                                  const std::vector<NativeGraphNode>& after) {
  return kernels::transfer_send_nodes(add_kernel, graph, transfer, in_ticks(free), buffers, to,
                                      from, bytes, size_word, count_word, gate, after);
}

NativeGraphNode add_step_advance(NativeGraph graph, std::uint64_t* step, std::uint64_t steps,
                                 const std::vector<NativeGraphNode>& after) {
  return kernels::step_advance_node(add_kernel, graph, step, steps, after);
}

namespace {
std::size_t kernels_in(hipGraph_t graph) {
  std::size_t count = 0, kernels = 0;
  KODO_HIP_CHECK(hipGraphGetNodes(graph, nullptr, &count));
  std::vector<hipGraphNode_t> nodes(count);
  KODO_HIP_CHECK(hipGraphGetNodes(graph, nodes.data(), &count));
  for (hipGraphNode_t node : nodes) {
    hipGraphNodeType type{};
    KODO_HIP_CHECK(hipGraphNodeGetType(node, &type));
    if (type == hipGraphNodeTypeKernel) ++kernels;
    if (type == hipGraphNodeTypeGraph) {
      hipGraph_t child = nullptr;
      KODO_HIP_CHECK(hipGraphChildGraphNodeGetGraph(node, &child));
      kernels += kernels_in(child);
    }
  }
  return kernels;
}
}  // namespace

std::size_t graph_kernels(NativeGraph graph) { return kernels_in(build_of(graph).graph); }

NativeGraphExec instantiate_graph(NativeGraph graph) {
  hipGraphExec_t exec = nullptr;
  KODO_HIP_CHECK(hipGraphInstantiate(&exec, build_of(graph).graph, nullptr, nullptr, 0));
  return exec;
}

void destroy_graph_exec(NativeGraphExec exec) {
  if (exec) (void)hipGraphExecDestroy(static_cast<hipGraphExec_t>(exec));
}

void launch_graph(NativeStream stream, NativeGraphExec exec) {
  KODO_HIP_CHECK(hipGraphLaunch(static_cast<hipGraphExec_t>(exec),
                                static_cast<hipStream_t>(stream)));
}

void enqueue_copy(NativeStream stream, void* to, const void* from, std::size_t bytes) {
  if (bytes != 0)
    KODO_HIP_CHECK(hipMemcpyAsync(to, from, bytes, hipMemcpyDefault,
                                  static_cast<hipStream_t>(stream)));
}

void enqueue_copies(NativeStream stream, const std::vector<DeviceCopy>& copies) {
  for (const DeviceCopy& c : copies) enqueue_copy(stream, c.to, c.from, c.bytes);
}

}  // namespace kodo::backend
