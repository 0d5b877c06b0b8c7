// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Deprecated, removed in 0.4 (CHANGELOG.md): tasking/ was cut into component folders in
// 0.3, and this header <kodo/tasking/migration.hpp> is now
// <kodo/tasking/migration/migration.hpp>. Include that, or <kodo/kodo.hpp>.
#pragma message("kodo: deprecated header: include <kodo/tasking/migration/migration.hpp>")

#include <kodo/tasking/migration/migration.hpp>
