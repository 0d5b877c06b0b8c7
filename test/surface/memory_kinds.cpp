// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Must not compile: how the transport tells memory kinds apart is kodo::detail.
#include <kodo/kodo.hpp>
auto kind = kodo::memory_kind<Kokkos::HostSpace>();
