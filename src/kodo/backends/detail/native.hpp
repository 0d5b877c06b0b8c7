// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The small interface every backend implements (host/, cuda/, hip/): device choice,
// prioritised streams, events for dependencies between streams, and completion
// counters that a stream writes itself, in order, into host memory.
//
// Only plain C++ types cross this interface, so each backend's implementation is
// compiled by its own toolchain (g++, nvcc, hipcc) without a Kokkos device build.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kodo::backend {

// Opaque native handles (cudaStream_t, hipStream_t, ...).
using NativeStream = void*;
using NativeEvent = void*;

enum class Priority { compute, communication };

// Name of this backend: "host", "cuda" or "hip".
const char* name();

// Devices visible to this process (0 for the host backend).
int device_count();
// Makes `device` current for this process; throws kodo::Error on failure.
void select_device(int device);
std::string device_name(int device);
// The device's PCI bus id ("0000:1b:00.0"): the same GPU reads the same in every process.
std::string device_bus_id(int device);

// A stream of the given priority: communication gets the greatest priority the device
// offers, compute the least. Throws kodo::Error on failure.
NativeStream create_stream(Priority priority);
void destroy_stream(NativeStream stream);

// Events order work between streams without blocking the host.
NativeEvent create_event();
void destroy_event(NativeEvent event);
// `waiter` runs nothing enqueued after this call until the work enqueued on `source`
// so far is done. `event` carries the dependency and may be reused at once.
void order_after(NativeStream waiter, NativeStream source, NativeEvent event);

// Throws kodo::Error if `stream` has failed (a device fault makes every later
// completion impossible, so waiting would hang). Costs a driver call: for rare use.
void check_stream(NativeStream stream);

// Plain event polling, the mechanism the completion engine replaces (kept for
// comparison in perf/): record on a stream, then ask whether it has been reached.
void record_event(NativeStream stream, NativeEvent event);
bool event_reached(NativeEvent event);
// An event that also takes the time it is reached (record_event, event_reached,
// destroy_event as above), and the seconds between two such events, both reached. The
// host backend has no device time: 0.
NativeEvent create_timing_event();
double seconds_between(NativeEvent start, NativeEvent end);

// Host memory the device can write: `count` counters, zeroed. `device_address`
// receives the address the device uses for the same memory.
std::uint64_t* allocate_counters(std::size_t count, std::uint64_t** device_address);
void free_counters(std::uint64_t* host_address);
// Enqueues on `stream` a write of `value` to the counter at `device_address`: it
// happens once all earlier work on the stream is done.
void enqueue_counter_write(NativeStream stream, std::uint64_t* device_address, std::uint64_t value);

// --- same-node channels (comm/detail/node_channels.hpp) ---------------------------------------

// Makes host memory that other processes map too (a POSIX shared segment) usable by
// this process's streams; returns the address they use for it.
void* register_shared_host(void* host, std::size_t bytes);
void unregister_shared_host(void* host);

// What another process of the node needs to map a device allocation.
struct MemoryExport {
  std::array<std::byte, 64> handle{};  // the allocation's IPC handle (opaque)
  std::uint64_t offset = 0;            // of the exported bytes from the allocation's start
};
// Fills `out` for the device memory at `data`; false with `why` if it cannot be mapped
// by another process (host memory, memory from a stream-ordered pool, ...).
bool export_memory(const void* data, MemoryExport& out, std::string& why);
// Maps an allocation another process exported; returns its start here and its size in
// `bytes`, or nullptr with `why`. One allocation is mapped once per process (callers
// cache).
void* import_memory(const std::array<std::byte, 64>& handle, std::size_t& bytes, std::string& why);
void release_import(void* start);

// Whether work enqueued on a stream runs in the call that enqueues it (the host
// backend): a wait enqueued there holds the caller.
bool streams_run_in_call();

// A wait on a stream for a count that another process or device raises: until
// *word >= value, or *abandon != 0 (the link closed: the stream goes on, and a copy
// behind the wait is skipped). Bounded: after `timeout_ns` without either, `failure` is
// stored into *failure_word and the stream goes on. The
// words are host memory the device reads (a node segment), as the device addresses it.
// No wait when `word` is null.
struct DeviceWait {
  const std::uint64_t* word = nullptr;
  std::uint64_t value = 0;
  const std::uint64_t* abandon = nullptr;
  std::uint64_t* failure_word = nullptr;
  std::uint64_t failure = 0;
  std::uint64_t timeout_ns = 0;
};
// Enqueues `wait` on `stream`: work enqueued after it runs once it is over; true. The
// host backend cannot wait without holding the caller: it only tells whether the wait
// is over already (the caller makes progress and asks again).
bool enqueue_wait(NativeStream stream, const DeviceWait& wait);

// Enqueues on `stream`, after the work enqueued on it so far and after `first` (a wait
// for the receiving buffer to be free; ignored on the host backend, whose callers hold
// the transfer instead): a copy of `bytes` from `from` to `to` (either may be memory of
// another device mapped here), then the stores *size_word = size and then
// *count_word = count, each visible to other processes and devices only after
// everything before it. `from_device`: `from` is device memory. A wait that times out
// or finds the link abandoned skips the copy and the stores. `gate`: one word of device
// memory for the link's copies, where a large copy's wait leaves its outcome.
void enqueue_copy_and_publish(NativeStream stream, const DeviceWait& first, void* to,
                              const void* from, std::size_t bytes, bool from_device,
                              std::uint64_t* size_word, std::uint64_t size,
                              std::uint64_t* count_word, std::uint64_t count, std::uint64_t* gate);

// --- device graphs (tasking/programs/step_program.hpp) -------------------------------------------

// Work recorded once and then submitted many times as one launch (CUDA and HIP graphs).
// The host backend has none: graphs_supported() is false there, and callers run the work
// themselves each time.
bool graphs_supported();
using NativeGraph = void*;      // a graph being built, with what its nodes need
using NativeGraphExec = void*;  // an instantiated graph
using NativeGraphNode = void*;
NativeGraph create_graph();
void destroy_graph(NativeGraph graph);
// Records the work `enqueue` puts on `stream` (stream capture), to be added to graphs as
// one node, once or several times (add_work). Returns null, with `why`, when the work
// cannot be recorded or a replay would not repeat it: `enqueue` threw or waited for the
// device, or the work holds something other than kernels, fills and copies (an event, a
// host function, an allocation, a copy from host memory to the device). `for_good` then
// says whether launching the work as before is no longer possible either: a copy from
// host memory to the device is how Kokkos launches a kernel whose functor exceeds 512
// bytes (through constant memory, from a buffer later launches overwrite), and recording
// it took the event Kokkos waits on before such a launch; so is a recording cut short by
// that event. Either way the stream is out of capture afterwards.
using RecordedWork = void*;
RecordedWork record_work(NativeStream stream, const std::function<void()>& enqueue,
                         std::string& why, bool& for_good);
// Adds a copy of `work` to `graph` as one node that runs after `after`.
NativeGraphNode add_work(NativeGraph graph, RecordedWork work,
                         const std::vector<NativeGraphNode>& after);
void destroy_work(RecordedWork work);
// A copy between two places the device can address (device or mapped memory).
struct DeviceCopy {
  void* to;
  const void* from;
  std::size_t bytes;
};
// Adds one node that makes every copy of `copies` (one kernel), after `after`.
NativeGraphNode add_copies(NativeGraph graph, const std::vector<DeviceCopy>& copies,
                           const std::vector<NativeGraphNode>& after);
// The kernels `graph` holds, child graphs' included (a copy node counts as one).
std::size_t graph_kernels(NativeGraph graph);
// Instantiates `graph` (which stays valid, and must be destroyed too); throws
// kodo::Error on failure.
NativeGraphExec instantiate_graph(NativeGraph graph);
void destroy_graph_exec(NativeGraphExec exec);
void launch_graph(NativeStream stream, NativeGraphExec exec);
// Enqueues `copies` on `stream` (no graph), to be made together: no copy's source may be
// another's destination. CUDA: one kernel for up to 64 of them.
void enqueue_copies(NativeStream stream, const std::vector<DeviceCopy>& copies);
// Enqueues one copy of `bytes` between two places the device can address (no-op for 0).
void enqueue_copy(NativeStream stream, void* to, const void* from, std::size_t bytes);

// --- recorded steps (backends/detail/recording.hpp) ----------------------------------------

// Whether work issued on streams can be recorded as it is issued (stream capture) and
// launched as one graph: CUDA. HIP and the host backend: false.
bool capture_supported();
// Starts recording what is issued on `origin` and on every stream that waits for it
// (relaxed: Kokkos may allocate or ask for kernel attributes while recording).
void begin_capture(NativeStream origin);
// Ends the recording begun on `origin`: the graph of what was issued, or null if nothing
// was. Throws kodo::Error if the recording failed (a call that cannot be recorded, such
// as a wait for the device, was made on a recorded stream).
using CapturedGraph = void*;
CapturedGraph end_capture(NativeStream origin);
void destroy_captured(CapturedGraph graph);
// Gives `exec` the work of `graph` if their shapes match (the same nodes and edges; only
// parameters differ); false, and `exec` unchanged, if not.
bool update_exec(NativeGraphExec exec, CapturedGraph graph);
NativeGraphExec instantiate_captured(CapturedGraph graph);
// A cheap key of `graph`'s shape (its numbers of nodes and edges): a program can take the
// work of a graph only if their keys are equal.
std::uint64_t shape_key(CapturedGraph graph);
// Adds to `nodes` what `stream`'s next recorded work would follow: the nodes recorded on it
// since it joined the open recording, or that it waited for. None for a stream with
// nothing recorded (it joined with an empty set), or not being recorded.
void recorded_tail(NativeStream stream, std::vector<NativeGraphNode>& nodes);
// `stream`, being recorded, records nothing more before `nodes` (each taken once, in the
// order given; none: nothing to do). Orders streams inside a recording by the graph's own edges,
// where an event recorded and waited for costs the host ~3x more (perf/probes/capture_edges.cu).
void order_after_nodes(NativeStream stream, const std::vector<NativeGraphNode>& nodes);
// order_after for two streams that both joined the open recording: `waiter` records
// nothing more before what `source` has recorded (left out when given already since the
// source last recorded). False, doing nothing, if `source` is not being recorded (the
// caller orders them by an event).
bool order_after_recorded(NativeStream waiter, NativeStream source);
// `stream` waits (on the device) for the latest record of `event`.
void wait_event(NativeStream stream, NativeEvent event);
// Whether a copy from or to `p` may be recorded: device memory, or host memory the device
// can address (pinned). Pageable host memory cannot be.
bool recordable_memory(const void* p);
// Where `event` stands: reached (or never recorded), pending, or last recorded while
// being captured (a graph holds that record, and a wait for it on the host fails).
enum class EventState { reached, pending, captured };
EventState event_state(NativeEvent event);

// Transfers with another rank made by a graph's own nodes, over a same-node route (the
// link words and buffers of enqueue_wait and enqueue_copy_and_publish). A recorded step
// is replayed for many steps, so its nodes work out which transfer they handle on the
// device: the graph runs step k = *step + offset, and the node handles transfer
// ((k + shift) / phases) * uses + index of its link.
struct StepTransfer {
  const std::uint64_t* step = nullptr;  // device memory
  std::uint64_t offset = 0, shift = 0, phases = 1, uses = 1, index = 0;
};
// A node that waits until *arrived.word >= transfer + 1 (arrived.value is not used).
NativeGraphNode add_transfer_wait(NativeGraph graph, const StepTransfer& transfer,
                                  const DeviceWait& arrived,
                                  const std::vector<NativeGraphNode>& after);
// A node that stores *consumed_word = transfer + 1, visible to other devices and
// processes after everything before it.
NativeGraphNode add_transfer_release(NativeGraph graph, const StepTransfer& transfer,
                                     std::uint64_t* consumed_word,
                                     const std::vector<NativeGraphNode>& after);
// Nodes that, once *free.word >= transfer + 1 - buffers (the receiver has freed the
// buffer; no wait for the first `buffers` transfers), copy `bytes` from `from` to `to`
// and then store *size_word = bytes and *count_word = transfer + 1, as
// enqueue_copy_and_publish does; `gate` is a device word of the link's own. Returns the
// last node.
NativeGraphNode add_transfer_send(NativeGraph graph, const StepTransfer& transfer,
                                  const DeviceWait& free, std::uint64_t buffers, void* to,
                                  const void* from, std::size_t bytes, std::uint64_t* size_word,
                                  std::uint64_t* count_word, std::uint64_t* gate,
                                  const std::vector<NativeGraphNode>& after);
// A node that adds `steps` to *step (device memory).
NativeGraphNode add_step_advance(NativeGraph graph, std::uint64_t* step, std::uint64_t steps,
                                 const std::vector<NativeGraphNode>& after);

}  // namespace kodo::backend
