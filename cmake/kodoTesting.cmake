# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# How kodo's tests launch programs, shared by test/ and examples/.

# One OpenMP thread per rank: the tests run up to 4 ranks on small CI machines.
set(KODO_TEST_ENV "OMP_NUM_THREADS=1;OMP_PROC_BIND=false;KOKKOS_DISABLE_WARNINGS=1")
# The launcher's flags follow its MPI (cmake/kodoMpiexecFlags.cmake: --oversubscribe for
# Open MPI, none for MPICH and others); KODO_MPIEXEC_FLAGS (a cache list) sets them
# instead, and so does the environment variable of the same name (space-separated, as
# scripts/lib/env.sh reads it) at the first configuration.
include(kodoMpiexecFlags)
if(NOT DEFINED CACHE{KODO_MPIEXEC_FLAGS})
  if(DEFINED ENV{KODO_MPIEXEC_FLAGS})
    separate_arguments(kodo_flags UNIX_COMMAND "$ENV{KODO_MPIEXEC_FLAGS}")
  else()
    kodo_mpiexec_default_flags("${MPIEXEC_EXECUTABLE}" kodo_flags)
  endif()
  set(KODO_MPIEXEC_FLAGS "${kodo_flags}" CACHE STRING
      "Flags of the tests' MPI launches (a list; default: by the MPI, --oversubscribe for Open MPI)")
  message(STATUS "kodo: test launches: ${MPIEXEC_EXECUTABLE} ${MPIEXEC_PREFLAGS} ${KODO_MPIEXEC_FLAGS}")
endif()
set(KODO_MPIEXEC ${MPIEXEC_EXECUTABLE} ${MPIEXEC_PREFLAGS} ${KODO_MPIEXEC_FLAGS})
# The launcher as one '|'-separated argument, for the CMake scripts that run commands.
list(JOIN KODO_MPIEXEC "|" KODO_LAUNCHER)

# kodo_test_output(NAME RANKS PROGRAM [ARGS...] ONCE TEXT... [NEVER TEXT...]): runs
# PROGRAM (a target) with ARGS on RANKS ranks; passes when it exits 0 on every rank,
# its output holds each ONCE text exactly once and no NEVER text (texts without '|').
function(kodo_test_output name ranks program)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "" "ONCE;NEVER")
  list(JOIN arg_UNPARSED_ARGUMENTS "|" args)
  list(JOIN arg_ONCE "|" once)
  list(JOIN arg_NEVER "|" never)
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND}
    "-DCOMMAND=${KODO_LAUNCHER}|${MPIEXEC_NUMPROC_FLAG}|${ranks}|$<TARGET_FILE:${program}>|${args}"
    "-DONCE=${once}" "-DNEVER=${never}" -P ${PROJECT_SOURCE_DIR}/test/check_output.cmake)
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${KODO_TEST_ENV}" TIMEOUT 120
    PROCESSORS ${ranks})
endfunction()

# kodo_add_ranks_test(NAME RANKS PROGRAM [ARGS...] [TIMEOUT S] [PASS REGEX]
#                     [ENV VAR=VALUE...]): runs PROGRAM (a target) with ARGS on RANKS
# ranks, with KODO_TEST_ENV and ENV, for at most S seconds (default 180); passes when it
# exits 0 on every rank or, with PASS, when its output matches REGEX (CTest then ignores the
# exit status: a job that must end with an error passes by its message).
function(kodo_add_ranks_test name ranks program)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "TIMEOUT;PASS" "ENV")
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 180)
  endif()
  add_test(NAME ${name} COMMAND ${KODO_MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} ${ranks}
                                $<TARGET_FILE:${program}> ${arg_UNPARSED_ARGUMENTS})
  set(environment ${KODO_TEST_ENV} ${arg_ENV})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${environment}" TIMEOUT ${arg_TIMEOUT}
    PROCESSORS ${ranks})
  if(DEFINED arg_PASS)
    set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${arg_PASS}")
  endif()
endfunction()
