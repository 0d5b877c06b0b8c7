// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Result files of the benchmarks: CSV with the command, machine and commit that made
// them in leading comment lines.

#include <kodo/version.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace perf {

inline double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * (v.size() - 1))];
}

// Writes rows to `path` (and echoes them to stdout). The command line is the program's;
// KODO_MACHINE names the machine; the commit is the one kodo was built from
// (kodo::commit()), unless KODO_COMMIT names another.
class Csv {
 public:
  Csv(const std::string& path, int argc, char** argv, const std::string& columns) {
    std::ostringstream h;
    h << "# command:";
    for (int i = 0; i < argc; ++i) h << ' ' << argv[i];
    const char* machine = std::getenv("KODO_MACHINE");
    const char* commit = std::getenv("KODO_COMMIT");
    h << "\n# machine: " << (machine ? machine : "unspecified")
      << "\n# commit: " << (commit ? commit : kodo::commit()) << "\n# kodo: " << kodo::version()
      << '\n'
      << columns << '\n';
    header_ = h.str();
    if (!path.empty()) {
      file_.open(path);
      if (!file_) throw std::runtime_error("cannot write " + path);
      file_ << header_;
    }
    std::fputs(header_.c_str(), stdout);
  }
  void row(const std::string& line) {
    if (file_.is_open()) file_ << line << "\n" << std::flush;
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }

 private:
  std::string header_;
  std::ofstream file_;
};

}  // namespace perf
