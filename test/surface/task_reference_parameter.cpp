// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Must not compile: an entry method that is a coroutine takes its parameters by value
// (a reference would outlive the call's arguments, kept only while the call starts).
#include <kodo/kodo.hpp>

#include <vector>

struct Unit : kodo::WorkUnit<Unit> {
  explicit Unit(const kodo::UnitInit<Unit>& init) : WorkUnit(init) {}
  kodo::Task solve(const std::vector<double>& values) { co_return; }
};
void f(kodo::Collection<Unit>& units) {
  units.broadcast_local<&Unit::solve>(std::vector<double>{});
}
