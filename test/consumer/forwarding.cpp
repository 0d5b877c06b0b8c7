// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The forwarding headers of previous layouts still compile (each with a note), for one
// release: a program written against <kodo.hpp>, or one that included a header that held
// only kodo::detail names at a public path, builds unchanged.
#include <kodo.hpp>
#include <kodo/backends/memory.hpp>
#include <kodo/comm/view_pool.hpp>
#include <kodo/comm/wire.hpp>
#include <kodo/core/agree.hpp>
#include <kodo/core/numeric.hpp>
#include <kodo/tasking/collection_base.hpp>
#include <kodo/tasking/entry.hpp>
#include <kodo/tasking/registry.hpp>

int main() { return kodo::Extent3{2, 3, 4}.size() == 24 ? 0 : 1; }
