// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Must not compile: kodo.hpp does not define the scheduler.
#include <kodo/kodo.hpp>
unsigned long f() { return sizeof(kodo::detail::Scheduler); }
