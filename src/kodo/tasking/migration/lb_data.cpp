// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/migration/lb_data.hpp>

#include <kodo/core/detail/agree.hpp>
#include <kodo/tasking/scheduling/detail/watchdog.hpp>
#include <kodo/tasking/units/detail/collection_base.hpp>
#include <kodo/tasking/units/detail/state_records.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kodo {
namespace {
// A JSON number for a load: always with a fraction (the schema takes floats only).
std::string json_float(double v) {
  if (!std::isfinite(v)) throw Error(detail::cat("LB data: a load of ", v, " is not a number"));
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  std::string s = text;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}
}  // namespace

LbData::LbData(Runtime& runtime, std::string dir) : runtime_(runtime), dir_(std::move(dir)) {
  const detail::WatchdogPhase watching(detail::RuntimeAccess::watchdog(runtime),
                                       "opening LB data (kodo::LbData)");
  std::string problem;
  if (runtime.rank() == 0) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) problem = detail::cat("cannot create the LB data directory ", dir_, ": ", ec.message());
  }
  detail::agree_and_report(runtime.comm(), problem);
}

void LbData::add_phase(std::uint32_t collection, const Extent3& shape,
                       const BalanceReport& report) {
  const BalanceInput& in = report.input;
  const detail::UnitMap homes(shape.size(), in.ranks);  // where units were created
  std::ostringstream os;
  os << "{\"id\":" << phases_ << ",\"tasks\":[";
  bool first = true;
  for (std::size_t l = 0; l < in.owners.size(); ++l) {
    if (in.owners[l] != runtime_.rank()) continue;
    const Index3 i = shape.delinear(static_cast<std::int64_t>(l));
    os << (first ? "" : ",") << "{\"entity\":{\"type\":\"object\",\"seq_id\":" << l
       << ",\"home\":" << homes.owner(static_cast<std::int64_t>(l))
       << ",\"migratable\":true,\"collection_id\":" << collection << ",\"index\":[" << i.x << ","
       << i.y << "," << i.z << "]},\"node\":" << runtime_.rank()
       << ",\"resource\":\"cpu\",\"time\":" << json_float(in.loads[l]) << "}";
    first = false;
  }
  os << "],\"user_defined\":{\"applied\":" << (report.applied ? "true" : "false")
     << ",\"imbalance_before\":" << json_float(report.before)
     << ",\"imbalance_after\":" << json_float(report.after) << ",\"moved\":" << report.moved
     << "}}";
  phases_json_ += (phases_ == 0 ? "" : ",") + os.str();
  ++phases_;
}

void LbData::write() {
  const detail::WatchdogPhase watching(detail::RuntimeAccess::watchdog(runtime_),
                                       "writing LB data (kodo::LbData::write)");
  std::string problem;
  const std::string path = detail::cat(dir_, "/data.", runtime_.rank(), ".json");
  {
    std::ofstream file(path, std::ios::trunc);
    file << "{\"type\":\"LBDatafile\",\"metadata\":{\"type\":\"LBDatafile\",\"rank\":"
         << runtime_.rank() << "},\"phases\":[" << phases_json_ << "]}\n";
    file.close();
    if (!file) problem = detail::cat("cannot write LB data file ", path);
  }
  detail::agree_and_report(runtime_.comm(), problem);
}

}  // namespace kodo
