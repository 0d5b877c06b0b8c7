// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The forwarding header of the previous layout still compiles (with a note), for one
// release: a program written against <kodo.hpp> builds unchanged.
#include <kodo.hpp>

int main() { return kodo::Extent3{2, 3, 4}.size() == 24 ? 0 : 1; }
