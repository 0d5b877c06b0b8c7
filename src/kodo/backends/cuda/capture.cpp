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
bool tail_of(NativeStream stream, const cudaGraphNode_t*& nodes, std::size_t& count,
             unsigned long long* capture = nullptr) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  nodes = nullptr;
  count = 0;
#if CUDART_VERSION >= 13000
  KODO_CUDA_CHECK(cudaStreamGetCaptureInfo(static_cast<cudaStream_t>(stream), &status, capture,
                                           nullptr, &nodes, nullptr, &count));
#else
  KODO_CUDA_CHECK(cudaStreamGetCaptureInfo(static_cast<cudaStream_t>(stream), &status, capture,
                                           nullptr, &nodes, &count));
#endif
  return status == cudaStreamCaptureStatusActive;
}

// `stream` records nothing more before `nodes`, each taken once, in the order given: a
// graph's update pairs a node's dependencies by their order, so the order must be the
// same every turn (the pool's, not the nodes' addresses). The nodes are copied first: a
// stream's array is valid only until its dependencies change, and the update takes a
// writable one.
// (Node: cudaGraphNode_t, or NativeGraphNode, the same pointer kodo's interface passes.)
template <class Node>
void add_dependencies(NativeStream stream, const Node* nodes, std::size_t count) {
  if (count == 0) return;
  thread_local std::vector<cudaGraphNode_t> once;  // (its capacity kept)
  once.clear();
  for (std::size_t i = 0; i < count; ++i) {
    const auto node = static_cast<cudaGraphNode_t>(nodes[i]);
    if (std::find(once.begin(), once.end(), node) == once.end()) once.push_back(node);
  }
#if CUDART_VERSION >= 13000
  KODO_CUDA_CHECK(cudaStreamUpdateCaptureDependencies(static_cast<cudaStream_t>(stream),
                                                      once.data(), nullptr, once.size(),
                                                      cudaStreamAddCaptureDependencies));
#else
  KODO_CUDA_CHECK(cudaStreamUpdateCaptureDependencies(static_cast<cudaStream_t>(stream),
                                                      once.data(), once.size(),
                                                      cudaStreamAddCaptureDependencies));
#endif
}
}  // namespace

void recorded_tail(NativeStream stream, std::vector<NativeGraphNode>& nodes) {
  const cudaGraphNode_t* tail = nullptr;
  std::size_t count = 0;
  // A stream joins a recording with its start's empty set of nodes: work adds to it.
  if (tail_of(stream, tail, count)) nodes.insert(nodes.end(), tail, tail + count);
}

void order_after_nodes(NativeStream stream, const std::vector<NativeGraphNode>& nodes) {
  add_dependencies(stream, nodes.data(), nodes.size());
}

namespace {
// The orders given in the open capture (`capture`: cudaStreamGetCaptureInfo's id, unique
// in the process): `waiter` after `source`'s tail as it was then. Units sharing a pool's
// streams give the same order one after the other (a batch's units, each before its
// kernels join the batch): while the source records nothing new, the waiter, whose later
// work follows what it followed, is in order already, and the update is left out. Only
// ever added to (cudaStreamAddCaptureDependencies), a waiter's dependencies keep what they
// were given. What is left out depends on this capture's calls alone (a graph's shape must
// not change from turn to turn); the entries' lists keep their capacity from capture to
// capture (no allocation once warm), and orders beyond kMaxOrders pairs are given each time.
struct GivenOrder {
  NativeStream waiter, source;
  std::vector<cudaGraphNode_t> tail;
};
constexpr std::size_t kMaxOrders = 256;
thread_local unsigned long long orders_capture = 0;
thread_local std::vector<GivenOrder> orders_given;  // [0, orders_used): this capture's
thread_local std::size_t orders_used = 0;

GivenOrder* given_order(NativeStream waiter, NativeStream source, unsigned long long capture) {
  if (capture != orders_capture) {
    orders_capture = capture;
    orders_used = 0;
  }
  for (std::size_t i = 0; i < orders_used; ++i)
    if (orders_given[i].waiter == waiter && orders_given[i].source == source)
      return &orders_given[i];
  return nullptr;
}

// Notes that `waiter` follows this tail of `source` (null: more pairs than noted).
GivenOrder* note_order(GivenOrder* order, NativeStream waiter, NativeStream source,
                       const cudaGraphNode_t* tail, std::size_t count) {
  if (!order) {
    if (orders_used == kMaxOrders) return nullptr;
    if (orders_used == orders_given.size()) orders_given.emplace_back();
    order = &orders_given[orders_used++];
    order->waiter = waiter;
    order->source = source;
  }
  order->tail.assign(tail, tail + count);
  return order;
}
}  // namespace

bool order_after_recorded(NativeStream waiter, NativeStream source) {
  const cudaGraphNode_t* tail = nullptr;
  std::size_t count = 0;
  unsigned long long capture = 0;
  if (!tail_of(source, tail, count, &capture)) return false;
  if (count == 0) return true;
  GivenOrder* given = given_order(waiter, source, capture);
  if (given && std::equal(given->tail.begin(), given->tail.end(), tail, tail + count)) return true;
  GivenOrder* noted = note_order(given, waiter, source, tail, count);
  try {
    add_dependencies(waiter, tail, count);
  } catch (...) {
    if (noted) noted->tail.clear();  // not given: never to be left out
    throw;
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
