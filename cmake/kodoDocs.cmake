# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The API reference: doxygen over the public headers (kodo's HEADERS file set, the
# installed ones, with the generated <kodo/version.hpp>), kodo::detail and the detail/
# folders left out (docs/Doxyfile.in), with README.md and the guides as pages. Target
# `docs` writes it to docs/api/html in the build directory; CTest api_reference_complete
# (test/check_api_reference.cmake) runs the same and fails on any public name without a
# /// comment; CTest public_names_are_listed (test/check_public_names.py) runs it for XML
# and compares the names with docs/public_names.txt, which the front page quotes
# (EXAMPLE_PATH). Without doxygen (or awk, which runs the filter kodoDocsFilter.awk) none
# of them exists.
find_program(KODO_DOXYGEN doxygen)
find_program(KODO_AWK NAMES awk gawk mawk)
if(NOT KODO_DOXYGEN OR NOT KODO_AWK)
  message(STATUS "kodo: doxygen or awk not found: no `docs` target, and CTests api_reference_complete and public_names_are_listed are not registered")
  return()
endif()

# A forwarding header declares nothing and is left out: it says "kodo: deprecated header"
# in a #pragma message (kodo.hpp beside kodo/; the old paths of headers that held only
# kodo::detail names; the tasking headers' places before their component folders).
get_target_property(kodo_header_set kodo HEADER_SET)
set(KODO_DOCS_INPUT)
set(KODO_DOCS_HEADERS)
foreach(header IN LISTS kodo_header_set)
  cmake_path(ABSOLUTE_PATH header BASE_DIRECTORY ${PROJECT_SOURCE_DIR}/src)
  set(forwards)
  if(EXISTS ${header})
    file(STRINGS ${header} forwards REGEX "^#pragma message\\(\"kodo: deprecated header: include <")
  endif()
  if(NOT forwards)
    string(APPEND KODO_DOCS_INPUT " \"${header}\"")
    list(APPEND KODO_DOCS_HEADERS ${header})
  endif()
endforeach()
# The pages beside the front page (docs/api_reference.md links to them): the README and
# the guides, with the pages they link to (a link to a page left out fails the run).
set(KODO_DOCS_PAGES)
foreach(page README.md docs/concepts.md docs/porting.md docs/building.md docs/apps.md
             docs/architecture.md docs/performance.md perf/README.md docs/releasing.md)
  string(APPEND KODO_DOCS_PAGES " \"${PROJECT_SOURCE_DIR}/${page}\"")
endforeach()
# The filter's command, its paths quoted for doxygen's quoted FILTER_PATTERNS (\" inside).
set(kodo_q "\\\"")
set(KODO_DOCS_FILTER "${kodo_q}${KODO_AWK}${kodo_q} -v ${kodo_q}root=${PROJECT_SOURCE_DIR}${kodo_q}")
string(APPEND KODO_DOCS_FILTER " -f ${kodo_q}${PROJECT_SOURCE_DIR}/cmake/kodoDocsFilter.awk${kodo_q}")
set(KODO_DOCS_DIR ${PROJECT_BINARY_DIR}/docs/api)
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${PROJECT_BINARY_DIR}/docs/Doxyfile @ONLY)
add_custom_target(docs COMMAND ${KODO_DOXYGEN} ${PROJECT_BINARY_DIR}/docs/Doxyfile
                  COMMENT "kodo: API reference in ${KODO_DOCS_DIR}/html/index.html" VERBATIM)
message(STATUS "kodo: doxygen found: `cmake --build ${PROJECT_BINARY_DIR} --target docs` writes the API reference")
