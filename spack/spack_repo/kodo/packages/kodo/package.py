# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Spack recipe for kodo, kept in kodo's own repository.

Where the source comes from is one setting: the environment variable KODO_GIT_URL, read
when Spack loads this recipe (any URL git clones: https://..., ssh://..., file:///path).
Without it the recipe fetches from the checkout it lives in (file:// + that checkout), so
`spack repo add spack/spack_repo/kodo` from a clone needs nothing more. A site that runs
Spack where that checkout cannot be read sets KODO_GIT_URL, or puts kodo in a Spack mirror
(`spack mirror create -d DIR kodo@0.2.0`, then `spack mirror add`); an environment that
develops kodo builds the working tree instead (`spack develop --path . kodo@=main`).

Releases are pinned to commits, not tags (tags do not reach a clone of this repository):
docs/releasing.md says how to add one. CTest `spack_recipe` lints this recipe against a
stub of Spack (test/spack/)."""

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

    git = os.environ.get("KODO_GIT_URL") or "file://" + _CHECKOUT
    # kodo has no public web page yet: the homepage is where its source is fetched from.
    homepage = git
    # Not a GitHub handle: kodo names no individual maintainers (CITATION.cff's author is
    # "The kodo developers").
    maintainers("kodo-developers")

    license("Apache-2.0 WITH LLVM-exception")

    version("main", branch="main")
    version("0.2.0", commit="aa46cb8168cd4b25682af1bf506c53a395143935")

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
    # kodo compiles with its Kokkos' compiler; Kokkos' recipe builds +cuda only with
    # +wrapper (nvcc_wrapper) unless the compiler is clang (or cce, or +cmake_lang).
    depends_on("kokkos+wrapper", when="+cuda %gcc")
    # Kokkos 4 turns device lambdas off unless asked (Kokkos 5 always has them, and has no
    # such variant). A conflict, not depends_on(..., when="^kokkos@:4"): a dependency whose
    # condition names the dependency itself is what `spack audit` calls self-referential.
    conflicts("^kokkos@:4 ~cuda_lambda", when="+cuda",
              msg="kodo +cuda needs device lambdas: Kokkos 4 with +cuda_lambda, or Kokkos 5")

    conflicts("+cuda", when="+rocm", msg="kodo runs one device backend: +cuda or +rocm")
    conflicts("+cuda", when="cuda_arch=none", msg="+cuda needs a cuda_arch (e.g. cuda_arch=70)")
    # (+rocm without an amdgpu_target: ROCmPackage's own conflict says so.)

    # C++20 as kodo uses it, with no extra flags (kodo's CMake asks for C++20 only):
    # <coroutine> without -fcoroutines, std::source_location and floating-point
    # std::from_chars need GCC 11; Clang has the __builtin_source_location that
    # libstdc++'s <source_location> needs from 15 on.
    conflicts("%gcc@:10", msg="kodo needs GCC 11 or newer (C++20 coroutines without "
              "-fcoroutines, std::source_location)")
    conflicts("%clang@:14", msg="kodo needs Clang 15 or newer (std::source_location)")

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
