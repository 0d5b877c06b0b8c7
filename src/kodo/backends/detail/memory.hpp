// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Where a buffer lives, as the transport needs to know it: UCX takes it as a memory-type
// hint and so skips its own lookup of every pointer it is given.

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace kodo::detail {

enum class MemoryKind : std::uint8_t { host, cuda, cuda_managed, rocm, rocm_managed };

// The kind of memory a Kokkos memory space allocates. Host memory, pinned host memory
// (which UCX treats as host memory) and any other space the host can read count as host.
template <class MemorySpace>
struct MemoryKindOf {
  static_assert(Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible,
                "kodo: messages and channels support host, CUDA and HIP memory spaces");
  static constexpr MemoryKind value = MemoryKind::host;
};
#if defined(KOKKOS_ENABLE_CUDA)
template <>
struct MemoryKindOf<Kokkos::CudaSpace> {
  static constexpr MemoryKind value = MemoryKind::cuda;
};
template <>
struct MemoryKindOf<Kokkos::CudaUVMSpace> {
  static constexpr MemoryKind value = MemoryKind::cuda_managed;
};
#endif
#if defined(KOKKOS_ENABLE_HIP)
template <>
struct MemoryKindOf<Kokkos::HIPSpace> {
  static constexpr MemoryKind value = MemoryKind::rocm;
};
template <>
struct MemoryKindOf<Kokkos::HIPManagedSpace> {
  static constexpr MemoryKind value = MemoryKind::rocm_managed;
};
#endif

template <class MemorySpace>
constexpr MemoryKind memory_kind() {
  return MemoryKindOf<MemorySpace>::value;
}

// A contiguous piece of memory of a known kind.
struct Segment {
  void* data = nullptr;
  std::size_t bytes = 0;
  MemoryKind kind = MemoryKind::host;
};

}  // namespace kodo::detail
