# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Installs the kodo build into a scratch prefix, checks the programs it installs run,
# then configures, builds and runs a separate project against it with find_package(kodo),
# and checks that the package refuses a Kokkos of another backend.
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
foreach(internal kodo/tasking/detail/scheduler.hpp kodo/comm/detail/ucx_transport.hpp kodo/backends/detail/native.hpp
                 kodo/comm/detail/channel_end.hpp kodo/tasking/detail/completion_engine.hpp)
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
  if(NOT rc EQUAL 0 OR NOT out MATCHES "^kodo [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit [^)]+\\): backend ")
    message(FATAL_ERROR "installed ${program} --version: exit ${rc}, output:\n${out}${err}")
  endif()
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
run(${launcher} ${WORK}/build/consumer)

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
