// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Units and reducers the component tests share (reduction_tree_test, registry_test,
// scheduler_test): Tallied takes an integer total and a double; Unrelated is another unit
// type with an entry method of the same shape.

#include <kodo/kodo.hpp>
#include <kodo/tasking/scheduling/detail/reductions.hpp>

#include <cstdint>
#include <vector>

namespace component_units {

class Tallied : public kodo::WorkUnit<Tallied> {
 public:
  explicit Tallied(const kodo::UnitInit<Tallied>& init) : WorkUnit(init) {}
  void total(std::int64_t v) { totals.push_back(v); }
  void other(double) {}
  std::vector<std::int64_t> totals;
};
class Unrelated : public kodo::WorkUnit<Unrelated> {
 public:
  explicit Unrelated(const kodo::UnitInit<Unrelated>& init) : WorkUnit(init) {}
  void total(std::int64_t) {}
};
using TallySum = kodo::detail::Reducer<Tallied, std::int64_t, kodo::Sum, &Tallied::total>;
using TallyMax = kodo::detail::Reducer<Tallied, std::int64_t, kodo::Max, &Tallied::total>;
using UnrelatedSum = kodo::detail::Reducer<Unrelated, std::int64_t, kodo::Sum, &Unrelated::total>;

}  // namespace component_units
