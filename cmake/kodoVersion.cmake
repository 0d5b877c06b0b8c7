# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# <kodo/version.hpp> and the commit kodo is built from (kodo::commit()): asked of git at
# configuration, and again when a commit, a checkout or a staged change moves git's files.
set(KODO_GIT_COMMIT "" CACHE STRING
    "The commit kodo is built from, for a source tree without git (default: asked of git)")
set(KODO_GIT_COMMIT_FOUND unknown)
if(KODO_GIT_COMMIT)
  set(KODO_GIT_COMMIT_FOUND ${KODO_GIT_COMMIT})
else()
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
                    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} RESULT_VARIABLE git_failed
                    OUTPUT_VARIABLE git_commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --absolute-git-dir
                    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE git_dir
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT git_failed AND git_commit AND git_dir)
      set(KODO_GIT_COMMIT_FOUND ${git_commit})
      execute_process(COMMAND ${GIT_EXECUTABLE} diff --quiet HEAD --
                      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} RESULT_VARIABLE git_dirty
                      ERROR_QUIET)
      if(git_dirty)
        string(APPEND KODO_GIT_COMMIT_FOUND -dirty)
      endif()
      # HEAD's log moves with every commit and checkout; the index with staged changes.
      foreach(moves HEAD index logs/HEAD)
        if(EXISTS ${git_dir}/${moves})
          set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                       ${git_dir}/${moves})
        endif()
      endforeach()
    endif()
  endif()
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/version.hpp.in
               ${PROJECT_BINARY_DIR}/include/kodo/version.hpp @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/version.cpp.in
               ${PROJECT_BINARY_DIR}/kodo_version.cpp @ONLY)
