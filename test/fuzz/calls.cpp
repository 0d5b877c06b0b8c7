// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Entry-method calls from the peer, by eager active message and by rendezvous.

#include "../test_access.hpp"
#include "messages.hpp"

#include <stdexcept>

namespace fuzz {

using kodo::detail::cat;
using kodo::detail::TestAccess;

namespace {

void must_dispatch(int dispatched) {
  if (dispatched != 1) throw std::logic_error(cat("accepted, but ", dispatched, " calls ran"));
}

// Forgets what the unit a valid call names got last (so that an earlier call with the
// same arguments cannot pass for this one).
void forget_effect(const Incoming& in) {
  if (const auto unit = Fuzzed::held().find(in.target); unit != Fuzzed::held().end())
    unit->second->last.clear();
}

// A valid call must have reached its unit with exactly its arguments.
void must_take_effect(const Incoming& in) {
  if (in.effect.empty()) return;  // a mutated input: what it carries is not known
  const auto unit = Fuzzed::held().find(in.target);
  if (unit == Fuzzed::held().end())
    throw std::logic_error(cat("no unit ", in.target, " on this rank"));
  if (unit->second->last != in.effect)
    throw std::logic_error(cat("unit ", in.target, " got '", unit->second->last, "' where '",
                               in.effect, "' was sent"));
}

}  // namespace

Tally fuzz_calls(Context& c) {
  Tally t("calls", c.self(), message_refusals());
  while (c.more(t)) {
    Incoming in = valid_call(c, c.pick(0, 3) == 0);
    Expect expect = Expect::accept();
    if (const int what = c.pick(0, 3); what == 0)
      expect = spoil_header(c, in);
    else if (what == 1) {
      mutate(c, in);
      in.effect.clear();
      expect = {};
    }
    forget_effect(in);
    t.check(expect, [&] {
      must_dispatch(in.unnamed ? TestAccess::receive_with(c.runtime, in.header, in.data,
                                                          ucp_am_recv_param_t{})
                               : TestAccess::receive(c.runtime, in.header, in.data, in.connection));
      must_take_effect(in);
    });
  }
  return t;
}

// A rendezvous is admitted (or refused) on UCX's announcement, before its data moves:
// the lengths it announces are checked against kodo's bounds and, for views, against
// what the arguments describe.
Tally fuzz_rendezvous(Context& c) {
  Tally t("rendezvous", c.self(), message_refusals());
  while (c.more(t)) {
    Incoming in = valid_call(c, c.pick(0, 1) == 0);
    // (Views of no elements travel as no data: such a call carries none.)
    kodo::detail::MessageHeader h;
    std::memcpy(&h, in.header.data(), sizeof h);
    const bool views = h.flags & kodo::detail::kHasAttachments;
    std::size_t length = in.data.size();
    Expect expect = Expect::accept();
    switch (c.pick(0, 5)) {
      case 0: expect = spoil_header(c, in); break;
      case 1:
        mutate(c, in);
        in.effect.clear();
        length = in.data.size();
        expect = {};
        break;
      case 2:  // a length beyond kodo's bound
        if (views) {
          length = kodo::detail::kMaxViewDataBytes + 1 + (c.word() >> 2);
          expect = Expect::refuse(cat("kodo: it carries ", length,
                                      " bytes of view data, more than kodo's bound of ",
                                      kodo::detail::kMaxViewDataBytes));
        } else {
          length = kodo::detail::kMaxArgumentBytes + 1 + (c.word() >> 2);
          expect = Expect::refuse(cat("kodo: its arguments take ", length,
                                      " bytes, more than kodo's bound of ",
                                      kodo::detail::kMaxArgumentBytes));
        }
        break;
      case 3:  // views: more data than the arguments describe
        if (!views) break;
        length += static_cast<std::size_t>(c.pick(1, 1 << 20));
        expect =
            Expect::refuse(cat("kodo: a call carries ", length,
                               " bytes of view data; its arguments describe ", in.data.size()));
        break;
      default: break;
    }
    // Data lands from the input's bytes when they are the length announced; else the
    // input must be refused before anything lands (or lands on nothing).
    if (length != in.data.size()) in.data.clear();
    forget_effect(in);
    t.check(expect, [&] {
      must_dispatch(TestAccess::receive_rendezvous(c.runtime, in.header, in.data, length,
                                                   in.connection, in.unnamed));
      must_take_effect(in);
    });
  }
  return t;
}

}  // namespace fuzz
