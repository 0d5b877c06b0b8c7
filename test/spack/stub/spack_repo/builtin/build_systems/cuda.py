# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Stand-in for Spack's CudaPackage (test/spack/lint_recipe.py): its variants, a few of
its architectures. Spack 1.x's CudaPackage declares no conflict for cuda_arch=none (a
recipe that needs an architecture says so itself)."""
from spack.package import PackageBase, depends_on, variant


class CudaPackage(PackageBase):
    cuda_arch_values = ("60", "70", "80", "90")
    variant("cuda", default=False, description="Build with CUDA")
    variant("cuda_arch", default="none", values=("none",) + cuda_arch_values, multi=True,
            when="+cuda", description="CUDA architecture")
    depends_on("cuda", when="+cuda")
