// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Thermo lines ("step T U P time", miniMD's format), read from a log or printed by this
// run, and compared to the last printed digit.

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace minimd {

class ThermoLog {
 public:
  // Reads the thermo lines of a miniMD log: those after "# Timestep T U P Time" that
  // start with a step and three numbers. Throws std::invalid_argument naming the file
  // when it cannot be read or holds no thermo line.
  static ThermoLog read(const std::string& path);

  void add_line(const std::string& line);  // as printed: "%i %e %e %e %6.3lf"
  bool empty() const { return lines_.empty(); }

  // Compares T, U and P of every step both logs hold: each may differ from the
  // reference's by at most one in the last printed digit (the 7th significant one).
  // Returns the steps compared; `why` names the first difference (empty if none).
  int compare_with(const ThermoLog& reference, std::string& why) const;

 private:
  std::map<std::int64_t, std::array<double, 3>> lines_;
};

}  // namespace minimd
