// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/backends/stream.hpp>

#include <kodo/backends/detail/native.hpp>
#include <kodo/core/error.hpp>

namespace kodo {
namespace {

ExecutionSpace make_instance([[maybe_unused]] backend::NativeStream native) {
#if defined(KOKKOS_ENABLE_CUDA)
  return Kokkos::Cuda(static_cast<cudaStream_t>(native));
#elif defined(KOKKOS_ENABLE_HIP)
  return Kokkos::HIP(static_cast<hipStream_t>(native));
#else
  return ExecutionSpace();  // host: work runs in the launching call
#endif
}

}  // namespace

Stream::Stream(bool communication, std::uint64_t* host_counter, std::uint64_t* device_counter)
    : communication_(communication),
      native_(backend::create_stream(communication ? backend::Priority::communication
                                                   : backend::Priority::compute)),
      event_(nullptr),
      host_counter_(host_counter),
      device_counter_(device_counter) {
  try {
    event_ = backend::create_event();
  } catch (...) {
    backend::destroy_stream(native_);
    throw;
  }
  space_ = make_instance(native_);
}

Stream::~Stream() {
  try {
    space_.fence("kodo::Stream: its work, before it is destroyed");
  } catch (...) {
    // A failed device cannot be waited for; release what can be released.
  }
  space_ = ExecutionSpace();  // drop Kokkos' reference before the stream goes
  backend::destroy_event(event_);
  backend::destroy_stream(native_);
}

std::uint64_t Stream::mark() {
  if (!device_counter_) throw Error("kodo::Stream::mark: this stream has no completion counter");
  backend::enqueue_counter_write(native_, device_counter_, ++issued_);
  return issued_;
}

void Stream::check_health() const { backend::check_stream(native_); }

void Stream::wait_for(const Stream& other) {
  if (&other == this) return;
  // Inside a recording, by the graph's edges: no event recorded and waited for.
  if (recorded_ && other.recorded_ && backend::order_after_recorded(native_, other.native_)) return;
  backend::order_after(native_, other.native_, other.event_);
}

StreamPool::StreamPool(int per_priority) : per_priority_(per_priority) {
  if (per_priority < 1) throw Error("a stream pool needs at least one stream per priority");
  host_counters_ = backend::allocate_counters(2 * per_priority, &device_counters_);
  for (int i = 0; i < per_priority; ++i) {
    compute_.push_back(std::make_unique<Stream>(false, host_counters_ + 2 * i,
                                                device_counters_ + 2 * i));
    communication_.push_back(std::make_unique<Stream>(true, host_counters_ + 2 * i + 1,
                                                      device_counters_ + 2 * i + 1));
  }
}

StreamPool::~StreamPool() {
  compute_.clear();
  communication_.clear();
  backend::free_counters(host_counters_);
}

}  // namespace kodo
