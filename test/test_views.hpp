// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Views with known contents, for the channel tests.

#include <kodo/kodo.hpp>

#include <cstdint>
#include <vector>

// n values first, first + 1, ... in the default memory space, complete on return.
inline Kokkos::View<double*> filled(std::int64_t n, double first) {
  Kokkos::View<double*> v(Kokkos::view_alloc(Kokkos::WithoutInitializing, "payload"), n);
  Kokkos::parallel_for(
      "fill", Kokkos::RangePolicy<>(0, n), KOKKOS_LAMBDA(std::int64_t i) { v(i) = first + i; });
  Kokkos::fence();
  return v;
}

inline std::vector<double> on_host(const Kokkos::View<double*>& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  return std::vector<double>(h.data(), h.data() + h.size());
}
