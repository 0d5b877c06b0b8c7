# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Installs the kodo build into a scratch prefix, checks the programs it installs run,
# then configures, builds and runs a separate project against it with find_package(kodo),
# checks that the package records the backend and Kokkos kodo was built with, and that it
# refuses a Kokkos of another backend.
set(prefix ${WORK}/prefix)
file(REMOVE_RECURSE ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
  message("${out}")
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix})
# Only <kodo/kodo.hpp> and what it includes are installed: kodo's internals are not
# reachable from a user's project by any name (the consumer below builds without them).
foreach(internal kodo/tasking/scheduling/detail/scheduler.hpp kodo/comm/detail/ucx_transport.hpp kodo/backends/detail/native.hpp
                 kodo/comm/detail/channel_end.hpp kodo/tasking/scheduling/detail/completion_engine.hpp)
  if(EXISTS ${prefix}/include/${internal})
    message(FATAL_ERROR "an installed kodo holds the internal header ${internal}")
  endif()
endforeach()
if(NOT EXISTS ${prefix}/include/kodo/kodo.hpp)
  message(FATAL_ERROR "an installed kodo lacks kodo/kodo.hpp")
endif()
if(NOT EXISTS ${prefix}/share/doc/kodo/LICENSE)
  message(FATAL_ERROR "an installed kodo lacks its licence (share/doc/kodo/LICENSE)")
endif()
message("consumer: internal headers are not installed")
string(REPLACE "|" ";" launcher "${LAUNCHER}")

# The programs: the apps in bin/, the benchmarks in libexec/kodo/, MiniMD's input file and
# reference logs in share/kodo/minimd/; each installed program runs (--version).
set(programs bin/jacobi3d bin/minimd)
foreach(bench jacobi_kernel_bench minimd_kernel_bench completion_bench dispatch_bench
              pingpong_bench odf_overhead_bench)
  list(APPEND programs libexec/kodo/${bench})
endforeach()
foreach(file IN LISTS programs ITEMS share/kodo/minimd/in.lj.miniMD share/kodo/minimd/4k.lj)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "an installed kodo lacks ${file}")
  endif()
endforeach()
foreach(program IN LISTS programs)
  execute_process(COMMAND ${launcher} ${prefix}/${program} --version RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES
     "^kodo [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit [^)]+\\): backend ([a-z]+), Kokkos ([0-9.]+),")
    message(FATAL_ERROR "installed ${program} --version: exit ${rc}, output:\n${out}${err}")
  endif()
  set(program_backend ${CMAKE_MATCH_1})  # what the programs were built with
  set(program_kokkos ${CMAKE_MATCH_2})
endforeach()
message("consumer: installed programs run: ${programs}")
run(${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/build -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${WORK}/build/consumer_forwarding)
# kodo's internal folders are not include roots: <core/error.hpp> is not found.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/build --target consumer_internal_names
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0 OR NOT out MATCHES "core/error.hpp")
  message(FATAL_ERROR "an installed kodo let <core/error.hpp> resolve (or failed otherwise):\n${out}")
endif()
message("consumer: <core/error.hpp> is not an include name of an installed kodo")
# The consumer runs and sums its units' indices (0 + 1 + ... + 23).
execute_process(COMMAND ${launcher} ${WORK}/build/consumer RESULT_VARIABLE rc
                OUTPUT_VARIABLE consumer_out ERROR_VARIABLE consumer_out)
if(NOT rc EQUAL 0 OR NOT consumer_out MATCHES "consumer: sum of unit indices = 276")
  message(FATAL_ERROR "failed (${rc}) or no sum of 276: ${WORK}/build/consumer\n${consumer_out}")
endif()
message("${consumer_out}")

# The package tells a project what kodo was built with (kodo_BACKEND, kodo_KOKKOS_VERSION:
# as the installed programs' --version says; kodo_KOKKOS_DIR: the build's Kokkos_DIR), and
# find_package(kodo) says it in one line, but not with QUIET.
file(STRINGS ${BUILD}/CMakeCache.txt kokkos_dir REGEX "^Kokkos_DIR:")
string(REGEX REPLACE "^Kokkos_DIR:[A-Z]*=" "" kokkos_dir "${kokkos_dir}")
file(WRITE ${WORK}/recorded/CMakeLists.txt [=[
cmake_minimum_required(VERSION 3.23)
project(kodo_recorded LANGUAGES CXX)
if(QUIET)
  find_package(kodo REQUIRED QUIET)
else()
  find_package(kodo REQUIRED)
endif()
message("recorded: ${kodo_BACKEND}|${kodo_KOKKOS_VERSION}|${kodo_KOKKOS_DIR}|")
]=])
set(expected "recorded: ${program_backend}|${program_kokkos}|${kokkos_dir}|")
foreach(quiet ON OFF)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK}/recorded -B ${WORK}/recorded/build
                          -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DQUIET=${quiet}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(FIND "${out}" "${expected}" at)
  if(NOT rc EQUAL 0 OR at EQUAL -1)
    message(FATAL_ERROR "find_package(kodo) (QUIET ${quiet}) did not give \"${expected}\" "
                        "(exit ${rc}):\n${out}")
  endif()
  string(REGEX MATCH "Found kodo [^\n]*" said "${out}")
  if(quiet AND said)
    message(FATAL_ERROR "find_package(kodo QUIET) said \"${said}\"")
  endif()
  string(CONCAT line "^Found kodo [0-9.]+ \\(.*\\): backend ${program_backend}, "
                     "built with Kokkos ${program_kokkos} ")
  if(NOT quiet AND NOT said MATCHES "${line}")
    message(FATAL_ERROR "find_package(kodo) did not say what kodo was built with:\n${out}")
  endif()
endforeach()
message("consumer: the package records backend ${program_backend}, Kokkos ${program_kokkos} "
        "(${kokkos_dir}); find_package(kodo) says \"${said}\", and nothing with QUIET")

# A kodo built for another backend than the Kokkos found gives is refused, by a message
# naming both: the installed package, with its record of the backend changed.
file(GLOB_RECURSE config ${prefix}/*/kodoConfig.cmake)
get_filename_component(config_dir "${config}" DIRECTORY)
file(COPY ${config_dir}/ DESTINATION ${WORK}/other_backend/kodo)
file(READ ${WORK}/other_backend/kodo/kodoConfig.cmake text)
string(REGEX MATCH "set\\(kodo_BACKEND ([a-z]+)\\)" recorded "${text}")
set(built ${CMAKE_MATCH_1})
if(NOT built)
  message(FATAL_ERROR "the installed kodoConfig.cmake records no backend:\n${text}")
endif()
if(built STREQUAL "cuda")
  set(other hip)
else()
  set(other cuda)
endif()
string(REPLACE "${recorded}" "set(kodo_BACKEND ${other})" text "${text}")
file(WRITE ${WORK}/other_backend/kodo/kodoConfig.cmake "${text}")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/other_backend/build -G ${GENERATOR}
                        -DCMAKE_PREFIX_PATH=${prefix} -Dkodo_DIR=${WORK}/other_backend/kodo
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(REGEX REPLACE "[ \n]+" " " flat "${out}")  # CMake wraps its messages
if(rc EQUAL 0 OR NOT flat MATCHES "was built for the ${other} backend, but the Kokkos found .* gives the ${built} backend")
  message(FATAL_ERROR "a kodo built for ${other} was not refused with a ${built} Kokkos (exit ${rc}):\n${out}")
endif()
message("consumer: a kodo built for ${other} is refused with a Kokkos of the ${built} backend")
