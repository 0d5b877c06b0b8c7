// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Must not compile: kodo's collective checks are kodo::detail, not names for programs.
#include <kodo/kodo.hpp>
void f(MPI_Comm comm) { kodo::agree_and_report(comm, ""); }
