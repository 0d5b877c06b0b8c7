// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Must not compile: what units need of the runtime is private to Runtime.
#include <kodo/kodo.hpp>
void f(kodo::Runtime& runtime) { runtime.post(0, kodo::detail::Message{}); }
