// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// <kodo/version.hpp>: the version macros order versions, and the library says what it
// was built from.

#include "test_runtime.hpp"

#include <kodo/kodo.hpp>

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(Version, TheLibraryIsTheHeadersVersion) {
  EXPECT_STREQ(kodo::version(), KODO_VERSION_STRING);
  EXPECT_EQ(std::string(KODO_VERSION_STRING), std::to_string(KODO_VERSION_MAJOR) + "." +
                                                  std::to_string(KODO_VERSION_MINOR) + "." +
                                                  std::to_string(KODO_VERSION_PATCH));
  EXPECT_EQ(KODO_VERSION,
            KODO_VERSION_MAJOR * 10000 + KODO_VERSION_MINOR * 100 + KODO_VERSION_PATCH);
  // A commit (hexadecimal, maybe "-dirty"), or "unknown" without git history.
  const std::string commit = kodo::commit();
  ASSERT_FALSE(commit.empty());
  if (commit != "unknown") {
    EXPECT_EQ(commit.substr(0, commit.find('-')).find_first_not_of("0123456789abcdef"),
              std::string::npos)
        << commit;
  }
}

TEST(Version, AtLeastOrdersMajorMinorPatch) {
  static_assert(KODO_VERSION_AT_LEAST(KODO_VERSION_MAJOR, KODO_VERSION_MINOR, KODO_VERSION_PATCH));
  static_assert(KODO_VERSION_AT_LEAST(0, 0, 0));
  static_assert(!KODO_VERSION_AT_LEAST(KODO_VERSION_MAJOR + 1, 0, 0));
  static_assert(!KODO_VERSION_AT_LEAST(KODO_VERSION_MAJOR, KODO_VERSION_MINOR + 1, 0));
  static_assert(!KODO_VERSION_AT_LEAST(KODO_VERSION_MAJOR, KODO_VERSION_MINOR,
                                       KODO_VERSION_PATCH + 1));
  SUCCEED();
}

TEST(Version, TheLineNamesEveryPart) {
  const std::string line = test_runtime().version_line();
  EXPECT_EQ(line.rfind(std::string("kodo ") + kodo::version() + " (commit " + kodo::commit() +
                           "): backend " + KODO_BACKEND_NAME + ", Kokkos ",
                       0),
            0u)
      << line;
  for (const char* part : {", UCX ", ", MPI "})
    EXPECT_NE(line.find(part), std::string::npos) << line;
  const int ranks = test_runtime().size();
  EXPECT_NE(line.find(std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks")), std::string::npos)
      << line;
}

}  // namespace
