// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What travels between ranks: a fixed header, the serialized arguments, and the memory
// of the views they carry; and the checks a received header passes before anything is
// allocated or called for it (the layers above check what only they can know: the
// collection, the unit, the handler).

#include <kodo/comm/serialize.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kodo::detail {

enum class MessageKind : std::uint32_t {
  invoke = 1,             // run an entry method on one unit
  reduction_partial = 2,  // a rank's partial result, travelling up the reduction tree
  reduction_result = 3,   // the final result, travelling down the tree to every rank
  callback = 4,           // rank-local only: a continuation (a channel transfer completed)
  channel_link = 5,       // the number a rank gave a channel link it receives on (channel.hpp)
  channel_ring = 6,       // a same-node ring offered by its receiver, or refused by its sender
};

struct MessageHeader {
  MessageKind kind;
  std::uint32_t collection;
  std::uint64_t handler;  // entry method (invoke), reducer (reductions) or link number
  std::int64_t target;    // unit's linear index (invoke, channel_*) or reduction round
  std::int32_t source_rank;
  std::uint32_t flags = 0;  // kHasAttachments: arguments in the UCX header, views as data
};
inline constexpr std::uint32_t kHasAttachments = 1;
static_assert(sizeof(MessageHeader) == 32);

// A call kept as objects rather than bytes: the arguments of an invocation on the same
// rank, a remote call whose views have landed, or a rank-local continuation.
class Call {
 public:
  virtual ~Call() = default;
  virtual void invoke(void* unit) = 0;
};

struct Message {
  MessageHeader header;
  Bytes payload;                        // serialized arguments (messages between ranks)
  std::vector<Attachment> attachments;  // the memory of their views, sent as it is
  std::unique_ptr<Call> local;          // or the call itself (see Call)
  bool from_wire = false;               // arrived from another rank: input to check
};

// Checks a header that arrived over the network: returns "" when every
// field is within its range for a message from another rank of a job of `ranks` ranks
// received by `self`, or a sentence naming the first bad field.
std::string check_received_header(const MessageHeader& header, int self, int ranks);

// "invoke", "reduction_partial", ... or "unknown kind N".
std::string to_string(MessageKind kind);

}  // namespace kodo::detail
