// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The forwarding headers of previous layouts still compile (each with a note), for one
// release: a program written against <kodo.hpp>, one that included a header that held
// only kodo::detail names at a public path, or one that included a tasking header at its
// place before the component folders (0.2), builds unchanged.
#include <kodo.hpp>
#include <kodo/backends/memory.hpp>
#include <kodo/comm/view_pool.hpp>
#include <kodo/comm/wire.hpp>
#include <kodo/core/agree.hpp>
#include <kodo/core/numeric.hpp>
#include <kodo/tasking/awaitable_ring.hpp>
#include <kodo/tasking/balance.hpp>
#include <kodo/tasking/checkpoint.hpp>
#include <kodo/tasking/collection.hpp>
#include <kodo/tasking/collection_base.hpp>
#include <kodo/tasking/decomposition.hpp>
#include <kodo/tasking/entry.hpp>
#include <kodo/tasking/inbox.hpp>
#include <kodo/tasking/kernel_batch.hpp>
#include <kodo/tasking/lb_data.hpp>
#include <kodo/tasking/migration.hpp>
#include <kodo/tasking/neighbours.hpp>
#include <kodo/tasking/reduction_ops.hpp>
#include <kodo/tasking/registry.hpp>
#include <kodo/tasking/runtime.hpp>
#include <kodo/tasking/step_program.hpp>
#include <kodo/tasking/task.hpp>
#include <kodo/tasking/unit_ref.hpp>
#include <kodo/tasking/unit_state.hpp>
#include <kodo/tasking/work_unit.hpp>

int main() {
  kodo::Runtime* runtime = nullptr;  // <kodo/tasking/runtime.hpp>, as 0.2 placed it
  return kodo::Extent3{2, 3, 4}.size() == 24 && runtime == nullptr ? 0 : 1;
}
