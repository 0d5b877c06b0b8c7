// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The handler registry (tasking/units/detail/registry.hpp): a handler serves only its kind and unit
// type, and every rank computes the same fingerprint.

#include <kodo/tasking/units/detail/registry.hpp>

#include "component_units.hpp"

#include <gtest/gtest.h>

#include <string>
#include <typeinfo>

namespace {

using component_units::Tallied;
using component_units::Unrelated;

TEST(Registry, HandlersServeOnlyTheirKindAndUnitType) {
  std::string problem;
  const auto entry = kodo::detail::Entry<Tallied, &Tallied::other>::id;
  EXPECT_NE(kodo::detail::find_handler(entry, kodo::detail::HandlerKind::entry, typeid(Tallied),
                                       problem),
            nullptr);
  EXPECT_EQ(kodo::detail::find_handler(entry, kodo::detail::HandlerKind::entry, typeid(Unrelated),
                                       problem),
            nullptr);
  EXPECT_NE(problem.find("another unit type"), std::string::npos) << problem;
  EXPECT_EQ(kodo::detail::find_handler(entry, kodo::detail::HandlerKind::reducer, typeid(Tallied),
                                       problem),
            nullptr);
  EXPECT_EQ(kodo::detail::find_handler(12345, kodo::detail::HandlerKind::entry, typeid(Tallied),
                                       problem),
            nullptr);
  EXPECT_NE(problem.find("names no entry method"), std::string::npos) << problem;
  EXPECT_EQ(kodo::detail::handler_fingerprint(), kodo::detail::handler_fingerprint());
}

}  // namespace
