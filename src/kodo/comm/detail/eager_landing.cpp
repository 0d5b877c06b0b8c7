// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Eager view data into its views (eager_landing.hpp).
#include <kodo/comm/detail/eager_landing.hpp>

#include <kodo/backends/detail/tool_region.hpp>

#include <cstring>
#include <string>

namespace kodo::detail {

namespace {
// Copies `bytes` from pinned host memory to device memory, ordered on `space`.
void copy_to_device(const ExecutionSpace& space, void* to, const std::byte* from,
                    std::size_t bytes) {
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  Kokkos::View<std::byte*, ExecutionSpace::memory_space, Unmanaged> device(
      static_cast<std::byte*>(to), bytes);
  Kokkos::View<const std::byte*, Kokkos::SharedHostPinnedSpace, Unmanaged> pinned(from, bytes);
  static const std::string region = "kodo::call data copy";
  const ToolRegion here(region);
  Kokkos::deep_copy(space, device, pinned);
}
}  // namespace

ViewPool::Staging land_eager_data(ViewPool& pool, const ExecutionSpace& space,
                                  const std::vector<Segment>& into, const std::byte* data) {
  std::size_t device_bytes = 0;
  for (const Segment& s : into)
    if (s.kind != MemoryKind::host) device_bytes += s.bytes;
  ViewPool::Staging staging;
  if (device_bytes != 0) staging = pool.staging(device_bytes);
  std::byte* pinned = staging.data();
  for (const Segment& s : into) {
    if (s.bytes == 0) continue;  // (an empty view's memory may be null)
    if (s.kind == MemoryKind::host) {
      std::memcpy(s.data, data, s.bytes);
    } else {
      std::memcpy(pinned, data, s.bytes);
      copy_to_device(space, s.data, pinned, s.bytes);
      pinned += s.bytes;
    }
    data += s.bytes;
  }
  return staging;
}

}  // namespace kodo::detail
