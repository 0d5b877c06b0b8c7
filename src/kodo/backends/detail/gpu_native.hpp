// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What the CUDA and HIP backends share (native.hpp), written once: devices, streams and
// events, host memory mapped for the device, the launches of same-node channels, and
// device graphs. Included by cuda/native.cpp and hip/native.cpp alone, each compiled by
// its own compiler, after they name their runtime's API with KODO_GPU(Name) (cudaName or
// hipName), KODO_GPU_NAME(Name) (its name as a string) and KODO_GPU_CHECK(call) (which
// throws kodo::Error), and define, in kodo::backend:
//   void check_gpu(KODO_GPU(Error_t) e, const char* what);  // throws unless success
//   bool device_addressable(const void* p);                 // memory the device reads
//   DeviceWait on_device(DeviceWait wait);                  // its bound in device ticks
//   void prioritize_transfer(KODO_GPU(GraphNode_t) node, int greatest);  // a transfer node
// What differs stays in each backend: the device's name, completion counters, memory
// exported to other processes, a turn's copies, instantiation (CUDA's with node
// priorities) and the recording of whole turns (cuda/capture.cpp).

#include <kodo/backends/detail/channel_kernels.hpp>
#include <kodo/backends/detail/native.hpp>
#include <kodo/core/error.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#if !defined(KODO_GPU) || !defined(KODO_GPU_NAME) || !defined(KODO_GPU_CHECK)
#error "gpu_native.hpp is included by a GPU backend's native.cpp, which names KODO_GPU first"
#endif

namespace kodo::backend {

// --- devices, streams, events ------------------------------------------------------

int device_count() {
  int n = 0;
  const KODO_GPU(Error_t) e = KODO_GPU(GetDeviceCount)(&n);
  if (e == KODO_GPU(ErrorNoDevice) || e == KODO_GPU(ErrorInsufficientDriver)) return 0;
  check_gpu(e, KODO_GPU_NAME(GetDeviceCount));
  return n;
}

void select_device(int device) { KODO_GPU_CHECK(KODO_GPU(SetDevice)(device)); }

std::string device_bus_id(int device) {
  char id[32] = {};
  KODO_GPU_CHECK(KODO_GPU(DeviceGetPCIBusId)(id, sizeof id, device));
  return id;
}

namespace {
// The device's priority for `priority`: communication the greatest, compute the least.
int device_priority(Priority priority) {
  int least = 0, greatest = 0;
  KODO_GPU_CHECK(KODO_GPU(DeviceGetStreamPriorityRange)(&least, &greatest));
  return priority == Priority::communication ? greatest : least;
}
}  // namespace

NativeStream create_stream(Priority priority) {
  KODO_GPU(Stream_t) s = nullptr;
  KODO_GPU_CHECK(KODO_GPU(StreamCreateWithPriority)(&s, KODO_GPU(StreamNonBlocking),
                                                    device_priority(priority)));
  return s;
}
void destroy_stream(NativeStream stream) {
  (void)KODO_GPU(StreamDestroy)(static_cast<KODO_GPU(Stream_t)>(stream));
}

NativeEvent create_event() {
  KODO_GPU(Event_t) e = nullptr;
  KODO_GPU_CHECK(KODO_GPU(EventCreateWithFlags)(&e, KODO_GPU(EventDisableTiming)));
  return e;
}
void destroy_event(NativeEvent event) {
  (void)KODO_GPU(EventDestroy)(static_cast<KODO_GPU(Event_t)>(event));
}

void order_after(NativeStream waiter, NativeStream source, NativeEvent event) {
  // A wait captures the event's latest record when it is enqueued, so the event can be
  // recorded again right away.
  KODO_GPU_CHECK(KODO_GPU(EventRecord)(static_cast<KODO_GPU(Event_t)>(event),
                                       static_cast<KODO_GPU(Stream_t)>(source)));
  KODO_GPU_CHECK(KODO_GPU(StreamWaitEvent)(static_cast<KODO_GPU(Stream_t)>(waiter),
                                           static_cast<KODO_GPU(Event_t)>(event), 0));
}

void check_stream(NativeStream stream) {
  const KODO_GPU(Error_t) e = KODO_GPU(StreamQuery)(static_cast<KODO_GPU(Stream_t)>(stream));
  if (e != KODO_GPU(Success) && e != KODO_GPU(ErrorNotReady))
    check_gpu(e, KODO_GPU_NAME(StreamQuery) " (the stream failed)");
}

void record_event(NativeStream stream, NativeEvent event) {
  KODO_GPU_CHECK(KODO_GPU(EventRecord)(static_cast<KODO_GPU(Event_t)>(event),
                                       static_cast<KODO_GPU(Stream_t)>(stream)));
}
bool event_reached(NativeEvent event) {
  const KODO_GPU(Error_t) e = KODO_GPU(EventQuery)(static_cast<KODO_GPU(Event_t)>(event));
  if (e == KODO_GPU(ErrorNotReady)) return false;
  check_gpu(e, KODO_GPU_NAME(EventQuery));
  return true;
}

NativeEvent create_timing_event() {
  KODO_GPU(Event_t) e = nullptr;
  KODO_GPU_CHECK(KODO_GPU(EventCreate)(&e));
  return e;
}
double seconds_between(NativeEvent start, NativeEvent end) {
  float ms = 0;
  KODO_GPU_CHECK(KODO_GPU(EventElapsedTime)(&ms, static_cast<KODO_GPU(Event_t)>(start),
                                            static_cast<KODO_GPU(Event_t)>(end)));
  return ms * 1e-3;
}

void* register_shared_host(void* host, std::size_t bytes) {
  KODO_GPU_CHECK(KODO_GPU(HostRegister)(host, bytes,
                                        KODO_GPU(HostRegisterPortable) |
                                            KODO_GPU(HostRegisterMapped)));
  void* device = nullptr;
  KODO_GPU_CHECK(KODO_GPU(HostGetDevicePointer)(&device, host, 0));
  return device;
}
void unregister_shared_host(void* host) { (void)KODO_GPU(HostUnregister)(host); }

// --- same-node channels --------------------------------------------------------------

bool streams_run_in_call() { return false; }

bool enqueue_wait(NativeStream stream, const DeviceWait& wait) {
  if (!wait.word) return true;
  kernels::wait_kernel<<<1, 1, 0, static_cast<KODO_GPU(Stream_t)>(stream)>>>(on_device(wait));
  check_gpu(KODO_GPU(GetLastError)(), "a kernel launch (channel wait)");
  return true;
}

void enqueue_copy_and_publish(NativeStream stream, const DeviceWait& wait, void* to,
                              const void* from, std::size_t bytes, bool from_device,
                              std::uint64_t* size_word, std::uint64_t size,
                              std::uint64_t* count_word, std::uint64_t count, std::uint64_t* gate) {
  auto s = static_cast<KODO_GPU(Stream_t)>(stream);
  auto* t = static_cast<unsigned char*>(to);
  const auto* f = static_cast<const unsigned char*>(from);
  const DeviceWait first = on_device(wait);
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
      KODO_GPU_CHECK(KODO_GPU(MemcpyAsync)(to, from, bytes, KODO_GPU(MemcpyDefault), s));
    }
    const std::uint64_t* gated = from_device && first.word ? gate : nullptr;
    kernels::publish_kernel<<<1, 32, 0, s>>>(first, gated, size_word, size, count_word, count);
  }
  check_gpu(KODO_GPU(GetLastError)(), "a kernel launch (channel copy)");
}

void enqueue_copy(NativeStream stream, void* to, const void* from, std::size_t bytes) {
  if (bytes != 0)
    KODO_GPU_CHECK(KODO_GPU(MemcpyAsync)(to, from, bytes, KODO_GPU(MemcpyDefault),
                                         static_cast<KODO_GPU(Stream_t)>(stream)));
}

// --- device graphs -------------------------------------------------------------------

namespace {

using GraphNode = KODO_GPU(GraphNode_t);

// A graph being built.
struct GraphBuild {
  KODO_GPU(Graph_t) graph = nullptr;
};
GraphBuild& build_of(NativeGraph graph) { return *static_cast<GraphBuild*>(graph); }

// The nodes of `after`, each once (the driver refuses a dependency named twice).
std::vector<GraphNode> nodes_of(const std::vector<NativeGraphNode>& after) {
  std::vector<GraphNode> nodes;
  for (NativeGraphNode n : after)
    if (n && std::find(nodes.begin(), nodes.end(), static_cast<GraphNode>(n)) == nodes.end())
      nodes.push_back(static_cast<GraphNode>(n));
  return nodes;
}

std::vector<GraphNode> nodes_in(KODO_GPU(Graph_t) graph) {
  std::size_t count = 0;
  KODO_GPU_CHECK(KODO_GPU(GraphGetNodes)(graph, nullptr, &count));
  std::vector<GraphNode> nodes(count);
  KODO_GPU_CHECK(KODO_GPU(GraphGetNodes)(graph, nodes.data(), &count));
  return nodes;
}

// Why replaying `graph` would not repeat what recording it enqueued, or "" (the first
// reason found). Every node is looked at: `for_good` is set by a copy from host memory
// into device memory anywhere in it, the shape of Kokkos' launch of a kernel through
// constant memory (see record_work).
std::string unreplayable(KODO_GPU(Graph_t) graph, bool& for_good) {
  std::string why;
  for (GraphNode node : nodes_in(graph)) {
    KODO_GPU(GraphNodeType) type{};
    KODO_GPU_CHECK(KODO_GPU(GraphNodeGetType)(node, &type));
    std::string found;
    switch (type) {
      case KODO_GPU(GraphNodeTypeKernel):
      case KODO_GPU(GraphNodeTypeMemset):
      case KODO_GPU(GraphNodeTypeEmpty): break;
      case KODO_GPU(GraphNodeTypeMemcpy): {
        KODO_GPU(Memcpy3DParms) p{};
        KODO_GPU_CHECK(KODO_GPU(GraphMemcpyNodeGetParams)(node, &p));
        const bool from_host = !p.srcArray && !device_addressable(p.srcPtr.ptr);
        const bool to_host = !p.dstArray && !device_addressable(p.dstPtr.ptr);
        if (from_host && !to_host) {
          for_good = true;
          found =
              "it copies from host memory to the device (Kokkos does so to launch a kernel "
              "whose functor is too large for kernel arguments (over 512 bytes on CUDA), "
              "through constant memory, from a buffer that later launches overwrite; a copy "
              "from a host view looks the same)";
        }  // a copy into host memory replays alike
        break;
      }
      case KODO_GPU(GraphNodeTypeGraph): {
        KODO_GPU(Graph_t) child = nullptr;
        KODO_GPU_CHECK(KODO_GPU(GraphChildGraphNodeGetGraph)(node, &child));
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

// Adds a kernel node of `blocks` x `threads` running `kernel` with `arguments`, at a
// transfer's priority.
GraphNode add_kernel(NativeGraph graph, const void* kernel, unsigned blocks, unsigned threads,
                     void** arguments, const std::vector<NativeGraphNode>& after) {
  const auto deps = nodes_of(after);
  KODO_GPU(KernelNodeParams) p{};
  p.func = const_cast<void*>(kernel);
  p.gridDim = dim3(blocks);
  p.blockDim = dim3(threads);
  p.kernelParams = arguments;
  GraphNode node = nullptr;
  KODO_GPU_CHECK(KODO_GPU(GraphAddKernelNode)(&node, build_of(graph).graph, deps.data(),
                                              deps.size(), &p));
  prioritize_transfer(node, device_priority(Priority::communication));
  return node;
}

std::size_t kernels_in(KODO_GPU(Graph_t) graph) {
  std::size_t kernels = 0;
  for (GraphNode node : nodes_in(graph)) {
    KODO_GPU(GraphNodeType) type{};
    KODO_GPU_CHECK(KODO_GPU(GraphNodeGetType)(node, &type));
    if (type == KODO_GPU(GraphNodeTypeKernel)) ++kernels;
    if (type == KODO_GPU(GraphNodeTypeGraph)) {
      KODO_GPU(Graph_t) child = nullptr;
      KODO_GPU_CHECK(KODO_GPU(GraphChildGraphNodeGetGraph)(node, &child));
      kernels += kernels_in(child);
    }
  }
  return kernels;
}

}  // namespace

bool graphs_supported() { return true; }

NativeGraph create_graph() {
  auto build = std::make_unique<GraphBuild>();
  KODO_GPU_CHECK(KODO_GPU(GraphCreate)(&build->graph, 0));
  return build.release();
}

void destroy_graph(NativeGraph graph) {
  auto* build = static_cast<GraphBuild*>(graph);
  if (!build) return;
  (void)KODO_GPU(GraphDestroy)(build->graph);
  delete build;
}

RecordedWork record_work(NativeStream stream, const std::function<void()>& enqueue,
                         std::string& why, bool& for_good) {
  for_good = false;
  auto s = static_cast<KODO_GPU(Stream_t)>(stream);
  // Relaxed: Kokkos may ask for kernel attributes or allocate scratch on a first launch.
  KODO_GPU(Error_t) e = KODO_GPU(StreamBeginCapture)(s, KODO_GPU(StreamCaptureModeRelaxed));
  if (e != KODO_GPU(Success)) {
    (void)KODO_GPU(GetLastError)();
    why = std::string("the stream cannot record (") + KODO_GPU(GetErrorString)(e) + ")";
    return nullptr;
  }
  std::string failure;
  try {
    enqueue();
  } catch (...) {
    failure = "it failed while recorded: " + detail::what_of_current();
  }
  KODO_GPU(Graph_t) recorded = nullptr;
  e = KODO_GPU(StreamEndCapture)(s, &recorded);
  if (failure.empty() && e != KODO_GPU(Success))
    failure = std::string("recording it failed (") + KODO_GPU(GetErrorString)(e) +
              "; a fence or a host read of device data cannot be recorded)";
  (void)KODO_GPU(GetLastError)();
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
  if (failure.find("ErrorCapturedEvent") != std::string::npos) for_good = true;
  if (!failure.empty()) {
    if (recorded) (void)KODO_GPU(GraphDestroy)(recorded);
    why = failure;
    return nullptr;
  }
  if (!recorded) KODO_GPU_CHECK(KODO_GPU(GraphCreate)(&recorded, 0));  // nothing was enqueued
  return recorded;
}

NativeGraphNode add_work(NativeGraph graph, RecordedWork work,
                         const std::vector<NativeGraphNode>& after) {
  auto recorded = static_cast<KODO_GPU(Graph_t)>(work);
  const auto deps = nodes_of(after);
  std::size_t count = 0;
  KODO_GPU_CHECK(KODO_GPU(GraphGetNodes)(recorded, nullptr, &count));
  GraphNode node = nullptr;
  GraphBuild& build = build_of(graph);
  if (count == 0)
    KODO_GPU_CHECK(KODO_GPU(GraphAddEmptyNode)(&node, build.graph, deps.data(), deps.size()));
  else  // the node holds a copy
    KODO_GPU_CHECK(KODO_GPU(GraphAddChildGraphNode)(&node, build.graph, deps.data(), deps.size(),
                                                    recorded));
  return node;
}

void destroy_work(RecordedWork work) {
  if (work) (void)KODO_GPU(GraphDestroy)(static_cast<KODO_GPU(Graph_t)>(work));
}

NativeGraphNode add_copies(NativeGraph graph, const std::vector<DeviceCopy>& copies,
                           const std::vector<NativeGraphNode>& after) {
  GraphBuild& build = build_of(graph);
  const auto deps = nodes_of(after);
  // A kernel node for each kCopiesPerLaunch copies, their list its parameters (the node
  // keeps a copy): no device memory to allocate and fill for a node. Several are joined.
  std::vector<GraphNode> parts;
  kernels::in_copy_batches(copies, [&](kernels::CopyBatch& batch, unsigned count,
                                       std::size_t largest) {
    void* arguments[] = {&batch};
    KODO_GPU(KernelNodeParams) p{};
    p.func = reinterpret_cast<void*>(&kernels::copy_batch_kernel);
    p.gridDim = dim3(kernels::copy_blocks(largest), count);
    p.blockDim = dim3(kernels::kCopyThreads);
    p.kernelParams = arguments;
    GraphNode node = nullptr;
    KODO_GPU_CHECK(KODO_GPU(GraphAddKernelNode)(&node, build.graph, deps.data(), deps.size(), &p));
    parts.push_back(node);
  });
  if (parts.size() == 1) return parts[0];
  const auto& join = parts.empty() ? deps : parts;
  GraphNode node = nullptr;
  KODO_GPU_CHECK(KODO_GPU(GraphAddEmptyNode)(&node, build.graph, join.data(), join.size()));
  return node;
}

NativeGraphNode add_transfer_wait(NativeGraph graph, const StepTransfer& transfer,
                                  const DeviceWait& arrived,
                                  const std::vector<NativeGraphNode>& after) {
  return kernels::transfer_wait_node(add_kernel, graph, transfer, on_device(arrived), after);
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
  return kernels::transfer_send_nodes(add_kernel, graph, transfer, on_device(free), buffers, to,
                                      from, bytes, size_word, count_word, gate, after);
}

NativeGraphNode add_step_advance(NativeGraph graph, std::uint64_t* step, std::uint64_t steps,
                                 const std::vector<NativeGraphNode>& after) {
  return kernels::step_advance_node(add_kernel, graph, step, steps, after);
}

std::size_t graph_kernels(NativeGraph graph) { return kernels_in(build_of(graph).graph); }

void destroy_graph_exec(NativeGraphExec exec) {
  if (exec) (void)KODO_GPU(GraphExecDestroy)(static_cast<KODO_GPU(GraphExec_t)>(exec));
}

void launch_graph(NativeStream stream, NativeGraphExec exec) {
  KODO_GPU_CHECK(KODO_GPU(GraphLaunch)(static_cast<KODO_GPU(GraphExec_t)>(exec),
                                       static_cast<KODO_GPU(Stream_t)>(stream)));
}

}  // namespace kodo::backend
