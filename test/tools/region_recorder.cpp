// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A Kokkos Tools library for kodo's tests (loaded through KOKKOS_TOOLS_LIBS): counts the
// regions pushed, by name, and sorts deep copies and fences by whether a profiler could
// tell what they are (a label, or a kodo:: region around them). At the end it writes
// "region NAME COUNT", "copy labelled|in_kodo_region|unnamed COUNT" and
// "fence named|unnamed COUNT" lines to $KODO_TOOL_RECORD.<pid>.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

struct Record {
  std::vector<std::string> open;  // the regions pushed and not yet popped
  std::map<std::string, long> regions, copies, fences;
};
Record& record() {
  static Record r;
  return r;
}

}  // namespace

// The Kokkos Tools interface (C linkage, as Kokkos looks the functions up by name).
struct Kokkos_Profiling_SpaceHandle {
  char name[64];
};

extern "C" {

void kokkosp_init_library(int, std::uint64_t, std::uint32_t, void*) { record(); }

void kokkosp_push_profile_region(const char* name) {
  record().open.emplace_back(name ? name : "");
  ++record().regions[record().open.back()];
}

void kokkosp_pop_profile_region() {
  if (!record().open.empty()) record().open.pop_back();
}

void kokkosp_begin_deep_copy(Kokkos_Profiling_SpaceHandle, const char* to_name, const void*,
                             Kokkos_Profiling_SpaceHandle, const char* from_name, const void*,
                             std::uint64_t) {
  const bool labelled = (to_name && *to_name) || (from_name && *from_name);
  const auto& open = record().open;
  const bool in_kodo = !open.empty() && open.back().rfind("kodo::", 0) == 0;
  ++record().copies[labelled ? "labelled" : in_kodo ? "in_kodo_region" : "unnamed"];
}

void kokkosp_begin_fence(const char* name, std::uint32_t, std::uint64_t* handle) {
  ++record().fences[name && *name ? "named" : "unnamed"];
  if (handle) *handle = 0;
}

void kokkosp_end_fence(std::uint64_t) {}

void kokkosp_finalize_library() {
  const char* prefix = std::getenv("KODO_TOOL_RECORD");
  if (!prefix) return;
  const std::string path = std::string(prefix) + "." + std::to_string(getpid());
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;
  for (const auto& [name, n] : record().regions)
    std::fprintf(f, "region %s %ld\n", name.c_str(), n);
  for (const auto& [kind, n] : record().copies) std::fprintf(f, "copy %s %ld\n", kind.c_str(), n);
  for (const auto& [kind, n] : record().fences) std::fprintf(f, "fence %s %ld\n", kind.c_str(), n);
  std::fclose(f);
}

}  // extern "C"
