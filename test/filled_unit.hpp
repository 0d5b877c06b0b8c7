// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// A unit with a view of values its index gives, which travels apart from its records when
// it moves: what the test programs that move units check arrived whole.

#include <kodo/kodo.hpp>

class FilledUnit : public kodo::WorkUnit<FilledUnit> {
 public:
  explicit FilledUnit(const kodo::UnitInit<FilledUnit>& init) : WorkUnit(init) {
    Kokkos::deep_copy(values_, value());
  }
  // Whether every value is the one its index gives (after a move: arrived whole).
  bool whole() const {
    for (std::size_t i = 0; i < values_.extent(0); ++i)
      if (values_(i) != value()) return false;
    return true;
  }
  template <class State>
  void state(State& s) {
    s("values", values_);
  }

 private:
  double value() const { return static_cast<double>(index().x + 1); }
  Kokkos::View<double*, Kokkos::HostSpace> values_{"values", 1000};
};
