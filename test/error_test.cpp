// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// kodo::print_error (core/error.hpp): one message, one write.

#include <kodo/kodo.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace {

// A packet-mode pipe keeps each write apart: one read returns one write.
TEST(PrintError, ALongMessageIsOneWriteEndingInANewline) {
  int ends[2];
  ASSERT_EQ(pipe2(ends, O_DIRECT | O_CLOEXEC), 0);
  const int saved = dup(STDERR_FILENO);
  ASSERT_GE(saved, 0);
  ASSERT_EQ(dup2(ends[1], STDERR_FILENO), STDERR_FILENO);
  const std::string text = "kodo: " + std::string(300, 'x') + " end";
  kodo::print_error(text);
  kodo::print_error(text + "\n");
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(ends[1]);
  char packet[4096];
  for (int i = 0; i < 2; ++i) {
    const ssize_t n = read(ends[0], packet, sizeof packet);
    EXPECT_EQ(std::string(packet, n > 0 ? n : 0), text + "\n");
  }
  EXPECT_EQ(read(ends[0], packet, sizeof packet), 0);
  close(ends[0]);
}

}  // namespace
