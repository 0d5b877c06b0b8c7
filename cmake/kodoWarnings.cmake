# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# kodo_warnings: the one set of warning flags for everything built here (the library,
# tests, examples, apps, benchmarks), linked PRIVATE so that it never reaches an installed
# kodo's users. KODO_WARNINGS_AS_ERRORS adds -Werror: off by default, since a newer
# compiler than ours may warn where we could not look; CI turns it on (.ci/run).
option(KODO_WARNINGS_AS_ERRORS "Treat compiler warnings as errors (CI sets it)" OFF)
add_library(kodo_warnings INTERFACE)
target_compile_options(kodo_warnings INTERFACE -Wall -Wextra
                       $<$<BOOL:${KODO_WARNINGS_AS_ERRORS}>:-Werror>)
