// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// kodo's folder names are not top-level include names of an installed kodo: this must
// not compile (install_and_consume.cmake builds it and expects the failure).
#include <core/error.hpp>

int main() { return 0; }
