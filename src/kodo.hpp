// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Deprecated: include <kodo/kodo.hpp>. This forwarding header is kept for one release
// (see CHANGELOG.md) and then removed.
#pragma message("kodo: deprecated header: include <kodo/kodo.hpp>")

#include <kodo/kodo.hpp>
