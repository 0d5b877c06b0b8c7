// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Deprecated, removed in 0.4 (CHANGELOG.md): this header held only kodo::detail names,
// kodo's own, which are in <kodo/tasking/units/detail/entry.hpp> now. It holds no public name:
// include <kodo/kodo.hpp>.
#pragma message("kodo: deprecated header: include <kodo/kodo.hpp>")

#include <kodo/tasking/units/detail/entry.hpp>
