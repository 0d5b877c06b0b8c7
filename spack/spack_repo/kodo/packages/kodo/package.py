# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Spack recipe for kodo, kept in kodo's own repository.

It builds the checkout it lives in (version "main": that checkout's main branch, fetched
with git), or the working tree in an environment that develops kodo (`spack develop`).
CTest `spack_recipe` lints it against a stub of Spack (test/spack/)."""

import os

from spack_repo.builtin.build_systems.cmake import CMakePackage
from spack_repo.builtin.build_systems.cuda import CudaPackage
from spack_repo.builtin.build_systems.rocm import ROCmPackage

from spack.package import *

# spack/spack_repo/kodo/packages/kodo/package.py -> the checkout's root
_CHECKOUT = os.path.abspath(os.path.join(os.path.dirname(__file__), *([os.pardir] * 5)))


class Kodo(CMakePackage, CudaPackage, ROCmPackage):
    """A Kokkos-based C++20 task and overdecomposition runtime (MPI + UCX + Kokkos): many
    work units per GPU, communication hidden behind computation, load balancing by moving
    units, checkpoint/restart; with the Jacobi3D and MiniMD proxy applications."""

    git = "file://" + _CHECKOUT

    license("Apache-2.0 WITH LLVM-exception")

    version("main", branch="main")
    version("0.2.0", tag="v0.2.0")

    variant("hwloc", default=True, description="Report each rank's CPU and NUMA placement (hwloc)")

    depends_on("cxx", type="build")
    depends_on("cmake@3.23:", type="build")
    depends_on("pkgconfig", type="build")  # UCX and hwloc are found through pkg-config

    depends_on("mpi")
    depends_on("ucx")
    depends_on("xxhash@0.8:")  # XXH3 is stable from 0.8.0 on
    depends_on("hwloc", when="+hwloc")
    depends_on("googletest", type="test")

    # Kokkos 4.6 to 5.x, C++20 (kodo's own standard; Kokkos 4 defaults to C++17).
    depends_on("kokkos@4.6:5 cxxstd=20")

    # The device backend is Kokkos' (kodo's CMake follows the Kokkos it finds): +cuda and
    # +rocm ask for that Kokkos, for the GPU architecture named here, and for a UCX that
    # moves device memory.
    for _arch in CudaPackage.cuda_arch_values:
        depends_on(f"kokkos+cuda cuda_arch={_arch}", when=f"+cuda cuda_arch={_arch}")
        depends_on(f"ucx+cuda cuda_arch={_arch}", when=f"+cuda cuda_arch={_arch}")
    for _target in ROCmPackage.amdgpu_targets:
        depends_on(f"kokkos+rocm amdgpu_target={_target}", when=f"+rocm amdgpu_target={_target}")
    depends_on("ucx+rocm", when="+rocm")
    depends_on("kokkos~cuda~rocm", when="~cuda~rocm")
    # Kokkos 4 turns device lambdas off unless asked (Kokkos 5 always has them).
    depends_on("kokkos+cuda_lambda", when="+cuda ^kokkos@:4")

    conflicts("+cuda", when="+rocm", msg="kodo runs one device backend: +cuda or +rocm")
    conflicts("+cuda", when="cuda_arch=none", msg="+cuda needs a cuda_arch (e.g. cuda_arch=70)")
    conflicts("+rocm", when="amdgpu_target=none", msg="+rocm needs an amdgpu_target")

    def cmake_args(self):
        # The programs are installed (bin/jacobi3d, bin/minimd, libexec/kodo/*_bench); the
        # tests and the examples they run are built only for `spack install --test`.
        args = [
            self.define("KODO_ENABLE_APPS", True),
            self.define("KODO_ENABLE_TESTS", self.run_tests),
            self.define("KODO_ENABLE_EXAMPLES", self.run_tests),
            self.define_from_variant("KODO_ENABLE_HWLOC", "hwloc"),
        ]
        # kodo compiles with the compiler its Kokkos was built with (nvcc_wrapper, hipcc).
        if self.spec.satisfies("+cuda"):
            args.append(self.define("CMAKE_CXX_COMPILER", self["kokkos"].kokkos_cxx))
        elif self.spec.satisfies("+rocm"):
            args.append(self.define("CMAKE_CXX_COMPILER", self.spec["hip"].hipcc))
        return args
