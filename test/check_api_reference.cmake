# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# CTest api_reference_complete: the API reference builds without a warning, so every
# public name carries a /// comment (docs/Doxyfile.in warns about any other, and a warning
# fails the run), and every public header opens with a /// @file comment (doxygen leaves
# the free functions, variables and macros of an undocumented file unchecked).
#   cmake -DDOXYGEN=... -DDOXYFILE=... "-DHEADERS=a.hpp|b.hpp" -P check_api_reference.cmake
string(REPLACE "|" ";" HEADERS "${HEADERS}")
set(missing)
foreach(header IN LISTS HEADERS)
  file(READ ${header} text)
  if(NOT text MATCHES "\n/// @file\n")
    list(APPEND missing ${header})
  endif()
endforeach()
if(missing)
  list(JOIN missing "\n  " missing)
  message(FATAL_ERROR "check_api_reference: these public headers have no /// @file comment "
                      "saying what they hold:\n  ${missing}")
endif()
execute_process(COMMAND ${DOXYGEN} ${DOXYFILE} RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "check_api_reference: doxygen failed (above: each public name without "
                      "a /// comment, or a comment doxygen cannot read)")
endif()
list(LENGTH HEADERS count)
message(STATUS "check_api_reference: ${count} public headers documented, no doxygen warning")
