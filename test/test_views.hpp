// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Views with known contents, for the channel tests; slow writes and checked reads, for
// the tests of orders between streams.

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

// v(0) = value on `space`, after a while on the device: a read not ordered after the write
// sees the value before it.
template <class View>
void write_slowly(const kodo::ExecutionSpace& space, const View& v, std::int64_t value) {
  Kokkos::parallel_for(
      "test::write slowly", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, 1),
      KOKKOS_LAMBDA(int) {
        std::int64_t x = 1;
        for (int k = 0; k < 20000; ++k) x = (x * 3 + value) % 1000003;
        v(0) = value + (x < 0 ? 1 : 0);
      });
}

// wrong(0) += 1 on `space` if v(0) is not `expected` there.
template <class View>
void count_if_not(const kodo::ExecutionSpace& space, const View& v, std::int64_t expected,
                  const View& wrong) {
  Kokkos::parallel_for(
      "test::read", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, 1), KOKKOS_LAMBDA(int) {
        if (v(0) != expected) wrong(0) += 1;
      });
}
