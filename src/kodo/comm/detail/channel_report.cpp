// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The stall report's lines on channel transfers that wait (channel_end.hpp), and the
// tagged messages that no transfer will ever take.
#include <kodo/comm/detail/channel_end.hpp>

#include <algorithm>

namespace kodo::detail {

std::string describe_waiting_transfers(const ChannelRegistry& registry) {
  std::ostringstream os;
  for (const ChannelEnd* e : registry.open) {
    for (const auto& [request, what] : e->in_flight)
      os << "\n  " << e->describe(false) << ": receive of transfer " << what.first << " (up to "
         << what.second << " bytes) posted, no message has arrived for it";
    if (!e->local())
      if (const auto waiting = e->host->transport().probe(e->recv_base, ~kTransferMask))
        os << "\n  " << e->describe(false) << ": transfer " << (waiting->first & kTransferMask)
           << " (" << waiting->second
           << " bytes) arrived, the receiving unit has posted no receive for it";
    for (const auto& r : e->posted)
      os << "\n  " << e->describe(false) << ": receive of transfer " << r.transfer << " (up to "
         << r.segment.bytes << " bytes) posted, the sending unit has not sent it";
    for (const auto& t : e->arrived)
      os << "\n  " << e->describe(false) << ": transfer " << t.transfer << " (" << t.segment.bytes
         << " bytes) sent, the receiving unit has posted no receive for it";
    for (const auto& t : e->unnumbered)
      if (e->local())
        os << "\n  " << e->describe(true) << ": transfer " << t.transfer << " (" << t.segment.bytes
           << " bytes) sent, the receiving unit has not opened its end";
    if (e->node_in)
      for (const auto& r : e->node_in->awaiting)
        os << "\n  " << e->describe(false) << ": receive of transfer " << r.transfer << " (up to "
           << r.segment.bytes << " bytes) posted in a same-node ring, rank " << e->link.peer_rank
           << " has not published it";
    if (e->node_out)
      for (const auto& t : e->node_out->held)
        os << "\n  " << e->describe(true) << ": transfer " << t.transfer << " (" << t.segment.bytes
           << " bytes) held: its buffer in the receiving unit's same-node ring "
           << "is not released yet";
    for (const auto& [transfer, bytes] : e->sending) {
      if (e->node_out && std::any_of(e->node_out->held.begin(), e->node_out->held.end(),
                                     [t = transfer](const auto& h) { return h.transfer == t; }))
        continue;
      os << "\n  " << e->describe(true) << ": transfer " << transfer << " (" << bytes << " bytes) "
         << (!e->send_base                     ? "waiting for the receiving unit to open its end"
             : e->send_route == Route::pending ? "waiting for the receiving unit to open a ring "
                                                 "or post a receive"
                                               : "in flight, not yet received");
    }
    if (!e->local() && e->sends != 0 && e->sending.empty())
      os << "\n  " << e->describe(true) << ": transfers 0 to " << e->sends - 1
         << " sent; any the receiving unit has not posted receives for wait on its rank";
  }
  return os.str();
}

void drop_stray_messages(ChannelRegistry& registry, UcxTransport& transport,
                         const std::unordered_set<std::uint32_t>& also_kept) {
  while (const auto oldest = transport.probe(0, 0)) {
    const auto [tag, bytes] = *oldest;
    const auto number = static_cast<std::uint32_t>(tag >> kNumberBits);
    if (registry.numbers_in_use.contains(number) || also_kept.contains(number)) return;
    // UCX's tagged messages do not say who sent them: the error cannot name a rank. The
    // message refused is dropped too (into scratch), so a caller that goes on (a
    // migration's exchange) can look at the ones behind it.
    const auto refuse = [&](const auto&... why) {
      transport.drop_tagged(tag, bytes);
      throw Error(cat("a tagged message (tag ", std::hex, tag, std::dec, ", ", bytes,
                      " bytes) arrived on a number no channel link of this rank has", why...,
                      ": a rank sends on link numbers it was not given (UCX does not say which)"));
    };
    if (bytes > kMostStrayBytes) refuse(", more than the ", kMostStrayBytes, " bytes one may have");
    if (++registry.stray_messages > kMostStrayMessages)
      refuse(", the ", registry.stray_messages, "th such message (at most ", kMostStrayMessages,
             " are dropped)");
    // A receive of its exact tag takes it (and only it: no link has the number).
    auto scratch = std::make_shared<std::vector<std::byte>>(std::max<std::size_t>(bytes, 1));
    transport.tag_recv(tag, {scratch->data(), bytes, MemoryKind::host},
                       [scratch](ucs_status_t, std::size_t) {});
  }
}

}  // namespace kodo::detail
