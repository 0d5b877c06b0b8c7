// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What comm/serialize.hpp's serializers and the receiving runtime use of the byte
// streams: counts read and checked, and the views' data a message carries beside its
// bytes (WireAccess: the runtime and the transport). Installed: the serializers are
// templates instantiated in the user's program.

#include <kodo/comm/serialize.hpp>
#include <kodo/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace kodo::detail {

inline std::uint64_t read_count(ByteReader& r, std::size_t min_bytes, const char* what) {
  const auto n = kodo::unpack<std::uint64_t>(r);
  if (n > r.remaining() / (min_bytes ? min_bytes : 1))
    throw Error(cat("a ", what, " argument claims ", n, " elements but only ", r.remaining(),
                    " bytes of arguments remain"));
  return n;
}

// What the runtime and the transport use of the writer's and reader's view plumbing.
struct WireAccess {
  static Bytes take_bytes(ByteWriter& w) { return std::move(w.bytes_); }
  static std::vector<Attachment> take_attachments(ByteWriter& w) {
    return std::move(w.attachments_);
  }
  // Makes `r` take the views it unpacks from `pool` (allocate them, without one) and
  // list their memory in `destinations`; together they must take exactly `view_data`
  // bytes (the data that arrived with the message).
  static void expect_views(ByteReader& r, std::vector<detail::Segment>& destinations,
                           std::uint64_t view_data, ViewPool* pool = nullptr) {
    r.carries_views_ = true;
    r.destinations_ = &destinations;
    r.pool_ = pool;
    r.view_data_left_ = view_data;
  }
  // Makes `r` check the views it unpacks against `view_data` bytes without making any:
  // what it returns for a view holds no memory.
  static void check_views(ByteReader& r, std::uint64_t view_data) {
    r.carries_views_ = true;
    r.checking_ = true;
    r.view_data_left_ = view_data;
  }
  static std::uint64_t view_data_left(const ByteReader& r) { return r.view_data_left_; }
};

}  // namespace kodo::detail
