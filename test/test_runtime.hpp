// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
#include <kodo/kodo.hpp>

// The runtime shared by every test of the process.
kodo::Runtime& test_runtime();
