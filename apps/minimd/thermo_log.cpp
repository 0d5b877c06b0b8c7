// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "thermo_log.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace minimd {

void ThermoLog::add_line(const std::string& line) {
  std::istringstream s(line);
  std::int64_t step = 0;
  std::array<double, 3> v{};
  if (s >> step >> v[0] >> v[1] >> v[2]) lines_[step] = v;
}

ThermoLog ThermoLog::read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot open the reference log '" + path + "'");
  ThermoLog log;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("# Timestep", 0) == 0) {
      inside = true;
      continue;
    }
    if (!inside) continue;
    if (line.empty() || line[0] == '#') {
      if (!log.empty()) break;  // the end of the thermo block
      continue;
    }
    log.add_line(line);
  }
  if (log.empty())
    throw std::invalid_argument("the reference log '" + path + "' holds no thermo line");
  return log;
}

int ThermoLog::compare_with(const ThermoLog& reference, std::string& why) const {
  static const char* const names[] = {"T", "U", "P"};
  int compared = 0;
  for (const auto& [step, ours] : lines_) {
    auto it = reference.lines_.find(step);
    if (it == reference.lines_.end()) continue;
    ++compared;
    for (int k = 0; k < 3; ++k) {
      const double ref = it->second[k];
      // One unit of the 7th significant digit of "%e".
      const double digit = ref == 0 ? 1e-6
                                    : std::pow(10.0, std::floor(std::log10(std::fabs(ref))) - 6);
      if (!(std::fabs(ours[k] - ref) <= digit * (1 + 1e-9))) {
        char text[200];
        std::snprintf(text, sizeof text, "step %lld: %s is %e where the reference has %e",
                      static_cast<long long>(step), names[k], ours[k], ref);
        why = text;
        return compared;
      }
    }
  }
  return compared;
}

}  // namespace minimd
