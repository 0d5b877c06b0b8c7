// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Deprecated, removed in 0.4 (CHANGELOG.md): tasking/ was cut into component folders in
// 0.3, and this header <kodo/tasking/step_program.hpp> is now
// <kodo/tasking/programs/step_program.hpp>. Include that, or <kodo/kodo.hpp>.
#pragma message("kodo: deprecated header: include <kodo/tasking/programs/step_program.hpp>")

#include <kodo/tasking/programs/step_program.hpp>
