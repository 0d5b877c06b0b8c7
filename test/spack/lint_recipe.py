#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Lints kodo's Spack recipe without Spack (CTest `spack_recipe`):

  test/spack/lint_recipe.py REPOSITORY_ROOT

The recipe (spack/spack_repo/kodo/packages/kodo/package.py) must byte-compile and import
against the stub of Spack in test/spack/stub; every variant its directives and its
cmake_args() name must be declared; every GPU architecture must reach Kokkos (and CUDA's
UCX); and every -D option cmake_args() passes, in each configuration below, must be an
option() or a cache variable of kodo's CMake (or one of CMake's own), with a value the
variable allows. The repository's repo.yaml and the environments' spack.yaml are checked
against it too. Prints what is wrong and exits 1, or prints a summary."""

import importlib.util
import pathlib
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
ROOT = pathlib.Path(sys.argv[1]).resolve()
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "stub"))
REPO = ROOT / "spack" / "spack_repo" / "kodo"
RECIPE = REPO / "packages" / "kodo" / "package.py"
# CMake's own variables a recipe may set (kodo's CMake does not declare them).
CMAKE_OWN = {"CMAKE_CXX_COMPILER", "CMAKE_BUILD_TYPE", "CMAKE_CUDA_ARCHITECTURES",
             "CMAKE_HIP_ARCHITECTURES", "BUILD_SHARED_LIBS"}
problems = []


def problem(text):
    problems.append(text)


# --- kodo's CMake: its options and cache variables, and the values a STRINGS list allows.
def cmake_cache_names():
    names, allowed = set(), {}
    files = [ROOT / "CMakeLists.txt"] + sorted((ROOT / "cmake").glob("*.cmake"))
    for sub in ("src", "apps", "perf", "examples", "test"):
        files += sorted((ROOT / sub).rglob("CMakeLists.txt"))
    for path in files:
        text = re.sub(r"#[^\n]*", "", path.read_text())
        names.update(re.findall(r"\boption\(\s*(\w+)", text))
        names.update(re.findall(r"\bset\(\s*(\w+)\s[^)]*\bCACHE\b", text))
        for name, values in re.findall(
                r"set_property\(\s*CACHE\s+(\w+)\s+PROPERTY\s+STRINGS\s+([^)]*)\)", text):
            allowed[name] = set(values.split())
    return names, allowed


# --- A spec of kodo, enough for satisfies() and the dependencies cmake_args() reads.
def variant_tokens(text):
    """The variant constraints of a spec string before its first dependency (^):
    [(name, value)], value True/False for +name/~name."""
    text = text.split("^", 1)[0]
    out = []
    for token in text.split():
        if "=" in token:
            name, value = token.split("=", 1)
            out.append((name, value))
            continue
        token = re.sub(r"^[\w-]+(@\S*)?", "", token)  # a package name and version
        out += [(name, sign == "+") for sign, name in re.findall(r"([+~])(\w+)", token)]
    return out


class Dependency:
    def __init__(self, name):
        self.name = name
        self.package = self
        self.prefix = f"/opt/{name}"
        self.kokkos_cxx = "/opt/kokkos/bin/nvcc_wrapper"
        self.hipcc = "/opt/hip/bin/hipcc"


class Spec:
    def __init__(self, variants, declared):
        self.variants = dict(variants)
        self.declared = declared

    def satisfies(self, text):
        for name, value in variant_tokens(text):
            if name not in self.declared:
                problem(f"satisfies({text!r}): no variant {name!r}")
                return False
            have = self.variants.get(name)
            if isinstance(value, bool):
                if bool(have) != value:
                    return False
            elif value not in (have if isinstance(have, tuple) else (have,)):
                return False
        return True

    def __getitem__(self, name):
        return Dependency(name)


def main():
    source = RECIPE.read_text()
    compile(source, str(RECIPE), "exec")  # a syntax error fails here, with its line
    spec = importlib.util.spec_from_file_location("kodo_recipe", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kodo = module.Kodo
    from spack_repo.builtin.build_systems.cmake import CMakePackage
    from spack_repo.builtin.build_systems.cuda import CudaPackage
    from spack_repo.builtin.build_systems.rocm import ROCmPackage
    if not issubclass(kodo, CMakePackage):
        problem("Kodo is not a CMakePackage")

    directives = kodo.directives()
    variants = {args[0]: kwargs for kind, args, kwargs in directives if kind == "variant"}
    depends = [(args[0], kwargs.get("when") or "") for kind, args, kwargs in directives
               if kind == "depends_on"]
    if not any(kind == "version" for kind, _, _ in directives):
        problem("the recipe declares no version")
    for kind, args, kwargs in directives:
        for text in [kwargs.get("when") or ""] + ([args[0]] if kind == "conflicts" else []):
            for name, value in variant_tokens(text):
                if name not in variants:
                    problem(f"{kind}({args[0]!r}, when={kwargs.get('when')!r}): no variant {name!r}")
                elif not isinstance(value, bool) and variants[name]["values"] \
                        and value not in variants[name]["values"]:
                    problem(f"{kind}(...{text!r}): {name}={value} is not one of its values")
    needed = {"kokkos", "ucx", "mpi", "xxhash", "cmake", "hwloc", "googletest"}
    have = {re.match(r"[\w-]+", s).group(0) for s, _ in depends}
    for name in sorted(needed - have):
        problem(f"no depends_on({name!r})")
    if not any(s.startswith("kokkos@4.6:") for s, _ in depends):
        problem("kokkos is not asked for at 4.6 or newer (depends_on('kokkos@4.6:...'))")
    # Every GPU architecture reaches Kokkos (and UCX for CUDA).
    for dep, variant, values in (("kokkos", "cuda_arch", CudaPackage.cuda_arch_values),
                                 ("ucx", "cuda_arch", CudaPackage.cuda_arch_values),
                                 ("kokkos", "amdgpu_target", ROCmPackage.amdgpu_targets)):
        for value in values:
            token = f"{variant}={value}"
            if not any(s.startswith(dep) and token in s.split() and token in w.split()
                       for s, w in depends):
                problem(f"{token} does not reach {dep} (depends_on('{dep}... {token}', when='... {token}'))")

    # cmake_args() in each configuration: the options exist, with allowed values.
    names, allowed = cmake_cache_names()
    defaults = {name: kw["default"] for name, kw in variants.items()}
    configurations = [
        ("defaults", {}, False),
        ("defaults, --test", {}, True),
        ("+cuda cuda_arch=70", {"cuda": True, "cuda_arch": ("70",)}, False),
        ("+rocm amdgpu_target=gfx90a ~hwloc",
         {"rocm": True, "amdgpu_target": ("gfx90a",), "hwloc": False}, False),
    ]
    checked = set()
    for label, changes, run_tests in configurations:
        for name in changes:
            if name not in variants:
                problem(f"configuration {label}: the recipe has no variant {name!r}")
        package = kodo(Spec({**defaults, **changes}, variants), run_tests=run_tests)
        options = {}
        for arg in package.cmake_args():
            match = re.fullmatch(r"-D(\w+)(?::\w+)?=(.*)", arg)
            if not match:
                problem(f"{label}: cmake_args() gives {arg!r}, not -DNAME[:TYPE]=VALUE")
                continue
            name, value = match.groups()
            options[name] = value
            checked.add(name)
            if name not in names and name not in CMAKE_OWN:
                problem(f"{label}: -D{name} is no option or cache variable of kodo's CMake")
            if name in allowed and value not in allowed[name]:
                problem(f"{label}: -D{name}={value}: {name} takes {sorted(allowed[name])}")
        tests = "ON" if run_tests else "OFF"
        if options.get("KODO_ENABLE_TESTS") != tests:
            problem(f"{label}: KODO_ENABLE_TESTS={options.get('KODO_ENABLE_TESTS')}, not {tests}")
        hwloc = "ON" if package.spec.variants["hwloc"] else "OFF"
        if options.get("KODO_ENABLE_HWLOC") != hwloc:
            problem(f"{label}: KODO_ENABLE_HWLOC={options.get('KODO_ENABLE_HWLOC')}, not {hwloc}")
        device = changes.get("cuda") or changes.get("rocm")
        if bool(device) != ("CMAKE_CXX_COMPILER" in options):
            problem(f"{label}: CMAKE_CXX_COMPILER {'missing' if device else 'set'} "
                    "(a device build compiles with its Kokkos' compiler)")

    # repo.yaml names the namespace of its directory; each environment's kodo specs name
    # variants the recipe has.
    repo_yaml = (REPO / "repo.yaml").read_text()
    if not re.search(r"^\s*namespace:\s*['\"]?kodo['\"]?\s*$", repo_yaml, re.M):
        problem("spack/spack_repo/kodo/repo.yaml: namespace is not kodo")
    environments = sorted((ROOT / "spack").rglob("spack.yaml"))
    if not environments:
        problem("no spack.yaml under spack/")
    for path in environments:
        text = path.read_text()
        if "\t" in text:
            problem(f"{path.relative_to(ROOT)}: a tab (YAML indents with spaces)")
        try:
            import yaml
            if "spack" not in (yaml.safe_load(text) or {}):
                problem(f"{path.relative_to(ROOT)}: no top-level 'spack:'")
        except ImportError:
            pass  # no PyYAML here: the variants below are still checked
        kodo_specs = re.findall(r"^\s*-\s*['\"]?(kodo\b[^'\"\n#]*)", text, re.M)
        if not kodo_specs:
            problem(f"{path.relative_to(ROOT)}: no kodo spec")
        for line in kodo_specs:
            for name, value in variant_tokens(line):
                if name not in variants:
                    problem(f"{path.relative_to(ROOT)}: '{line.strip()}': kodo has no variant {name!r}")
                elif not isinstance(value, bool) and variants[name]["values"] \
                        and value not in variants[name]["values"]:
                    problem(f"{path.relative_to(ROOT)}: '{line.strip()}': {name}={value} is not one of its values")

    if problems:
        for text in problems:
            print(f"spack recipe: {text}")
        return 1
    print(f"spack recipe: ok ({len(variants)} variants; options checked against kodo's CMake: "
          f"{', '.join(sorted(checked))}; {len(environments)} environment(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
