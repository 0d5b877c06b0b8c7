#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Shows that test/spack/lint_recipe.py refuses each broken form of the recipe and of the
environments it knows (CTest `spack_recipe_refuses`):

  test/spack/lint_negative.py REPOSITORY_ROOT

Each case copies REPOSITORY_ROOT/spack into a temporary directory, breaks one thing in the
copy, and runs the lint on it (lint_recipe.py REPOSITORY_ROOT COPY/spack): the lint must
fail and print that case's message. The unbroken copy must pass. A case whose pattern is
no longer in the recipe fails too (update the case with the recipe). Prints one line per
case, then "spack recipe negative: ok (...)", or what went wrong and exits 1."""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(sys.argv[1]).resolve()
LINT = pathlib.Path(__file__).resolve().parent / "lint_recipe.py"
RECIPE = "spack_repo/kodo/packages/kodo/package.py"
SUMMIT = "environments/summit/spack.yaml"
# A commit of kodo whose CMakeLists.txt says VERSION 0.1.0 (before the 0.2.0 release).
OLDER_RELEASE = "b5c25baa3cc851046a0fa16d22c773b69e6aa47b"
NO_SUCH_COMMIT = "0123456789abcdef0123456789abcdef01234567"
KODO_SPEC = '"kodo@main +cuda cuda_arch=70 +hwloc ^kokkos@4.6: +openmp +wrapper"'

# (name, file under spack/, pattern (a regular expression), replacement, the message the
# lint must print, whether the case needs the repository's full git history)
CASES = [
    # (a) the environments
    ("spec unquoted (a YAML mapping)", SUMMIT, re.escape(KODO_SPEC), KODO_SPEC.strip('"'),
     "spack.specs entry 1 is a YAML dict, not a spec string", False),
    ("spack.yaml not YAML", SUMMIT, r"\n  concretizer:", "\n concretizer:",
     "does not parse as YAML", False),
    ("kodo spec with an unknown variant", SUMMIT, r"\+hwloc \^", "+numa ^",
     "kodo has no variant 'numa'", False),
    # (b) versions
    ("release by tag", RECIPE, r'commit="aa46cb8[0-9a-f]+"', 'tag="v0.2.0"',
     "tag= (no tag reaches a clone", False),
    ("release at a commit that does not exist", RECIPE, r"aa46cb8[0-9a-f]+", NO_SUCH_COMMIT,
     f"{NO_SUCH_COMMIT} is no commit of the repository", True),
    ("release at another version's commit", RECIPE, r"aa46cb8[0-9a-f]+", OLDER_RELEASE,
     "that commit's CMakeLists.txt says VERSION 0.1.0, not 0.2.0", True),
    ("release by a short commit id", RECIPE, r'commit="aa46cb8[0-9a-f]+"', 'commit="aa46cb8"',
     "commit= is not a full commit id", False),
    ("a branch other than main", RECIPE, r'branch="main"', 'branch="develop"',
     "a branch other than version('main', branch='main')", False),
    ("the newest release missing", RECIPE, r'\n    version\("0\.2\.0".*', "",
     "CHANGELOG's newest release 0.2.0 has no version() in the recipe", False),
    # (c) the source and what `spack audit` refuses
    ("git URL hard-coded", RECIPE, r'git = os\.environ\.get\("KODO_GIT_URL"\) or ',
     "git = ", "the recipe ignores KODO_GIT_URL", False),
    ("a version with its own file:// URL", RECIPE, r'branch="main"\)',
     'branch="main", git="file:///srv/kodo")', "a file:// URL hard-coded", False),
    ("no homepage", RECIPE, r"\n    homepage = git", "", "no homepage URL", False),
    ("no maintainers", RECIPE, r'\n    maintainers\("kodo-developers"\)', "",
     "no maintainers(...)", False),
    ("self-referential dependency", RECIPE,
     r'conflicts\("\^kokkos@:4 ~cuda_lambda", when="\+cuda",\n.*\n',
     'depends_on("kokkos+cuda_lambda", when="+cuda ^kokkos@:4")\n',
     "self-referential (its when= names kokkos itself", False),
    ("a conflict ROCmPackage states", RECIPE, r"\n    def cmake_args",
     '\n    conflicts("+rocm", when="amdgpu_target=none", msg="+rocm needs an amdgpu_target")'
     "\n\n    def cmake_args",
     "repeats a conflict ROCmPackage already states", False),
    ("kodo depending on itself", RECIPE, r'\n    depends_on\("mpi"\)',
     '\n    depends_on("mpi")\n    depends_on("kodo@0.2.0", when="@main")',
     "kodo depends on itself", False),
    ("a nested dependency", RECIPE, r'depends_on\("xxhash@0\.8:"\)',
     'depends_on("xxhash@0.8: ^cmake")', "a nested dependency", False),
    ("a when= naming another package", RECIPE, r'depends_on\("hwloc", when="\+hwloc"\)',
     'depends_on("hwloc", when="kokkos+hwloc")', "when= names the package 'kokkos'", False),
    # (d) Kokkos' rules for CUDA
    ("no nvcc_wrapper for gcc", RECIPE, r'\n    depends_on\("kokkos\+wrapper", when=.*', "",
     "+cuda with gcc does not ask for Kokkos' nvcc_wrapper", False),
    ("nvcc_wrapper for clang only", RECIPE, r'when="\+cuda %gcc"', 'when="+cuda %clang"',
     "+cuda with gcc does not ask for Kokkos' nvcc_wrapper", False),
    ("no device lambdas with Kokkos 4", RECIPE,
     r'\n    conflicts\("\^kokkos@:4 ~cuda_lambda", when="\+cuda",\n.*', "",
     "a Kokkos 4 without device lambdas is not refused", False),
    # (e) the compiler floor
    ("no GCC floor", RECIPE, r'\n    conflicts\("%gcc@:10",[\s\S]*?"\)\n', "\n",
     "no compiler floor for GCC", False),
    ("a GCC floor too low", RECIPE, r'"%gcc@:10"', '"%gcc@:9"',
     "lets GCC 10 through: kodo needs GCC 11", False),
    ("a GCC floor without a message", RECIPE, r'conflicts\("%gcc@:10",[\s\S]*?"\)\n',
     'conflicts("%gcc@:10")\n', "has no msg=", False),
    ("no Clang floor", RECIPE, r'\n    conflicts\("%clang@:14",[\s\S]*?"\)\n', "\n",
     "no compiler floor for Clang", False),
]


def run_lint(spack_dir, env=None):
    result = subprocess.run([sys.executable, str(LINT), str(ROOT), str(spack_dir)],
                            capture_output=True, text=True, env=env)
    return result.returncode, (result.stdout + result.stderr).strip()


def full_history():
    try:
        result = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"],
                                capture_output=True, text=True)
    except FileNotFoundError:
        return False
    return result.returncode == 0 and result.stdout.strip() == "false"


def indented(out):
    return "".join(f"\n    {line}" for line in out.splitlines())


def main():
    failures, refused = [], 0
    history = full_history()
    with tempfile.TemporaryDirectory(prefix="kodo-lintcheck-") as tmp:
        tmp = pathlib.Path(tmp)
        fixed = tmp / "fixed"
        shutil.copytree(ROOT / "spack", fixed / "spack")
        rc, out = run_lint(fixed / "spack")
        if rc != 0 or "spack recipe: ok" not in out:
            failures.append(f"the fixed recipe does not pass (rc {rc}):\n{out}")
        else:
            print(f"fixed recipe: passes: {out}")

        # PyYAML is required: a yaml module that cannot be imported fails the lint.
        hidden = tmp / "no-yaml"
        hidden.mkdir()
        (hidden / "yaml.py").write_text("raise ImportError('hidden by lint_negative.py')\n")
        env = dict(os.environ, PYTHONPATH=str(hidden))
        rc, out = run_lint(fixed / "spack", env)
        if rc == 1 and "PyYAML is missing" in out:
            refused += 1
            print(f"case 'PyYAML missing': refused:{indented(out)}")
        else:
            failures.append(f"case 'PyYAML missing': rc {rc}, not refused:\n{out}")

        for number, (name, path, pattern, replacement, message, needs_history) in \
                enumerate(CASES, 1):
            copy = tmp / f"case{number}"
            shutil.copytree(ROOT / "spack", copy / "spack")
            target = copy / "spack" / path
            text, count = re.subn(pattern, lambda _: replacement, target.read_text(), count=1)
            if count != 1:
                failures.append(f"case {name!r}: {pattern!r} is not in spack/{path} "
                                "(update the case with the recipe)")
                continue
            target.write_text(text)
            rc, out = run_lint(copy / "spack")
            if needs_history and not history:
                print(f"case {name!r}: not checkable here (no full git history):{indented(out)}")
                continue
            lines = [line for line in out.splitlines() if message in line]
            if rc == 1 and lines:
                refused += 1
                print(f"case {name!r}: refused:{indented(out)}")
            else:
                failures.append(f"case {name!r}: rc {rc}, no line with {message!r}:\n{out}")
    for text in failures:
        print(f"spack recipe negative: {text}")
    if failures:
        return 1
    print(f"spack recipe negative: ok ({refused} broken forms refused, the fixed recipe passes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
