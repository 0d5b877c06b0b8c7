// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// A unit's measured load (balance.hpp): the time its entry methods and task resumes take,
// on the host, or on the device where the unit named a stream (measure_device_load in
// work_unit.hpp). For the device, each call is bracketed by two timing events on that
// stream; once both are reached, the seconds between them add to the unit's load: the
// stream's elapsed time from the call's start to the end of the work it enqueued (idle
// gaps and waits included). Two event records per call, only for collections whose loads
// are measured.

#include <kodo/backends/detail/native.hpp>
#include <kodo/backends/detail/recording.hpp>
#include <kodo/core/error.hpp>
#include <kodo/tasking/units/detail/collection_base.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace kodo::detail {

class DeviceLoads {
 public:
  // Timing events cannot be recorded: the first call timed stops `recording` (if any).
  explicit DeviceLoads(Recording* recording = nullptr) : recording_(recording) {}
  ~DeviceLoads() { clear(); }
  DeviceLoads(const DeviceLoads&) = delete;
  DeviceLoads& operator=(const DeviceLoads&) = delete;

  // The start of a call of the unit at `slot` of `collection` on `stream`; end() closes it.
  std::size_t begin(CollectionBase& collection, std::int64_t slot, backend::NativeStream stream);
  void end(std::size_t call, backend::NativeStream stream);
  // Adds the calls whose events were reached to their units' loads, oldest first; with
  // `all`, every call (waits for the streams: only where the job is quiet, as before a
  // balance point or a migration, when the collections' slots may change next).
  void fold(bool all);
  std::size_t pending() const { return pending_.size(); }
  // Destroys every event (before the device goes); what was not folded is lost.
  void clear();

 private:
  struct Call {
    CollectionBase* collection;
    std::int64_t slot;
    backend::NativeEvent start, end;
    bool ended = false;
  };
  backend::NativeEvent take();
  Recording* recording_;
  std::deque<Call> pending_;
  std::size_t first_ = 0;  // the number begin() gave pending_.front()
  std::vector<backend::NativeEvent> free_;
};

// Runs `call` (an entry method or a task resume of the unit at `slot`) and adds the time
// it takes to the unit's measured load, where the collection's loads are measured and the
// unit states none: the device time on the stream it named, else the host time.
template <class F>
void time_for_load(CollectionBase& collection, std::int64_t slot, F&& call) {
  const UnitLoad& load = collection.load(slot);
  if (!collection.measure_loads || load.stated) return call();
  if (load.device_stream && collection.device_loads) {
    DeviceLoads& device = *collection.device_loads;
    const backend::NativeStream stream = load.device_stream;
    const std::size_t started = device.begin(collection, slot, stream);
    struct End {  // also when the call throws
      DeviceLoads& device;
      std::size_t started;
      backend::NativeStream stream;
      ~End() {
        try {
          device.end(started, stream);
        } catch (...) {
          fatal(what_of_current());  // a failed device: the job ends, on every rank
        }
      }
    } end{device, started, stream};
    call();
    return;
  }
  const auto started = std::chrono::steady_clock::now();
  call();  // may end a task; the collection's loads stay where they are
  collection.load(slot).measured +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

}  // namespace kodo::detail
