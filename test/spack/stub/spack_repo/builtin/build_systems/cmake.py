# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Stand-in for Spack's CMake build system (test/spack/lint_recipe.py)."""
from spack.package import PackageBase


class CMakePackage(PackageBase):
    pass
