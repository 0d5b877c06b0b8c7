// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// CUDA backend: recorded steps (backends/detail/recording.hpp). The work a scheduler turn
// issues on a rank's streams is captured into one graph, which then replaces an
// instantiated one of the same shape (cudaGraphExecUpdate: parameters only) or is
// instantiated once, and launched.

#include <kodo/backends/detail/cuda_check.hpp>
#include <kodo/backends/detail/native.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace kodo::backend {

bool capture_supported() { return true; }

void begin_capture(NativeStream origin) {
  KODO_CUDA_CHECK(cudaStreamBeginCapture(static_cast<cudaStream_t>(origin),
                                         cudaStreamCaptureModeRelaxed));
}

CapturedGraph end_capture(NativeStream origin) {
  cudaGraph_t graph = nullptr;
  const cudaError_t e = cudaStreamEndCapture(static_cast<cudaStream_t>(origin), &graph);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (graph) cudaGraphDestroy(graph);
    throw Error(std::string("recording a step's device work failed (") + cudaGetErrorString(e) +
                "): a call that cannot be recorded was made on a rank's stream while kodo "
                "recorded it; KODO_RECORD=off issues every call as it is made");
  }
  std::size_t nodes = 0;
  KODO_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  if (nodes == 0) {
    cudaGraphDestroy(graph);
    return nullptr;
  }
  return graph;
}

void destroy_captured(CapturedGraph graph) {
  if (graph) cudaGraphDestroy(static_cast<cudaGraph_t>(graph));
}

bool update_exec(NativeGraphExec exec, CapturedGraph graph) {
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t e = cudaGraphExecUpdate(static_cast<cudaGraphExec_t>(exec),
                                            static_cast<cudaGraph_t>(graph), &info);
  if (e == cudaSuccess) return true;
  cudaGetLastError();  // cudaErrorGraphExecUpdateFailure: the shapes differ
  return false;
}

NativeGraphExec instantiate_captured(CapturedGraph graph) {
  cudaGraphExec_t exec = nullptr;
  // Captured kernels keep their streams' priorities (communication over compute), as they
  // have when launched one by one.
  KODO_CUDA_CHECK(cudaGraphInstantiateWithFlags(&exec, static_cast<cudaGraph_t>(graph),
                                                cudaGraphInstantiateFlagUseNodePriority));
  return exec;
}

std::uint64_t shape_key(CapturedGraph graph) {
  const auto g = static_cast<cudaGraph_t>(graph);
  std::size_t nodes = 0, edges = 0;
  KODO_CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
#if CUDART_VERSION >= 13000
  KODO_CUDA_CHECK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &edges));
#else
  KODO_CUDA_CHECK(cudaGraphGetEdges(g, nullptr, nullptr, &edges));
#endif
  return (static_cast<std::uint64_t>(nodes) << 32) ^ static_cast<std::uint64_t>(edges);
}

namespace {
// The nodes `stream`'s next recorded work would follow (valid until its dependencies
// change); false when it is not being recorded.
bool tail_of(NativeStream stream, const cudaGraphNode_t*& nodes, std::size_t& count) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  nodes = nullptr;
  count = 0;
#if CUDART_VERSION >= 13000
  KODO_CUDA_CHECK(cudaStreamGetCaptureInfo(static_cast<cudaStream_t>(stream), &status, nullptr,
                                           nullptr, &nodes, nullptr, &count));
#else
  KODO_CUDA_CHECK(cudaStreamGetCaptureInfo(static_cast<cudaStream_t>(stream), &status, nullptr,
                                           nullptr, &nodes, &count));
#endif
  return status == cudaStreamCaptureStatusActive;
}

void add_dependencies(NativeStream stream, cudaGraphNode_t* nodes, std::size_t count) {
#if CUDART_VERSION >= 13000
  KODO_CUDA_CHECK(cudaStreamUpdateCaptureDependencies(static_cast<cudaStream_t>(stream), nodes,
                                                      nullptr, count,
                                                      cudaStreamAddCaptureDependencies));
#else
  KODO_CUDA_CHECK(cudaStreamUpdateCaptureDependencies(static_cast<cudaStream_t>(stream), nodes,
                                                      count, cudaStreamAddCaptureDependencies));
#endif
}
}  // namespace

void recorded_tail(NativeStream stream, std::vector<NativeGraphNode>& nodes) {
  const cudaGraphNode_t* tail = nullptr;
  std::size_t count = 0;
  // A stream joins a recording with its start's empty set of nodes: work adds to it.
  if (tail_of(stream, tail, count)) nodes.insert(nodes.end(), tail, tail + count);
}

void order_after_nodes(NativeStream stream, std::vector<NativeGraphNode>& nodes) {
  if (nodes.empty()) return;
  // Each node once, in the order given (the pool's, the same every turn): a graph's
  // update pairs a node's dependencies by their order, so an order by address, which
  // may differ between turns of one shape, could refuse it.
  thread_local std::vector<cudaGraphNode_t> typed;  // (its capacity kept)
  typed.clear();
  for (NativeGraphNode n : nodes) {
    const auto node = static_cast<cudaGraphNode_t>(n);
    if (std::find(typed.begin(), typed.end(), node) == typed.end()) typed.push_back(node);
  }
  add_dependencies(stream, typed.data(), typed.size());
}

bool order_after_recorded(NativeStream waiter, NativeStream source) {
  const cudaGraphNode_t* tail = nullptr;
  std::size_t count = 0;
  if (!tail_of(source, tail, count)) return false;
  // (The array is the source's, valid until its own dependencies change; copied, as the
  // update takes a writable one.)
  constexpr std::size_t kMost = 16;
  cudaGraphNode_t copy[kMost];
  if (count <= kMost) {
    std::copy(tail, tail + count, copy);
    if (count > 0) add_dependencies(waiter, copy, count);
  } else {
    std::vector<cudaGraphNode_t> many(tail, tail + count);
    add_dependencies(waiter, many.data(), count);
  }
  return true;
}

void wait_event(NativeStream stream, NativeEvent event) {
  KODO_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream),
                                      static_cast<cudaEvent_t>(event), 0));
}

bool recordable_memory(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type != cudaMemoryTypeUnregistered;
}

EventState event_state(NativeEvent event) {
  const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (e == cudaSuccess) return EventState::reached;
  if (e == cudaErrorNotReady) return EventState::pending;
  cudaGetLastError();
  if (e == cudaErrorCapturedEvent) return EventState::captured;
  check_cuda(e, "cudaEventQuery");
  return EventState::pending;
}

}  // namespace kodo::backend
