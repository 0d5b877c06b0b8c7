# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Installs the kodo build into a scratch prefix, then configures, builds and runs a
# separate project against it with find_package(kodo).
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
string(REPLACE "|" ";" launcher "${LAUNCHER}")
run(${launcher} ${WORK}/build/consumer)
