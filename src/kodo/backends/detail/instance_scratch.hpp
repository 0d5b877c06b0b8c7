// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The device memory Kokkos keeps for one execution-space instance: reductions' partial
// results and flags, team scratch, a large functor's copy. Kokkos frees it and allocates
// it again, larger, when later work on the instance needs more. A kernel recorded into a
// graph keeps the addresses it was launched with, so once one of them moves, replaying
// the recording reads freed memory: recorders compare these before and after.

#include <kodo/backends/stream.hpp>

#include <vector>

namespace kodo::backend {

// The instance's scratch addresses, in a fixed order (none on the host backend).
std::vector<const void*> instance_scratch(const ExecutionSpace& space);

}  // namespace kodo::backend
