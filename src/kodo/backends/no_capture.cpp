// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Recorded steps where there are none (backends/detail/recording.hpp): the host backend,
// whose streams run their work in the call that issues it (KODO_RECORD=on only groups a
// turn's work there), and HIP, for which recording is not built yet (Kokkos' HIP launches
// differ from CUDA's in what a recording must avoid).

#include <kodo/backends/detail/native.hpp>
#include <kodo/core/error.hpp>

namespace kodo::backend {
namespace {
[[noreturn]] void unsupported() {
  throw Error(detail::cat("the ", name(),
                          " backend records no device work (KODO_RECORD=on is for CUDA)"));
}
}  // namespace

bool capture_supported() { return false; }
void begin_capture(NativeStream) { unsupported(); }
CapturedGraph end_capture(NativeStream) { unsupported(); }
void destroy_captured(CapturedGraph) {}
bool update_exec(NativeGraphExec, CapturedGraph) { unsupported(); }
NativeGraphExec instantiate_captured(CapturedGraph) { unsupported(); }
std::uint64_t shape_key(CapturedGraph) { unsupported(); }
void recorded_tail(NativeStream, std::vector<NativeGraphNode>&) { unsupported(); }
void order_after_nodes(NativeStream, const std::vector<NativeGraphNode>&) { unsupported(); }
bool order_after_recorded(NativeStream, NativeStream) { return false; }
void wait_event(NativeStream, NativeEvent) { unsupported(); }
bool recordable_memory(const void*) { return true; }
EventState event_state(NativeEvent) { return EventState::reached; }

}  // namespace kodo::backend
