// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// kodo's work as regions of the Kokkos Tools interface: profilers loaded through
// KOKKOS_TOOLS_LIBS (nsys's NVTX connector, Caliper, the space-time stack, ...) show the
// scheduler's turns, each entry method, kodo's copies, reductions, checkpoints and step
// programs by name. Without a tool a region costs one test of a flag; names are built
// once (`name` must outlive the region).

#include <Kokkos_Core.hpp>

#include <string>

namespace kodo::detail {

class ToolRegion {
 public:
  explicit ToolRegion(const std::string& name) : on_(Kokkos::Tools::profileLibraryLoaded()) {
    if (on_) Kokkos::Tools::pushRegion(name);
  }
  ~ToolRegion() {
    if (on_) Kokkos::Tools::popRegion();
  }
  ToolRegion(const ToolRegion&) = delete;
  ToolRegion& operator=(const ToolRegion&) = delete;

 private:
  bool on_;
};

}  // namespace kodo::detail
