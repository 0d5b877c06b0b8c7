// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Eager view data into its views (eager_landing.hpp): host views get their bytes at
// once; device views theirs through pinned memory from the pool and a copy on a stream,
// the memory kept by the caller until the copy is done, then reused.

#include <kodo/comm/detail/eager_landing.hpp>

#include "test_runtime.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace {

using kodo::detail::MemoryKind;
using kodo::detail::Segment;
using kodo::detail::ViewPool;
using Bytes = Kokkos::View<std::byte*, kodo::ExecutionSpace::memory_space>;

// Device memory: the execution space's. On the host backend that is host memory, marked
// as a device's here so that it takes the device path (a host build has no other).
constexpr MemoryKind kDevice =
    kodo::host_build ? MemoryKind::cuda
                     : kodo::detail::MemoryKindOf<kodo::ExecutionSpace::memory_space>::value;

// Views of `sizes` bytes, in host memory or (`device`) the device's, and the data that
// came for them: byte k of view v is (v * 31 + k) % 251.
struct Landing {
  std::vector<Kokkos::View<std::byte*, Kokkos::HostSpace>> host;
  std::vector<Bytes> device;
  std::vector<Segment> into;
  std::vector<std::byte> data;

  Landing(const std::vector<std::size_t>& sizes, const std::vector<bool>& device_view) {
    for (std::size_t v = 0; v < sizes.size(); ++v) {
      void* memory = nullptr;
      if (device_view[v]) {
        device.emplace_back("device view", sizes[v]);
        memory = device.back().data();
      } else {
        host.emplace_back("host view", sizes[v]);
        memory = host.back().data();
      }
      into.push_back({memory, sizes[v], device_view[v] ? kDevice : MemoryKind::host});
      for (std::size_t k = 0; k < sizes[v]; ++k) data.push_back(byte_of(v, k));
    }
  }
  static std::byte byte_of(std::size_t v, std::size_t k) {
    return static_cast<std::byte>((v * 31 + k) % 251);
  }
  // Whether view v holds its bytes (a device view's once its copy is done).
  bool holds(std::size_t v) const {
    const auto* at = static_cast<const std::byte*>(into[v].data);
    std::vector<std::byte> got;
    if (into[v].kind == MemoryKind::host) {
      got.assign(at, at + into[v].bytes);
    } else {  // (a GPU's memory: read through a copy, never by the host)
      Kokkos::View<std::byte*, Kokkos::HostSpace> copy("copy", into[v].bytes);
      Kokkos::deep_copy(copy,
                        Kokkos::View<const std::byte*, Bytes::memory_space,
                                     Kokkos::MemoryTraits<Kokkos::Unmanaged>>(at, into[v].bytes));
      got.assign(copy.data(), copy.data() + into[v].bytes);
    }
    for (std::size_t k = 0; k < got.size(); ++k)
      if (got[k] != byte_of(v, k)) return false;
    return true;
  }
};

TEST(EagerLanding, HostAndDeviceViewsGetTheirBytesInOrder) {
  const kodo::Stream& stream = test_runtime().streams().communication(0);
  ViewPool pool(std::uint64_t{1} << 20);
  Landing l({24, 0, 4096, 7, 300, 1, 0}, {false, true, true, false, true, false, true});
  const ViewPool::Staging staging = land_eager_data(pool, stream.space(), l.into, l.data.data());
  ASSERT_TRUE(staging.is_allocated());
  EXPECT_GE(staging.size(), 4096u + 300u);
  EXPECT_EQ(pool.allocations(), 1u);
  for (const std::size_t v : {0, 3, 5}) EXPECT_TRUE(l.holds(v)) << "host view " << v;
  stream.space().fence();
  for (std::size_t v = 0; v < l.into.size(); ++v) EXPECT_TRUE(l.holds(v)) << "view " << v;
}

TEST(EagerLanding, HostViewsAloneLandAtOnceWithoutPinnedMemory) {
  const kodo::Stream& stream = test_runtime().streams().communication(0);
  ViewPool pool(std::uint64_t{1} << 20);
  // A device view without bytes needs no copy either.
  Landing l({16, 0, 2048}, {false, true, false});
  const ViewPool::Staging staging = land_eager_data(pool, stream.space(), l.into, l.data.data());
  EXPECT_FALSE(staging.is_allocated());
  EXPECT_EQ(pool.allocations(), 0u);
  for (std::size_t v = 0; v < l.into.size(); ++v) EXPECT_TRUE(l.holds(v)) << "view " << v;
}

// The pinned memory serves another landing only once the caller let go of it.
TEST(EagerLanding, PinnedMemoryIsReusedOnlyOnceLetGo) {
  const kodo::Stream& stream = test_runtime().streams().communication(0);
  ViewPool pool(std::uint64_t{1} << 20);
  Landing first({4096}, {true}), second({4096}, {true}), third({4096}, {true});
  ViewPool::Staging kept = land_eager_data(pool, stream.space(), first.into, first.data.data());
  const std::byte* pinned = kept.data();
  ViewPool::Staging other = land_eager_data(pool, stream.space(), second.into, second.data.data());
  EXPECT_NE(other.data(), pinned);
  EXPECT_EQ(pool.allocations(), 2u);
  stream.space().fence();
  EXPECT_TRUE(first.holds(0));
  EXPECT_TRUE(second.holds(0));
  kept = ViewPool::Staging();
  other = land_eager_data(pool, stream.space(), third.into, third.data.data());
  EXPECT_EQ(other.data(), pinned);
  EXPECT_EQ(pool.allocations(), 2u);
  stream.space().fence();
  EXPECT_TRUE(third.holds(0));
}

}  // namespace
