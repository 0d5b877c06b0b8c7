#pragma once
// What travels between ranks (and through a rank's own queue): a fixed header and the
// serialized arguments.

#include "serialize.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace kodo::detail {

enum class MessageKind : std::uint32_t {
  invoke = 1,            // run an entry method on one unit
  reduction_partial = 2, // a rank's partial result, travelling up the reduction tree
  reduction_result = 3,  // the final result, travelling down the tree to every rank
  callback = 4,          // a rank-local continuation (a channel transfer has completed)
};

struct MessageHeader {
  MessageKind kind;
  std::uint32_t collection;
  std::uint64_t handler;  // entry method (invoke) or reducer (reductions)
  std::int64_t target;    // unit's linear index (invoke) or reduction round
  std::int32_t source_rank;
  std::uint32_t flags = 0;  // kHasAttachments: arguments in the UCX header, views as data
};
inline constexpr std::uint32_t kHasAttachments = 1;
static_assert(sizeof(MessageHeader) == 32);

// The arguments of an invocation whose unit is on the sending rank, kept as objects:
// nothing is serialized and views are handed over without a copy.
class LocalCall {
 public:
  virtual ~LocalCall() = default;
  virtual void invoke(void* unit) = 0;
};

struct Message {
  MessageHeader header;
  Bytes payload;                        // serialized arguments (messages between ranks)
  std::vector<Attachment> attachments;  // the memory of their views, sent as it is
  std::unique_ptr<LocalCall> local;     // or the arguments themselves (same rank, or
                                        // a remote call whose views have landed)
};

}  // namespace kodo::detail
