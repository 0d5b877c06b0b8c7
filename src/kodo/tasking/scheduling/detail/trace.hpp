// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// An optional per-rank trace of the scheduler's work and the device work it waited
// for, in Chrome trace JSON (open it in Perfetto or chrome://tracing): one track for
// the scheduler (each dispatched message or continuation) and one per stream (from
// the moment work was marked to the moment its completion was seen). Enabled by
// KODO_TRACE=PREFIX; rank R writes PREFIX.rank<R>.json when the runtime ends.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kodo::detail {

class Trace {
 public:
  using Clock = std::chrono::steady_clock;

  Trace();  // reads KODO_TRACE
  bool enabled() const { return enabled_; }
  // A span on track `track` (0: the scheduler; a stream otherwise, see track_of).
  void span(std::string name, int track, Clock::time_point begin, Clock::time_point end);
  // The track of a completion source (stream), numbered on first use.
  int track_of(const void* source);
  // Writes the file (if enabled) for `rank`; returns its path or "".
  std::string write(int rank) const;

 private:
  struct Span {
    std::string name;
    int track;
    double begin_us, duration_us;
  };
  bool enabled_ = false;
  std::string prefix_;
  Clock::time_point origin_ = Clock::now();
  std::vector<Span> spans_;
  std::map<const void*, int> tracks_;
};

// A short name for a registered handler (its entry method), for traces.
const std::string& short_handler_name(std::uint64_t id);

}  // namespace kodo::detail
