// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Checking the message of a kodo::Error.

#include <kodo/kodo.hpp>

#include <gtest/gtest.h>

#include <string>

// The message of the kodo::Error that `f` throws, or "" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const kodo::Error& e) {
    return e.what();
  }
  return "";
}

// Expects `statement` to throw a kodo::Error whose message contains `text`.
#define EXPECT_ERROR(statement, text)                                              \
  {                                                                                \
    EXPECT_NE(error_of([&] { statement; }).find(text), std::string::npos) << text; \
  }
