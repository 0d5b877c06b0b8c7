# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cmake -DMPIEXEC=PATH -P mpiexec_flags.cmake: prints "flags: [F]", F the flags kodo's
# tests would give the launcher PATH (cmake/kodoMpiexecFlags.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/kodoMpiexecFlags.cmake)
kodo_mpiexec_default_flags("${MPIEXEC}" flags)
message("flags: [${flags}]")
