// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Must not compile: kodo.hpp does not declare the backends' raw calls.
#include <kodo/kodo.hpp>
void* f() { return kodo::backend::create_stream(kodo::backend::Priority::compute); }
