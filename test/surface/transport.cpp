// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Must not compile: kodo.hpp does not include UCX or define the transport.
#include <kodo/kodo.hpp>
unsigned f(kodo::detail::UcxTransport& t) { return t.progress(); }
