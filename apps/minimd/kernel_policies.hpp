// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The launch policies minimd's kernels share (kernels.cpp: integration, selection and
// movement between units; neighbor_kernels.cpp: the reneighboring program's own, binning,
// neighbour lists and force).

#include "kernels.hpp"

namespace minimd {

using Range = Kokkos::RangePolicy<Device>;
inline Range over(const Device& space, int n) { return Range(space, 0, n); }
// Up to a count's bound; the kernel skips items at or past the count itself.
inline Range over(const Device& space, const Count& n) { return Range(space, 0, n.bound); }
// For kernels that carry many views: Kokkos passes a functor of over 512 bytes through
// constant memory unless hinted, which a step program's recording cannot replay.
template <class Policy>
auto light(const Policy& policy) {
  return Kokkos::Experimental::require(policy,
                                       Kokkos::Experimental::WorkItemProperty::HintLightWeight);
}

}  // namespace minimd
