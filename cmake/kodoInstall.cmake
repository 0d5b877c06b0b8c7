# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Installs kodo as a CMake package: find_package(kodo) gives kodo::kodo. (With
# KODO_ENABLE_APPS, apps/*/ and perf/ install their programs: jacobi3d and minimd in bin/,
# the benchmarks in libexec/kodo/.) What a project building against kodo needs (library,
# headers, CMake package, licence) is the install component `library`, which installs
# without the programs having been built (`cmake --install BUILD --component library`:
# scripts/project builds and installs only that); the programs are component `programs`.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The public headers (kodo.hpp and what it includes; src/CMakeLists.txt) keep their paths
# under src/: include/kodo/..., and include/kodo.hpp (forwarding, for one release). The
# include directory users get is include/, so only <kodo/...> (and <kodo.hpp>) resolve:
# kodo's folder names are not top-level include names. The impl_headers file set (the
# bodies of the public headers' templates, under detail/) goes with them; internal
# headers stay behind.
install(TARGETS kodo EXPORT kodoTargets COMPONENT library
        FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT library
        FILE_SET impl_headers DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT library)
install(EXPORT kodoTargets NAMESPACE kodo:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kodo
        COMPONENT library)
# Whether kodo links hwloc: an installed kodo's users resolve it the same way.
if(TARGET PkgConfig::KODO_HWLOC)
  set(KODO_CONFIG_HWLOC ON)
else()
  set(KODO_CONFIG_HWLOC OFF)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/kodoConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/kodoConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kodo)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/kodoConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kodoConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/kodoConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/kodoDependencies.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kodo COMPONENT library)
# The licence travels with every install (a package must carry it).
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/CITATION.cff
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/kodo COMPONENT library)
include(kodoInstallTools)  # with KODO_ENABLE_APPS: the scaling tools, share/kodo/scaling/
