// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/scheduling/detail/trace.hpp>

#include <kodo/core/error.hpp>
#include <kodo/core/settings.hpp>
#include <kodo/tasking/units/detail/registry.hpp>

#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <unordered_map>

namespace kodo::detail {

Trace::Trace() {
  prefix_ = text_setting("KODO_TRACE");
  enabled_ = !prefix_.empty();
}

void Trace::span(std::string name, int track, Clock::time_point begin, Clock::time_point end) {
  if (!enabled_) return;
  const auto us = [this](Clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t - origin_).count();
  };
  spans_.push_back({std::move(name), track, us(begin), us(end) - us(begin)});
}

int Trace::track_of(const void* source) {
  auto [it, inserted] = tracks_.try_emplace(source, static_cast<int>(tracks_.size()) + 1);
  return it->second;
}

namespace {
std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}
}  // namespace

std::string Trace::write(int rank) const {
  if (!enabled_) return "";
  const std::string path = prefix_ + ".rank" + std::to_string(rank) + ".json";
  std::ofstream f(path);
  if (!f) {
    print_error("kodo: warning: cannot write the trace " + path);
    return "";
  }
  // Microseconds with three decimals: the default six significant digits would round
  // every timestamp to 10 us once a run is a second old.
  f << std::fixed << std::setprecision(3);
  f << "{\"traceEvents\":[\n";
  f << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << rank << ",\"args\":{\"name\":\"rank "
    << rank << "\"}},\n";
  f << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << rank
    << ",\"tid\":0,\"args\":{\"name\":\"scheduler\"}}";
  for (const auto& [source, track] : tracks_)
    f << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << rank << ",\"tid\":" << track
      << ",\"args\":{\"name\":\"stream " << track << "\"}}";
  for (const Span& s : spans_)
    f << ",\n{\"name\":\"" << escaped(s.name) << "\",\"ph\":\"X\",\"pid\":" << rank
      << ",\"tid\":" << s.track << ",\"ts\":" << s.begin_us << ",\"dur\":" << s.duration_us << "}";
  f << "\n]}\n";
  return path;
}

const std::string& short_handler_name(std::uint64_t id) {
  // Worked out once per handler: traced runs name every dispatched message.
  thread_local std::unordered_map<std::uint64_t, std::string> known;
  if (const auto it = known.find(id); it != known.end()) return it->second;
  return known[id] = handler_name(id);
}

}  // namespace kodo::detail
