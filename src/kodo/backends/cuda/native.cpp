// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// CUDA backend. The completion counter is written by a stream memory operation
// (cuStreamWriteValue64): no kernel launch, and the host learns of completion by
// reading its own memory instead of calling cudaEventQuery (1.36 us a call on H200).
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

int device_count() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) return 0;
  check_cuda(e, "cudaGetDeviceCount");
  return n;
}

void select_device(int device) { KODO_CUDA_CHECK(cudaSetDevice(device)); }

std::string device_name(int device) {
  cudaDeviceProp p{};
  KODO_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  return p.name;
}

std::string device_bus_id(int device) {
  char id[32] = {};
  KODO_CUDA_CHECK(cudaDeviceGetPCIBusId(id, sizeof id, device));
  return id;
}

namespace {
// The device's priority for `priority`: communication the greatest, compute the least.
int device_priority(Priority priority) {
  int least = 0, greatest = 0;
  KODO_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  return priority == Priority::communication ? greatest : least;
}
}  // namespace

NativeStream create_stream(Priority priority) {
  cudaStream_t s = nullptr;
  KODO_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking,
                                               device_priority(priority)));
  return s;
}
void destroy_stream(NativeStream stream) { cudaStreamDestroy(static_cast<cudaStream_t>(stream)); }

NativeEvent create_event() {
  cudaEvent_t e = nullptr;
  KODO_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}
void destroy_event(NativeEvent event) { cudaEventDestroy(static_cast<cudaEvent_t>(event)); }

void order_after(NativeStream waiter, NativeStream source, NativeEvent event) {
  // A wait captures the event's latest record when it is enqueued, so the event can be
  // recorded again right away.
  KODO_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event),
                                  static_cast<cudaStream_t>(source)));
  KODO_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(waiter),
                                      static_cast<cudaEvent_t>(event), 0));
}

void check_stream(NativeStream stream) {
  const cudaError_t e = cudaStreamQuery(static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess && e != cudaErrorNotReady)
    check_cuda(e, "cudaStreamQuery (the stream failed)");
}

void record_event(NativeStream stream, NativeEvent event) {
  KODO_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event),
                                  static_cast<cudaStream_t>(stream)));
}
bool event_reached(NativeEvent event) {
  const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (e == cudaErrorNotReady) return false;
  check_cuda(e, "cudaEventQuery");
  return true;
}

NativeEvent create_timing_event() {
  cudaEvent_t e = nullptr;
  KODO_CUDA_CHECK(cudaEventCreate(&e));
  return e;
}
double seconds_between(NativeEvent start, NativeEvent end) {
  float ms = 0;
  KODO_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start),
                                       static_cast<cudaEvent_t>(end)));
  return ms * 1e-3;
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

void* register_shared_host(void* host, std::size_t bytes) {
  KODO_CUDA_CHECK(cudaHostRegister(host, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped));
  void* device = nullptr;
  KODO_CUDA_CHECK(cudaHostGetDevicePointer(&device, host, 0));
  return device;
}
void unregister_shared_host(void* host) { cudaHostUnregister(host); }

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

bool streams_run_in_call() { return false; }

bool enqueue_wait(NativeStream stream, const DeviceWait& wait) {
  if (!wait.word) return true;
  kernels::wait_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(wait);
  check_cuda(cudaGetLastError(), "a kernel launch (channel wait)");
  return true;
}

void enqueue_copy_and_publish(NativeStream stream, const DeviceWait& first, void* to,
                              const void* from, std::size_t bytes, bool from_device,
                              std::uint64_t* size_word, std::uint64_t size,
                              std::uint64_t* count_word, std::uint64_t count, std::uint64_t* gate) {
  auto s = static_cast<cudaStream_t>(stream);
  auto* t = static_cast<unsigned char*>(to);
  const auto* f = static_cast<const unsigned char*>(from);
  // Small transfers: one block waits, copies and publishes (one launch). Larger ones:
  // one thread waits (gate_kernel), the copy on every SM, then one thread publishes.
  constexpr std::size_t kOneBlock = 32 * 1024;
  if (from_device && bytes <= kOneBlock) {
    kernels::copy_and_publish_kernel<<<1, kernels::kCopyThreads, 0, s>>>(first, t, f, bytes,
                                                                         size_word, size,
                                                                         count_word, count);
  } else {
    if (from_device) {
      const unsigned blocks = kernels::copy_blocks(bytes);
      if (first.word) kernels::gate_kernel<<<1, 1, 0, s>>>(first, gate);
      kernels::copy_kernel<<<blocks, kernels::kCopyThreads, 0, s>>>(first.word ? gate : nullptr, t,
                                                                    f, bytes);
    } else if (bytes != 0) {
      kernels::wait_kernel<<<1, 1, 0, s>>>(first);
      KODO_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, s));
    }
    const std::uint64_t* gated = from_device && first.word ? gate : nullptr;
    kernels::publish_kernel<<<1, 32, 0, s>>>(first, gated, size_word, size, count_word, count);
  }
  check_cuda(cudaGetLastError(), "a kernel launch (channel copy)");
}

// --- device graphs ------------------------------------------------------------------

namespace {

// A graph being built.
struct GraphBuild {
  cudaGraph_t graph = nullptr;
};
GraphBuild& build_of(NativeGraph graph) { return *static_cast<GraphBuild*>(graph); }

// The nodes of `after`, each once (the driver refuses a dependency named twice).
std::vector<cudaGraphNode_t> nodes_of(const std::vector<NativeGraphNode>& after) {
  std::vector<cudaGraphNode_t> nodes;
  for (NativeGraphNode n : after)
    if (n && std::find(nodes.begin(), nodes.end(), static_cast<cudaGraphNode_t>(n)) == nodes.end())
      nodes.push_back(static_cast<cudaGraphNode_t>(n));
  return nodes;
}

bool device_addressable(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

// Why replaying `graph` would not repeat what recording it enqueued, or "" (the first
// reason found). Every node is looked at: `for_good` is set by a copy from host memory
// into device memory anywhere in it, the shape of Kokkos' launch of a kernel through
// constant memory (see record_work).
std::string unreplayable(cudaGraph_t graph, bool& for_good) {
  std::size_t count = 0;
  KODO_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  KODO_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  std::string why;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    KODO_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    std::string found;
    switch (type) {
      case cudaGraphNodeTypeKernel:
      case cudaGraphNodeTypeMemset:
      case cudaGraphNodeTypeEmpty: break;
      case cudaGraphNodeTypeMemcpy: {
        cudaMemcpy3DParms p{};
        KODO_CUDA_CHECK(cudaGraphMemcpyNodeGetParams(node, &p));
        const bool from_host = !p.srcArray && !device_addressable(p.srcPtr.ptr);
        const bool to_host = !p.dstArray && !device_addressable(p.dstPtr.ptr);
        if (from_host && !to_host) {
          for_good = true;
          found =
              "it copies from host memory to the device (Kokkos does so to launch a kernel "
              "whose functor exceeds 512 bytes, through constant memory, from a buffer that "
              "later launches overwrite; a copy from a host view looks the same)";
        }  // a copy into host memory replays alike
        break;
      }
      case cudaGraphNodeTypeGraph: {
        cudaGraph_t child = nullptr;
        KODO_CUDA_CHECK(cudaGraphChildGraphNodeGetGraph(node, &child));
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
  KODO_CUDA_CHECK(cudaGraphCreate(&build->graph, 0));
  return build.release();
}

void destroy_graph(NativeGraph graph) {
  auto* build = static_cast<GraphBuild*>(graph);
  if (!build) return;
  cudaGraphDestroy(build->graph);
  delete build;
}

RecordedWork record_work(NativeStream stream, const std::function<void()>& enqueue,
                         std::string& why, bool& for_good) {
  for_good = false;
  auto s = static_cast<cudaStream_t>(stream);
  // Relaxed: Kokkos may ask for kernel attributes or allocate scratch on a first launch.
  cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
  if (e != cudaSuccess) {
    cudaGetLastError();
    why = std::string("the stream cannot record (") + cudaGetErrorString(e) + ")";
    return nullptr;
  }
  std::string failure;
  try {
    enqueue();
  } catch (...) {
    failure = "it failed while recorded: " + detail::what_of_current();
  }
  cudaGraph_t recorded = nullptr;
  e = cudaStreamEndCapture(s, &recorded);
  if (failure.empty() && e != cudaSuccess)
    failure = std::string("recording it failed (") + cudaGetErrorString(e) +
              "; a fence or a host read of device data cannot be recorded)";
  cudaGetLastError();
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
  if (failure.find("cudaErrorCapturedEvent") != std::string::npos) for_good = true;
  if (!failure.empty()) {
    if (recorded) cudaGraphDestroy(recorded);
    why = failure;
    return nullptr;
  }
  if (!recorded) KODO_CUDA_CHECK(cudaGraphCreate(&recorded, 0));  // nothing was enqueued
  return recorded;
}

NativeGraphNode add_work(NativeGraph graph, RecordedWork work,
                         const std::vector<NativeGraphNode>& after) {
  auto recorded = static_cast<cudaGraph_t>(work);
  const auto deps = nodes_of(after);
  std::size_t count = 0;
  KODO_CUDA_CHECK(cudaGraphGetNodes(recorded, nullptr, &count));
  cudaGraphNode_t node = nullptr;
  const cudaError_t e =
      count == 0 ? cudaGraphAddEmptyNode(&node, build_of(graph).graph, deps.data(), deps.size())
                 : cudaGraphAddChildGraphNode(&node, build_of(graph).graph, deps.data(),
                                              deps.size(), recorded);  // the node holds a copy
  check_cuda(e, "cudaGraphAddChildGraphNode");
  return node;
}

void destroy_work(RecordedWork work) {
  if (work) (void)cudaGraphDestroy(static_cast<cudaGraph_t>(work));
}

NativeGraphNode add_copies(NativeGraph graph, const std::vector<DeviceCopy>& copies,
                           const std::vector<NativeGraphNode>& after) {
  GraphBuild& build = build_of(graph);
  const auto deps = nodes_of(after);
  // A kernel node for each kCopiesPerLaunch copies, their list its parameters (the node
  // keeps a copy): no device memory to allocate and fill for a node. Several are joined.
  std::vector<cudaGraphNode_t> parts;
  kernels::in_copy_batches(copies, [&](kernels::CopyBatch& batch, unsigned count,
                                       std::size_t largest) {
    void* arguments[] = {&batch};
    cudaKernelNodeParams p{};
    p.func = reinterpret_cast<void*>(&kernels::copy_batch_kernel);
    p.gridDim = dim3(kernels::copy_blocks(largest), count);
    p.blockDim = dim3(kernels::kCopyThreads);
    p.kernelParams = arguments;
    cudaGraphNode_t node = nullptr;
    KODO_CUDA_CHECK(cudaGraphAddKernelNode(&node, build.graph, deps.data(), deps.size(), &p));
    parts.push_back(node);
  });
  if (parts.size() == 1) return parts[0];
  const auto& join = parts.empty() ? deps : parts;
  cudaGraphNode_t node = nullptr;
  KODO_CUDA_CHECK(cudaGraphAddEmptyNode(&node, build.graph, join.data(), join.size()));
  return node;
}

namespace {
// Adds a kernel node of `blocks` x `threads` running `kernel` with `arguments`.
cudaGraphNode_t add_kernel(NativeGraph graph, const void* kernel, unsigned blocks, unsigned threads,
                           void** arguments, const std::vector<NativeGraphNode>& after) {
  const auto deps = nodes_of(after);
  cudaKernelNodeParams p{};
  p.func = const_cast<void*>(kernel);
  p.gridDim = dim3(blocks);
  p.blockDim = dim3(threads);
  p.kernelParams = arguments;
  cudaGraphNode_t node = nullptr;
  KODO_CUDA_CHECK(cudaGraphAddKernelNode(&node, build_of(graph).graph, deps.data(), deps.size(),
                                         &p));
  // A transfer's nodes take the device's greatest priority, as a communication stream's
  // kernels do: else a face waits for the whole of a kernel the graph started beside it.
  cudaKernelNodeAttrValue first{};
  first.priority = device_priority(Priority::communication);
  KODO_CUDA_CHECK(cudaGraphKernelNodeSetAttribute(node, cudaKernelNodeAttributePriority, &first));
  return node;
}
}  // namespace

NativeGraphNode add_transfer_wait(NativeGraph graph, const StepTransfer& transfer,
                                  const DeviceWait& arrived,
                                  const std::vector<NativeGraphNode>& after) {
  return kernels::transfer_wait_node(add_kernel, graph, transfer, arrived, after);
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
  return kernels::transfer_send_nodes(add_kernel, graph, transfer, free, buffers, to, from, bytes,
                                      size_word, count_word, gate, after);
}

NativeGraphNode add_step_advance(NativeGraph graph, std::uint64_t* step, std::uint64_t steps,
                                 const std::vector<NativeGraphNode>& after) {
  return kernels::step_advance_node(add_kernel, graph, step, steps, after);
}

namespace {
std::size_t kernels_in(cudaGraph_t graph) {
  std::size_t count = 0, kernels = 0;
  KODO_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  KODO_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    KODO_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) ++kernels;
    if (type == cudaGraphNodeTypeGraph) {
      cudaGraph_t child = nullptr;
      KODO_CUDA_CHECK(cudaGraphChildGraphNodeGetGraph(node, &child));
      kernels += kernels_in(child);
    }
  }
  return kernels;
}
}  // namespace

std::size_t graph_kernels(NativeGraph graph) { return kernels_in(build_of(graph).graph); }

NativeGraphExec instantiate_graph(NativeGraph graph) {
  cudaGraphExec_t exec = nullptr;
  // Each kernel node runs at its own priority (a transfer's the greatest, a captured
  // kernel its stream's), not at the priority of the stream the graph is launched into.
  KODO_CUDA_CHECK(cudaGraphInstantiateWithFlags(&exec, build_of(graph).graph,
                                                cudaGraphInstantiateFlagUseNodePriority));
  return exec;
}

void destroy_graph_exec(NativeGraphExec exec) {
  if (exec) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec));
}

void launch_graph(NativeStream stream, NativeGraphExec exec) {
  KODO_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec),
                                  static_cast<cudaStream_t>(stream)));
}

void enqueue_copy(NativeStream stream, void* to, const void* from, std::size_t bytes) {
  if (bytes != 0)
    KODO_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault,
                                    static_cast<cudaStream_t>(stream)));
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
