// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Memory the runtime hands to the transport for transfers of its own (a migration's
// views), kept until the transport has shut down.
//
// Why it is never freed earlier: a peer's UCX maps device memory it reached through
// CUDA IPC and keeps that mapping in its cache after the transfer. If this rank freed
// the memory and later exported a same-node ring buffer at the same place, the peer's
// own import of that ring (node_channels.cpp) would fail ("resource already mapped")
// and the ring would fall back to UCX. So the runtime sends and receives through this
// buffer instead of exposing memory that is freed afterwards (units that moved, a
// migration's arrival buffer); between ranks of one node it offers this buffer for peers
// to copy into directly, and they map it once (node_view_route.hpp). Growing keeps the smaller
// buffers too: each new buffer is at least twice the one before, so what is held stays below four
// times the largest request.

#include <kodo/backends/stream.hpp>
#include <kodo/core/settings.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kodo::detail {

class TransportStaging {
 public:
  // Built after the ranks agreed on their settings (Runtime), so every rank reads the
  // same piece size, once.
  TransportStaging()
      : piece_bytes_(bytes_setting("KODO_MIGRATION_PIECE_BYTES", kDefaultPieceBytes)) {}
  // The most a migration sends in one piece (KODO_MIGRATION_PIECE_BYTES); a sender's
  // pieces are its receiver's.
  std::uint64_t piece_bytes() const { return piece_bytes_; }
  // At least `bytes` bytes in ExecutionSpace's memory, or in pinned host memory (`host`:
  // where UCX does not move device memory): the same buffer for as long as it is large
  // enough.
  std::byte* at_least(std::size_t bytes, bool host = false) {
    return host ? host_.at_least(bytes) : device_.at_least(bytes);
  }
  std::uint64_t held_bytes() const { return device_.held + host_.held; }
  std::uint64_t allocations() const { return device_.allocations + host_.allocations; }
  // Only once the transport has shut down (no peer reaches this memory any more).
  void clear() {
    device_ = {};
    host_ = {};
    peer_slots.clear();
    slots_refused.clear();
  }

  // Peers' staging this rank mapped (a migration's same-node route, node_view_route.hpp):
  // where and how large, by peer and handle. Mapped once, until the node's imports are
  // released at shutdown: the peer keeps that memory as long.
  std::map<std::pair<int, std::array<std::byte, 64>>, std::pair<std::byte*, std::size_t>>
      peer_slots;
  // Why this memory cannot be offered to peers (not exportable), once found; empty until
  // then. The route is not tried again: the memory would be refused again.
  std::string slots_refused;

 private:
  template <class Memory>
  struct Kept {
    using Buffer = Kokkos::View<std::byte*, Memory>;
    Buffer current;
    std::vector<Buffer> kept;
    std::uint64_t held = 0, allocations = 0;
    std::byte* at_least(std::size_t bytes) {
      if (current.size() < bytes) {
        const std::size_t size = std::max(bytes, 2 * current.size());
        if (current.size() > 0) kept.push_back(current);
        current = Buffer(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kodo::transport_staging"),
                         size);
        held += size;
        ++allocations;
      }
      return current.data();
    }
  };
  static constexpr std::uint64_t kDefaultPieceBytes = std::uint64_t{32} << 20;
  std::uint64_t piece_bytes_;
  Kept<ExecutionSpace::memory_space> device_;
  Kept<Kokkos::SharedHostPinnedSpace> host_;
};

}  // namespace kodo::detail
