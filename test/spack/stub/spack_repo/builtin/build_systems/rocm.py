# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Stand-in for Spack's ROCmPackage (test/spack/lint_recipe.py): its variants, a few of
its targets, and the conflict it declares itself (a recipe need not repeat it)."""
from spack.package import PackageBase, conflicts, depends_on, variant


class ROCmPackage(PackageBase):
    amdgpu_targets = ("gfx906", "gfx90a", "gfx942")
    variant("rocm", default=False, description="Build with ROCm")
    variant("amdgpu_target", default="none", values=("none",) + amdgpu_targets, multi=True,
            when="+rocm", description="AMD GPU architecture")
    depends_on("hip", when="+rocm")
    conflicts("amdgpu_target=none", when="+rocm")
