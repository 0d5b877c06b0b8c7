// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/comm/detail/wire.hpp>

#include <kodo/core/error.hpp>

namespace kodo::detail {

std::string to_string(MessageKind kind) {
  switch (kind) {
    case MessageKind::invoke: return "invoke";
    case MessageKind::reduction_partial: return "reduction_partial";
    case MessageKind::reduction_result: return "reduction_result";
    case MessageKind::callback: return "callback";
    case MessageKind::channel_link: return "channel_link";
    case MessageKind::channel_ring: return "channel_ring";
  }
  return cat("unknown kind ", static_cast<std::uint32_t>(kind));
}

std::string check_received_header(const MessageHeader& h, int self, int ranks) {
  const auto kind = static_cast<std::uint32_t>(h.kind);
  if (kind < 1 || kind > 6 || h.kind == MessageKind::callback)
    return h.kind == MessageKind::callback
               ? "field kind is 4 (callback), which is local to a rank and never sent"
               : cat("field kind is ", kind, ", not a message kind (1, 2, 3, 5 or 6)");
  if (h.source_rank < 0 || h.source_rank >= ranks || h.source_rank == self)
    return cat("field source_rank is ", h.source_rank, ", not another rank of the job's ", ranks);
  if ((h.flags & ~kHasAttachments) != 0) return cat("field flags has unknown bits: ", h.flags);
  if ((h.flags & kHasAttachments) && h.kind != MessageKind::invoke)
    return "field flags says views are attached to a message that is not an entry-method call";
  if (h.target < 0)
    return cat("field target is ", h.target, ", negative (a unit index or reduction round)");
  return "";
}

}  // namespace kodo::detail
