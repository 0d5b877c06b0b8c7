// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A peer's fault report: the rank it names in its 4-byte header, the connection it came
// by, its protocol and its text. What this rank prints for it (then it ends the job) is
// known exactly for every input: the text made printable, or why it was not believed.

#include "../test_access.hpp"
#include "fuzz.hpp"

namespace fuzz {

using kodo::detail::cat;

Tally fuzz_faults(Context& c) {
  Tally t("faults", c.self(), {});
  constexpr std::size_t kMaxText = 4096;  // bytes of a report's text (ucx_transport.cpp)
  while (c.more(t)) {
    std::int32_t source = c.peer();
    std::vector<std::byte> header(sizeof source);
    bool valid = true;
    switch (c.pick(0, 5)) {
      case 0:
        source = static_cast<std::int32_t>(c.pick(0, 1) ? c.self() : c.edge());
        valid = source == c.peer();
        break;
      case 1: header.resize(static_cast<std::size_t>(c.pick(0, 12))); break;
      default: break;
    }
    if (!header.empty())
      std::memcpy(header.data(), &source, std::min(header.size(), sizeof source));
    const bool sized = header.size() == sizeof source;
    const int named = sized ? source : -1;
    valid = valid && sized;
    const bool rendezvous = c.pick(0, 15) == 0;
    const int connection = c.pick(0, 7) == 0 ? (c.pick(0, 1) ? c.self() : -1) : c.peer();
    std::string text(static_cast<std::size_t>(c.pick(0, 3) == 0 ? c.pick(0, kMaxText + 64)
                                                                : c.pick(0, 120)),
                     ' ');
    for (char& ch : text)
      ch = static_cast<char>(c.pick(0, 3) ? c.pick(0x20, 0x7e) : c.pick(0, 255));

    std::string expected;
    if (!valid || rendezvous || text.size() > kMaxText) {
      expected = "a malformed fault report arrived";
      valid = false;
    } else if (connection < 0) {
      expected =
          "a fault report arrived whose sender is unknown: it does not say which connection it "
          "came by (sent without UCX's reply flag)";
      valid = false;
    } else if (connection != c.peer()) {
      expected = cat("a fault report arrived whose field source_rank says rank ", c.peer(),
                     ", but it came over the connection of rank ", connection);
      valid = false;
    } else {
      expected = text;
      for (char& ch : expected)
        if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) > 0x7e)
          ch = '?';
    }
    expected += cat(" (found by rank ", named, ", which ended the job)");
    t.check_text(expected,
                 kodo::detail::TestAccess::fault_report(c.runtime, header, text, connection,
                                                        rendezvous),
                 valid);
  }
  return t;
}

}  // namespace fuzz
