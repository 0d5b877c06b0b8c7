# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Runs COMMAND ('|'-separated) and passes when it exits non-zero, in time, with output
# containing EXPECT (or, when EXPECT_REGEX is given instead, matching that regex), and
# EXPECT_ALSO when given.
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 60)
message("exit: ${rc}\n${out}${err}")
if(rc STREQUAL "0")
  message(FATAL_ERROR "expected a failure, but the command succeeded")
endif()
if(rc MATCHES "timeout|Process terminated")
  message(FATAL_ERROR "the command hung: ${rc}")
endif()
if(NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the command could not run: ${rc}")
endif()
if(DEFINED EXPECT_REGEX)
  if(NOT "${out}${err}" MATCHES "${EXPECT_REGEX}")
    message(FATAL_ERROR "the output does not match: ${EXPECT_REGEX}")
  endif()
else()
  string(FIND "${out}${err}" "${EXPECT}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the output does not contain: ${EXPECT}")
  endif()
endif()
if(DEFINED EXPECT_ALSO)
  string(FIND "${out}${err}" "${EXPECT_ALSO}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the output does not contain: ${EXPECT_ALSO}")
  endif()
endif()
