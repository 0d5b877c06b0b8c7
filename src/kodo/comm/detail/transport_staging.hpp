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
// migration's arrival buffer). Growing keeps the smaller buffers too: each new buffer is
// at least twice the one before, so what is held stays below four times the largest
// request.

#include <kodo/backends/stream.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kodo::detail {

class TransportStaging {
 public:
  using Buffer = Kokkos::View<std::byte*, ExecutionSpace::memory_space>;

  // At least `bytes` bytes in ExecutionSpace's memory: the same buffer for as long as
  // it is large enough.
  std::byte* at_least(std::size_t bytes) {
    if (current_.size() < bytes) {
      if (current_.size() > 0) kept_.push_back(current_);
      current_ = Buffer(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kodo::transport_staging"),
                        std::max(bytes, 2 * current_.size()));
      held_ += current_.size();
      ++allocations_;
    }
    return current_.data();
  }
  std::uint64_t held_bytes() const { return held_; }
  std::uint64_t allocations() const { return allocations_; }
  // Only once the transport has shut down (no peer reaches this memory any more).
  void clear() {
    current_ = Buffer();
    kept_.clear();
    held_ = 0;
  }

 private:
  Buffer current_;
  std::vector<Buffer> kept_;
  std::uint64_t held_ = 0, allocations_ = 0;
};

}  // namespace kodo::detail
