// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Where the view data of a call goes when it came with the call (eager): UCX's memory
// lasts only for its callback, so host views get their bytes at once and device views
// theirs through pinned memory from the pool and an asynchronous copy on a stream.

#include <kodo/backends/detail/memory.hpp>
#include <kodo/backends/stream.hpp>
#include <kodo/comm/detail/view_pool.hpp>

#include <cstddef>
#include <vector>

namespace kodo::detail {

// Lands `data` (the bytes of `into`'s segments, in order) in `into`. Returns the pinned
// memory the copies into device memory, ordered on `space`, read from: it must be kept
// until they are done. Empty when every segment is host memory: all of it landed.
ViewPool::Staging land_eager_data(ViewPool& pool, const ExecutionSpace& space,
                                  const std::vector<Segment>& into, const std::byte* data);

}  // namespace kodo::detail
