// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/scheduling/detail/load_timing.hpp>

#include <thread>

namespace kodo::detail {

void DeviceLoads::clear() {
  for (const Call& c : pending_) {
    backend::destroy_event(c.start);
    backend::destroy_event(c.end);
  }
  for (backend::NativeEvent e : free_) backend::destroy_event(e);
  first_ += pending_.size();
  pending_.clear();
  free_.clear();
}

backend::NativeEvent DeviceLoads::take() {
  if (free_.empty()) return backend::create_timing_event();
  backend::NativeEvent e = free_.back();
  free_.pop_back();
  return e;
}

std::size_t DeviceLoads::begin(CollectionBase& collection, std::int64_t slot,
                               backend::NativeStream stream) {
  if (recording_ && recording_->on())
    recording_->stop(
        "units' device times are measured with events (WorkUnit::measure_device_load), which "
        "a recording cannot hold");
  Call c{&collection, slot, take(), take()};
  backend::record_event(stream, c.start);
  pending_.push_back(c);
  return first_ + pending_.size() - 1;
}

void DeviceLoads::end(std::size_t call, backend::NativeStream stream) {
  Call& c = pending_[call - first_];
  backend::record_event(stream, c.end);
  c.ended = true;
}

void DeviceLoads::fold(bool all) {
  while (!pending_.empty()) {
    Call& c = pending_.front();
    if (!c.ended) break;  // a call under way (fold runs between calls: none)
    if (!backend::event_reached(c.end)) {
      if (!all) break;
      std::this_thread::yield();
      continue;
    }
    c.collection->load(c.slot).measured += backend::seconds_between(c.start, c.end);
    free_.push_back(c.start);
    free_.push_back(c.end);
    pending_.pop_front();
    ++first_;
  }
}

}  // namespace kodo::detail
