// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Must not compile: no UCX type reaches a program that includes kodo.hpp.
#include <kodo/kodo.hpp>
ucp_worker_h worker = nullptr;
