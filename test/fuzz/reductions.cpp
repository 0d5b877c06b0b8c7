// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Reduction partials and results from the peer. With 2 ranks, rank 0 is the root of
// every reduction tree and rank 1 its only child: rank 0 takes a partial for each round
// once (within kodo's window of rounds) and no result; rank 1 takes no partial, and no
// result of a round it did not pass up (its units contribute to none here).

#include <kodo/tasking/scheduling/detail/reductions.hpp>

#include "../test_access.hpp"
#include "messages.hpp"

#include <set>
#include <utility>

namespace fuzz {

using kodo::detail::cat;
using kodo::detail::MessageHeader;
using kodo::detail::MessageKind;
using kodo::detail::TestAccess;

Tally fuzz_reductions(Context& c) {
  Tally t("reductions", c.self(), message_refusals());
  std::set<std::pair<std::uint32_t, std::int64_t>> taken;  // (collection, round) with a partial
  std::vector<std::int64_t> fresh_taken;                   // collection 0's, in order
  std::int64_t next_round = 0;
  while (c.more(t)) {
    Incoming in = valid_reduction(c);
    MessageHeader h;
    std::memcpy(&h, in.header.data(), sizeof h);
    const bool partial = h.kind == MessageKind::reduction_partial;
    Expect expect;
    const int what = c.pick(0, 3);
    if (what == 0) {
      expect = spoil_header(c, in);
    } else if (what == 1) {
      mutate(c, in);
    } else {
      std::int64_t round = 0;
      bool repeat = what == 2 && !fresh_taken.empty();
      if (repeat) {
        round =
            fresh_taken[static_cast<std::size_t>(c.pick(0,
                                                        static_cast<int>(fresh_taken.size()) - 1))];
      } else if (c.pick(0, 7) == 0) {  // far ahead: beyond kodo's window of rounds
        round = static_cast<std::int64_t>(kodo::detail::kMaxRoundsAhead) + c.pick(0, 1 << 20);
      } else {
        while (taken.count({0u, next_round})) ++next_round;
        round = next_round;
      }
      put(in.header, offsetof(MessageHeader, target), round);
      if (c.self() == 1) {
        expect = Expect::refuse(
            partial ? "kodo: field source_rank of a reduction partial is 0, not a child of rank 1 "
                      "in the reduction tree of collection 0"
                    : cat("kodo: field target names reduction round ", round,
                          " of collection 0, whose result this rank does not await"));
      } else if (!partial) {
        expect = Expect::refuse(
            "kodo: field source_rank of a reduction result is 1, not the parent of rank 0 in the "
            "reduction tree of collection 0");
      } else if (repeat) {
        expect = Expect::refuse(cat("kodo: rank 1 sent a second partial for reduction round ",
                                    round, " of collection 0"));
      } else if (round >= static_cast<std::int64_t>(kodo::detail::kMaxRoundsAhead)) {
        expect =
            Expect::refuse(cat("kodo: reduction round ", round, " of collection 0 is ", round,
                               " rounds ahead of round 0, the oldest rank 0 has not "
                               "delivered; kodo holds at most ",
                               kodo::detail::kMaxRoundsAhead, " rounds of a collection at once"));
      } else {
        expect = Expect::accept();
      }
    }
    bool accepted = false;
    t.check(expect, [&] {
      if (in.unnamed)
        TestAccess::receive_with(c.runtime, in.header, in.data, ucp_am_recv_param_t{});
      else
        TestAccess::receive(c.runtime, in.header, in.data, in.connection);
      accepted = true;
    });
    // A partial taken opens its round: what a later input for that round must get.
    if (!in.header.empty()) std::memcpy(&h, in.header.data(), std::min(in.header.size(), sizeof h));
    if (accepted && in.header.size() >= sizeof h && h.kind == MessageKind::reduction_partial) {
      taken.insert({h.collection, h.target});
      if (h.collection == 0 && h.handler == SumReducer::id) fresh_taken.push_back(h.target);
    }
  }
  return t;
}

}  // namespace fuzz
