// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Channel link announcements and same-node ring messages from the peer.

#include "../test_access.hpp"
#include "messages.hpp"

namespace fuzz {

using kodo::detail::TestAccess;

Tally fuzz_links(Context& c) {
  Tally t("links", c.self(), message_refusals());
  while (c.more(t)) {
    Incoming in = valid_link_message(c);
    // A valid announcement or offer may still be refused for what this rank holds
    // (a link announced before, a ring offered twice): either, from the list.
    Expect expect;
    if (const int what = c.pick(0, 2); what == 0)
      expect = spoil_header(c, in);
    else if (what == 1)
      mutate(c, in);
    t.check(expect, [&] {
      if (in.unnamed)
        TestAccess::receive_with(c.runtime, in.header, in.data, ucp_am_recv_param_t{});
      else
        TestAccess::receive(c.runtime, in.header, in.data, in.connection);
    });
  }
  return t;
}

}  // namespace fuzz
