// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Streams as Kokkos execution-space instances, each with a completion counter that the
/// stream writes itself, in order, into host memory: the host learns what finished by
/// reading memory, not by querying the device.

#include <Kokkos_Core.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kodo {
namespace detail {
class Recording;
}

/// The Kokkos execution space kodo's streams are instances of (the backend's).
using ExecutionSpace = Kokkos::DefaultExecutionSpace;

/// Whether this kodo runs on the host backend (CPUs, no GPU): the one way kodo, its apps
/// and tests ask which kind of build they are in. KODO_BACKEND_NAME ("host", "cuda" or
/// "hip") is set by kodo's CMake for everything that links kodo.
inline constexpr bool host_build = std::string_view(KODO_BACKEND_NAME) == "host";
static_assert(host_build == std::is_same_v<ExecutionSpace, Kokkos::DefaultHostExecutionSpace>,
              "kodo: the backend kodo was configured for is not Kokkos' default execution space");

/// Something that can mark a point in its work and tell how far its work has got.
/// Streams are the real thing; tests substitute sources they complete by hand.
class CompletionSource {
 public:
  virtual ~CompletionSource() = default;
  /// Marks the work enqueued so far; returns the mark's sequence number (1, 2, ...).
  virtual std::uint64_t mark() = 0;
  /// The highest mark whose work is done.
  virtual std::uint64_t reached() const = 0;
  /// Throws kodo::Error if the work can no longer complete (e.g. a device fault).
  virtual void check_health() const {}
};

/// A stream: a Kokkos execution-space instance whose completion counter it writes
/// itself, in order, into host memory. A rank's StreamPool owns its streams.
class Stream final : public CompletionSource {
 public:
  /// `host_counter`/`device_counter` address one counter in memory both sides can use;
  /// null for a stream that never marks (mark() throws; reached() stays 0), such as one
  /// work is only recorded on.
  Stream(bool communication, std::uint64_t* host_counter, std::uint64_t* device_counter);
  ~Stream() override;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// The Kokkos instance to launch work on.
  const ExecutionSpace& space() const { return space_; }
  /// A stream passes where Kokkos takes its instance, so one handle serves kernels and
  /// awaits: `Kokkos::RangePolicy<kodo::ExecutionSpace>(stream, 0, n)`, then
  /// `co_await kodo::when_done(stream)`.
  operator const ExecutionSpace&() const { return space_; }
  /// A communication stream (the device's greatest priority) or a compute stream (least).
  bool is_communication() const { return communication_; }
  /// The backend's own stream (cudaStream_t, hipStream_t; a token on the host backend),
  /// for handing to native libraries.
  void* native_handle() const { return native_; }

  std::uint64_t mark() override;
  std::uint64_t reached() const override {
    if (!host_counter_) return 0;
    return std::atomic_ref<std::uint64_t>(*host_counter_).load(std::memory_order_acquire);
  }
  void check_health() const override;
  /// Work enqueued on this stream from now on waits (on the device) for the work
  /// enqueued on `other` so far. The host does not wait.
  void wait_for(const Stream& other);

 private:
  friend class detail::Recording;
  bool communication_;
  bool recorded_ = false;  // joined to the rank's open recording (Recording sets it)
  void* native_;
  void* event_;  // carries dependencies of other streams on this one
  ExecutionSpace space_;
  std::uint64_t* host_counter_;
  std::uint64_t* device_counter_;
  std::uint64_t issued_ = 0;
};

/// A rank's streams: `per_priority` compute streams and as many communication streams,
/// their counters in one block of pinned host memory.
class StreamPool {
 public:
  /// Creates `per_priority` streams of each priority (at least one).
  explicit StreamPool(int per_priority);
  ~StreamPool();
  StreamPool(const StreamPool&) = delete;
  StreamPool& operator=(const StreamPool&) = delete;

  /// The number of streams of each priority.
  int per_priority() const { return per_priority_; }
  /// Compute stream `i` (modulo their number).
  Stream& compute(std::size_t i) { return *compute_[i % compute_.size()]; }
  /// Communication stream `i` (modulo their number).
  Stream& communication(std::size_t i) { return *communication_[i % communication_.size()]; }
  /// Calls `f(stream)` for every stream, compute streams first.
  template <class F>
  void for_each(F&& f) {
    for (auto& s : compute_) f(*s);
    for (auto& s : communication_) f(*s);
  }

 private:
  int per_priority_;
  std::uint64_t* host_counters_ = nullptr;
  std::uint64_t* device_counters_ = nullptr;
  std::vector<std::unique_ptr<Stream>> compute_, communication_;
};

}  // namespace kodo
