# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Finds kodo's dependencies. Shared by the build and by kodoConfig.cmake, so a
# consumer of an installed kodo resolves them the same way.

include(CMakeFindDependencyMacro)

find_dependency(Kokkos)
if(Kokkos_VERSION VERSION_LESS 4.6)
  message(FATAL_ERROR "kodo needs Kokkos 4.6 or newer; found ${Kokkos_VERSION}")
endif()

find_dependency(MPI COMPONENTS CXX)
find_package(PkgConfig QUIET)

# UCX, as the target kodo_deps::ucx: pkg-config's ucx where present, UCX's own CMake
# package otherwise. (Debian's UCX CMake package points at a non-existent include
# directory, so it comes second.)
if(NOT TARGET kodo_deps::ucx)
  if(PkgConfig_FOUND)
    pkg_check_modules(KODO_UCX QUIET IMPORTED_TARGET GLOBAL ucx)
  endif()
  add_library(kodo_deps::ucx INTERFACE IMPORTED GLOBAL)
  if(TARGET PkgConfig::KODO_UCX)
    target_link_libraries(kodo_deps::ucx INTERFACE PkgConfig::KODO_UCX)
    set(KODO_UCX_VERSION ${KODO_UCX_VERSION})
  else()
    find_package(ucx CONFIG QUIET)
    if(NOT TARGET ucx::ucp)
      message(FATAL_ERROR "kodo needs UCX: neither pkg-config's ucx nor UCX's CMake package (ucx) was found. "
                          "Set PKG_CONFIG_PATH or ucx_DIR to your UCX install.")
    endif()
    target_link_libraries(kodo_deps::ucx INTERFACE ucx::ucp ucx::ucs)
    set(KODO_UCX_VERSION ${ucx_VERSION})
  endif()
endif()

# xxHash (libxxhash, Spack's xxhash): the XXH3 checksums of checkpoint files, as the
# target kodo_deps::xxhash. -DKODO_XXHASH_LIBRARY=<path> (e.g. the static libxxhash.a, for
# binaries run where xxHash is not installed) chooses the library; otherwise pkg-config's
# libxxhash where present, else the header and the library found by name.
if(NOT TARGET kodo_deps::xxhash)
  if(PkgConfig_FOUND AND NOT KODO_XXHASH_LIBRARY)
    pkg_check_modules(KODO_XXHASH QUIET IMPORTED_TARGET GLOBAL libxxhash>=0.8.0)
  endif()
  add_library(kodo_deps::xxhash INTERFACE IMPORTED GLOBAL)
  if(TARGET PkgConfig::KODO_XXHASH)
    target_link_libraries(kodo_deps::xxhash INTERFACE PkgConfig::KODO_XXHASH)
  else()
    find_path(KODO_XXHASH_INCLUDE_DIR xxhash.h)
    find_library(KODO_XXHASH_LIBRARY NAMES xxhash)
    if(NOT KODO_XXHASH_INCLUDE_DIR OR NOT KODO_XXHASH_LIBRARY)
      message(FATAL_ERROR "kodo needs xxHash (checkpoint checksums): neither pkg-config's libxxhash nor "
                          "xxhash.h and libxxhash were found. Install libxxhash-dev (Debian) or "
                          "xxhash (Spack), or set CMAKE_PREFIX_PATH to its install.")
    endif()
    target_include_directories(kodo_deps::xxhash INTERFACE ${KODO_XXHASH_INCLUDE_DIR})
    target_link_libraries(kodo_deps::xxhash INTERFACE ${KODO_XXHASH_LIBRARY})
  endif()
endif()

# hwloc is optional (CPU and NUMA placement): KODO_ENABLE_HWLOC AUTO (the default) uses
# it where pkg-config finds it, ON requires it, OFF leaves it out. (kodoConfig.cmake sets
# it to what the installed kodo was built with.)
if(NOT DEFINED KODO_ENABLE_HWLOC)
  set(KODO_ENABLE_HWLOC AUTO)
endif()
string(TOUPPER "${KODO_ENABLE_HWLOC}" kodo_hwloc_mode)
if(kodo_hwloc_mode STREQUAL "AUTO")
  if(PkgConfig_FOUND AND NOT TARGET PkgConfig::KODO_HWLOC)
    pkg_check_modules(KODO_HWLOC QUIET IMPORTED_TARGET GLOBAL hwloc)
  endif()
elseif(kodo_hwloc_mode MATCHES "^(ON|1|YES|TRUE|Y)$")
  if(PkgConfig_FOUND AND NOT TARGET PkgConfig::KODO_HWLOC)
    pkg_check_modules(KODO_HWLOC QUIET IMPORTED_TARGET GLOBAL hwloc)
  endif()
  if(NOT TARGET PkgConfig::KODO_HWLOC)
    message(FATAL_ERROR "kodo: KODO_ENABLE_HWLOC=${KODO_ENABLE_HWLOC} requires hwloc, but "
                        "pkg-config did not find hwloc.pc: set PKG_CONFIG_PATH to your hwloc "
                        "install, or configure with -DKODO_ENABLE_HWLOC=AUTO or OFF.")
  endif()
elseif(NOT kodo_hwloc_mode MATCHES "^(OFF|0|NO|FALSE|N)$")
  message(FATAL_ERROR "kodo: KODO_ENABLE_HWLOC must be AUTO, ON or OFF, not '${KODO_ENABLE_HWLOC}'")
endif()

# The backend follows the Kokkos install's device backend; its native runtime comes
# as kodo_deps::cuda or kodo_deps::hip.
if(Kokkos_ENABLE_CUDA)
  set(KODO_BACKEND cuda)
  find_dependency(CUDAToolkit)
  # The recorded steps (src/kodo/backends/cuda/capture.cpp) call CUDA 12's forms of the
  # stream-capture and graph-update functions: an older toolkit is refused here, not with
  # a compiler error.
  if(CUDAToolkit_VERSION VERSION_LESS 12.0)
    message(FATAL_ERROR "kodo: the CUDA backend needs CUDA 12.0 or newer, found "
                        "${CUDAToolkit_VERSION} (${CUDAToolkit_BIN_DIR})")
  endif()
  if(NOT TARGET kodo_deps::cuda)
    add_library(kodo_deps::cuda INTERFACE IMPORTED GLOBAL)
    target_link_libraries(kodo_deps::cuda INTERFACE CUDA::cudart CUDA::cuda_driver)
  endif()
elseif(Kokkos_ENABLE_HIP)
  set(KODO_BACKEND hip)
  find_dependency(hip)
  if(NOT TARGET kodo_deps::hip)
    add_library(kodo_deps::hip INTERFACE IMPORTED GLOBAL)
    target_link_libraries(kodo_deps::hip INTERFACE hip::host)
  endif()
else()
  set(KODO_BACKEND host)
endif()
