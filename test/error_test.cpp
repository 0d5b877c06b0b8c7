// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// kodo::print_error (core/error.hpp): one message, one write; a peer's text quoted in an
// error (detail::quoted_excerpt): escaped and cut.

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

// A name from a peer with a NUL (which would end what()) and an ESC (a terminal's
// control sequence), a quote and a backslash (which would make the quoting ambiguous).
TEST(QuotedExcerpt, APeersBytesAreEscapedAndCut) {
  using kodo::detail::quoted_excerpt;
  EXPECT_EQ(quoted_excerpt(std::string("st\0\x1b[2Jep", 9)), "'st\\x00\\x1b[2Jep'");
  EXPECT_EQ(quoted_excerpt("it's a\\b"), "'it\\x27s a\\x5cb'");
  EXPECT_EQ(quoted_excerpt("\x7f\xff"), "'\\x7f\\xff'");
  EXPECT_EQ(quoted_excerpt(std::string(4096, 'n')),
            "'" + std::string(64, 'n') + "'... (4096 bytes)");
  EXPECT_EQ(quoted_excerpt(""), "''");
  const kodo::Error e(kodo::detail::cat("field ", quoted_excerpt(std::string("a\0b", 3)), " here"));
  EXPECT_STREQ(e.what(), "kodo: field 'a\\x00b' here");
}

}  // namespace
