#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Lints kodo's Spack recipe without Spack (CTest `spack_recipe`):

  test/spack/lint_recipe.py REPOSITORY_ROOT [SPACK_DIR]

SPACK_DIR (default REPOSITORY_ROOT/spack) holds the recipe
(spack_repo/kodo/packages/kodo/package.py), repo.yaml and the environments (spack.yaml);
kodo's CMake, CHANGELOG and git history are read from REPOSITORY_ROOT. Another SPACK_DIR
lints a copy (test/spack/lint_negative.py breaks copies on purpose).

The recipe must byte-compile and import against the stub of Spack in test/spack/stub, and:
- versions: each release is pinned to a commit of this repository that exists and whose
  CMakeLists.txt says that version (no tag=, which no clone receives; branch= only for
  "main"); the CHANGELOG's newest release is one of them;
- source: the git URL comes from KODO_GIT_URL, else file:// + the checkout the recipe
  lives in (no URL hard-coded); homepage, maintainers and a docstring are present;
- what `spack audit` refuses: a dependency on kodo itself, a nested depends_on('a ^b'), a
  dependency whose when= names that dependency (self-referential), a when= that names
  another package; and a conflict a base class (CudaPackage, ROCmPackage) already states;
- Kokkos' rules for CUDA: +wrapper (nvcc_wrapper) with gcc, device lambdas with Kokkos 4;
- a compiler floor (GCC, Clang) with a message;
- every variant its directives and its cmake_args() name is declared; every GPU
  architecture reaches Kokkos (and CUDA's UCX); every -D option cmake_args() passes, in
  each configuration below, is an option() or a cache variable of kodo's CMake (or one of
  CMake's own), with a value the variable allows;
- repo.yaml names the namespace kodo; each spack.yaml parses as YAML (PyYAML is
  required), its specs are strings (an unquoted spec with ': ' is a mapping), and its kodo
  specs name variants the recipe has.
Prints what is wrong and exits 1, or prints a summary."""

import importlib.util
import os
import pathlib
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
if len(sys.argv) not in (2, 3):
    sys.exit(__doc__)
ROOT = pathlib.Path(sys.argv[1]).resolve()
SPACK_DIR = pathlib.Path(sys.argv[2]).resolve() if len(sys.argv) == 3 else ROOT / "spack"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "stub"))
REPO = SPACK_DIR / "spack_repo" / "kodo"
RECIPE = REPO / "packages" / "kodo" / "package.py"
# CMake's own variables a recipe may set (kodo's CMake does not declare them).
CMAKE_OWN = {"CMAKE_CXX_COMPILER", "CMAKE_BUILD_TYPE", "CMAKE_CUDA_ARCHITECTURES",
             "CMAKE_HIP_ARCHITECTURES", "BUILD_SHARED_LIBS"}
# The oldest compilers that build kodo as its CMake asks (-std=c++20, no -fcoroutines):
# compiler: (its name, the oldest major release, the names Spack knows it by, why).
COMPILER_FLOORS = {
    "gcc": ("GCC", 11, ("gcc",),
            "<coroutine> without -fcoroutines, std::source_location, floating-point from_chars"),
    "clang": ("Clang", 15, ("clang", "llvm"),
              "__builtin_source_location, which libstdc++'s std::source_location needs"),
}
problems = []
notes = []
verified = []  # "0.2.0 = aa46cb816825": the releases whose commit was read


def problem(text):
    problems.append(text)


def git(*args):
    try:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    except FileNotFoundError:
        return subprocess.CompletedProcess(args, 127, "", "git: command not found")


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


def package_name(text):
    """The package a spec string names first ('kokkos' in 'kokkos+cuda'), or None."""
    words = (text or "").split()
    first = words[0] if words else ""
    match = re.match(r"[A-Za-z_][\w-]*", first)
    if not match or first[match.end():].startswith("="):  # 'cuda_arch=70' is a variant
        return None
    return match.group(0)


def dependency_names(text):
    """The packages a spec string names after ^, but not those of a virtual edge
    (^[virtuals=mpi] openmpi)."""
    return [name for edge, name in re.findall(r"\^\s*(\[[^\]]*\])?\s*([\w-]+)", text or "")
            if "virtuals" not in edge]


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


# --- Loading the recipe.
_loads = 0


def load_recipe(git_url=None):
    """The recipe's Kodo class, loaded with KODO_GIT_URL set to git_url (None: unset)."""
    global _loads
    _loads += 1
    saved = os.environ.pop("KODO_GIT_URL", None)
    if git_url is not None:
        os.environ["KODO_GIT_URL"] = git_url
    try:
        spec = importlib.util.spec_from_file_location(f"kodo_recipe_{_loads}", RECIPE)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.Kodo
    finally:
        os.environ.pop("KODO_GIT_URL", None)
        if saved is not None:
            os.environ["KODO_GIT_URL"] = saved


def show(kind, args, kwargs):
    """A directive as the recipe would spell it."""
    words = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()
                                       if v is not None and k in ("when", "commit", "tag",
                                                                  "branch", "git", "url")]
    return f"{kind}({', '.join(words)})"


# --- Versions: pinned to commits of this repository.
def git_checkout_state():
    """'full', 'shallow', or why the repository's history cannot be read."""
    top = git("rev-parse", "--show-toplevel")
    if top.returncode != 0:
        return f"{ROOT} is not a git checkout ({(top.stderr.strip().splitlines() or ['?'])[0]})"
    if pathlib.Path(top.stdout.strip()).resolve() != ROOT:
        return f"{ROOT} is not the top of a git checkout"
    shallow = git("rev-parse", "--is-shallow-repository").stdout.strip() == "true"
    return "shallow" if shallow else "full"


def check_version(name, kwargs, state):
    label = show("version", (name,), kwargs)
    if "tag" in kwargs:
        problem(f"{label}: tag= (no tag reaches a clone of kodo's repository; pin the "
                "release to its commit: version('X.Y.Z', commit='<40 hex digits>'), "
                "docs/releasing.md)")
        return
    if "branch" in kwargs:
        if (name, kwargs["branch"]) != ("main", "main"):
            problem(f"{label}: a branch other than version('main', branch='main') (a "
                    "release is a commit: docs/releasing.md)")
        return
    sha = kwargs.get("commit")
    if sha is None:
        problem(f"{label}: neither commit= nor branch='main' (docs/releasing.md)")
        return
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        problem(f"{label}: commit= is not a full commit id (40 lower-case hex digits)")
        return
    if state not in ("full", "shallow"):
        notes.append(f"commit of {name} not checked: {state}")
        return
    if git("cat-file", "-e", f"{sha}^{{commit}}").returncode != 0:
        if state == "shallow":
            notes.append(f"commit of {name} not checked: a shallow clone")
        else:
            problem(f"{label}: {sha} is no commit of the repository at {ROOT}")
        return
    cmake = git("show", f"{sha}:CMakeLists.txt").stdout
    match = re.search(r"project\(\s*kodo\s+VERSION\s+([\d.]+)", cmake)
    said = match.group(1) if match else "no version"
    if said != name:
        problem(f"{label}: that commit's CMakeLists.txt says VERSION {said}, not {name}")
    else:
        verified.append(f"{name} = commit {sha[:12]}")


def check_versions(versions):
    state = git_checkout_state()
    for name, kwargs in versions.items():
        check_version(name, kwargs, state)
    if "main" not in versions:
        problem("no version('main', branch='main')")
    match = re.search(r"^## (\d+\.\d+\.\d+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    if match and match.group(1) not in versions:
        problem(f"CHANGELOG's newest release {match.group(1)} has no version() in the recipe "
                f"(version('{match.group(1)}', commit='<its commit>'), docs/releasing.md)")


# --- Where the source comes from, and what `spack info` shows of the package.
def check_source(kodo, directives):
    default = "file://" + os.path.abspath(RECIPE.parents[5])
    if kodo.git != default:
        problem(f"without KODO_GIT_URL, git is {kodo.git!r}, not {default!r} (the checkout "
                "the recipe lives in)")
    other = "ssh://kodo-lint.invalid/kodo.git"
    overridden = load_recipe(other)
    if overridden.git != other:
        problem(f"KODO_GIT_URL={other} gives git = {overridden.git!r}: the recipe ignores "
                "KODO_GIT_URL (git = os.environ.get('KODO_GIT_URL') or 'file://' + ...)")
    if "file://" in str(getattr(kodo, "url", "") or ""):
        problem(f"url = {kodo.url!r}: a file:// URL hard-coded (the source is git, from "
                "KODO_GIT_URL)")
    for kind, args, kwargs in directives:
        for key in ("git", "url"):
            if "file://" in str(kwargs.get(key) or ""):
                problem(f"{show(kind, args, kwargs)}: a file:// URL hard-coded (the source "
                        "is the recipe's git, from KODO_GIT_URL)")


def check_metadata(kodo, directives):
    homepage = getattr(kodo, "homepage", None)
    if not isinstance(homepage, str) or not re.match(r"[a-z][a-z0-9+.-]*://\S+", homepage):
        problem(f"homepage is {homepage!r}: no homepage URL (spack info shows it; Spack's "
                "audit wants one)")
    names = [n for kind, args, _ in directives if kind == "maintainers" for n in args]
    if not names or not all(isinstance(n, str) and n.strip() for n in names):
        problem("no maintainers(...) (Spack's audit wants them)")
    if not (kodo.__doc__ or "").strip():
        problem("the class Kodo has no docstring (Spack's audit wants one)")


# --- What `spack audit` refuses (spack/lib/spack/spack/audit.py).
def check_audit(own, base):
    for kind, args, kwargs in own:
        label = show(kind, args, kwargs)
        when = kwargs.get("when") or ""
        texts = [when] + [a for a in args if isinstance(a, str)]
        if any("kodo" in dependency_names(t) for t in texts) or \
                (kind == "depends_on" and package_name(args[0]) == "kodo"):
            problem(f"{label}: kodo depends on itself")
            continue
        named = package_name(when)
        if named and named != "kodo" and kind != "conflicts":
            problem(f"{label}: when= names the package {named!r} (Spack's audit: write "
                    f"'^{when}')")
        if kind != "depends_on":
            continue
        dep = package_name(args[0])
        if dependency_names(args[0]):
            problem(f"{label}: a nested dependency (Spack's audit: one depends_on per "
                    "package)")
        if dep in dependency_names(when):
            problem(f"{label}: self-referential (its when= names {dep} itself: Spack's "
                    "audit refuses it; state a conflict, or a condition on kodo)")
    check_repeated_conflicts(own, base)


def conflict_key(args, kwargs):
    """A conflict as an unordered pair of sorted token sets: conflicts('a', when='b') and
    conflicts('b', when='a') state the same thing."""
    sides = (args[0], kwargs.get("when") or "")
    return frozenset(tuple(sorted(side.split())) for side in sides)


def check_repeated_conflicts(own, base):
    stated = {conflict_key(args, kwargs): owner for owner, (kind, args, kwargs) in base
              if kind == "conflicts"}
    for kind, args, kwargs in own:
        if kind != "conflicts":
            continue
        key = conflict_key(args, kwargs)
        if key in stated:
            problem(f"{show(kind, args, kwargs)}: repeats a conflict {stated[key]} already "
                    "states (drop it)")
        stated[key] = "the recipe"


# --- Kokkos' rules for CUDA.
def when_tokens(kwargs):
    return (kwargs.get("when") or "").split()


def asks_kokkos_wrapper(kind, args, kwargs):
    """True where the directive makes +cuda (with gcc, or always) use Kokkos +wrapper."""
    tokens = when_tokens(kwargs)
    if "+cuda" not in tokens or not all(t == "+cuda" or t.startswith("%gcc") for t in tokens):
        return False
    spec = args[0] if args else ""
    if kind == "depends_on":
        return package_name(spec) == "kokkos" and "+wrapper" in spec.replace(" ", "")
    compact = spec.replace(" ", "")
    if kind == "requires":
        return compact.startswith("^kokkos") and "+wrapper" in compact
    if kind == "conflicts":
        return compact.startswith("^kokkos") and "~wrapper" in compact
    return False


def refuses_kokkos4_without_lambdas(kind, args, kwargs):
    """True where the directive keeps +cuda from a Kokkos 4 without +cuda_lambda, and
    leaves Kokkos 5 (which has no such variant) allowed."""
    if "+cuda" not in when_tokens(kwargs):
        return False
    spec = (args[0] if args else "").replace(" ", "")
    if kind == "conflicts":
        return spec.startswith("^kokkos@:4") and "~cuda_lambda" in spec
    if kind == "requires":
        when = (kwargs.get("when") or "").replace(" ", "")
        return "+cuda_lambda" in spec and "^kokkos@:4" in when
    return False


def check_kokkos_cuda(own):
    if not any(asks_kokkos_wrapper(*d) for d in own):
        problem("+cuda with gcc does not ask for Kokkos' nvcc_wrapper "
                "(depends_on('kokkos+wrapper', when='+cuda %gcc')): Kokkos' recipe stops on "
                "+cuda ~wrapper unless its compiler is clang")
    if not any(refuses_kokkos4_without_lambdas(*d) for d in own):
        problem("a Kokkos 4 without device lambdas is not refused for +cuda "
                "(conflicts('^kokkos@:4 ~cuda_lambda', when='+cuda', msg=...))")


# --- The oldest compilers.
def version_tuple(text):
    return tuple(int(part) for part in text.split("."))


def rejects_major(upper, major):
    """True where a range @:upper holds every release of `major` (@:10 does, @:10.2 not)."""
    return upper[0] > major or (upper[0] == major and len(upper) == 1)


def check_compiler_floor(own):
    for compiler, (label, needed, names, why) in COMPILER_FLOORS.items():
        floors = []
        for kind, args, kwargs in own:
            match = re.fullmatch(rf"%({'|'.join(names)})@:([\d.]+)", args[0].strip()) \
                if kind == "conflicts" and not kwargs.get("when") else None
            if match:
                floors.append((version_tuple(match.group(2)), args[0], kwargs.get("msg")))
        if not floors:
            problem(f"no compiler floor for {label}: conflicts('%{compiler}@:{needed - 1}', "
                    f"msg=...) (kodo needs {label} {needed}: {why})")
            continue
        upper, spec, msg = max(floors)
        if not rejects_major(upper, needed - 1):
            problem(f"conflicts({spec!r}) lets {label} {needed - 1} through: kodo needs "
                    f"{label} {needed} (conflicts('%{compiler}@:{needed - 1}', msg=...))")
        if not (msg or "").strip():
            problem(f"conflicts({spec!r}) has no msg= (say which {label} kodo needs)")


# --- Variants, dependencies, GPU architectures, cmake_args().
def check_directive_variants(directives, variants):
    for kind, args, kwargs in directives:
        for text in [kwargs.get("when") or ""] + ([args[0]] if kind == "conflicts" else []):
            for name, value in variant_tokens(text):
                if name not in variants:
                    problem(f"{kind}({args[0]!r}, when={kwargs.get('when')!r}): no variant {name!r}")
                elif not isinstance(value, bool) and variants[name]["values"] \
                        and value not in variants[name]["values"]:
                    problem(f"{kind}(...{text!r}): {name}={value} is not one of its values")


def check_dependencies(depends):
    needed = {"kokkos", "ucx", "mpi", "xxhash", "cmake", "hwloc", "googletest"}
    have = {package_name(s) for s, _ in depends}
    for name in sorted(needed - have):
        problem(f"no depends_on({name!r})")
    if not any(s.startswith("kokkos@4.6:") for s, _ in depends):
        problem("kokkos is not asked for at 4.6 or newer (depends_on('kokkos@4.6:...'))")


def check_gpu_architectures(depends):
    from spack_repo.builtin.build_systems.cuda import CudaPackage
    from spack_repo.builtin.build_systems.rocm import ROCmPackage
    for dep, variant, values in (("kokkos", "cuda_arch", CudaPackage.cuda_arch_values),
                                 ("ucx", "cuda_arch", CudaPackage.cuda_arch_values),
                                 ("kokkos", "amdgpu_target", ROCmPackage.amdgpu_targets)):
        for value in values:
            token = f"{variant}={value}"
            if not any(s.startswith(dep) and token in s.split() and token in w.split()
                       for s, w in depends):
                problem(f"{token} does not reach {dep} (depends_on('{dep}... {token}', when='... {token}'))")


def check_cmake_args(kodo, variants):
    """cmake_args() in each configuration: the options exist, with allowed values."""
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
    return checked


# --- repo.yaml and the environments.
def check_repo_yaml(yaml):
    path = REPO / "repo.yaml"
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        problem(f"{path.name}: does not parse as YAML: {' '.join(str(error).split())}")
        return
    if not isinstance(data, dict) or not isinstance(data.get("repo"), dict) \
            or data["repo"].get("namespace") != "kodo":
        problem("spack_repo/kodo/repo.yaml: namespace is not kodo")


def check_kodo_spec(where, text, variants):
    for name, value in variant_tokens(text):
        if name not in variants:
            problem(f"{where}: '{text}': kodo has no variant {name!r}")
        elif not isinstance(value, bool) and variants[name]["values"] \
                and value not in variants[name]["values"]:
            problem(f"{where}: '{text}': {name}={value} is not one of its values")


def check_environment(path, yaml, variants):
    where = path.relative_to(SPACK_DIR.parent)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        problem(f"{where}: does not parse as YAML: {' '.join(str(error).split())}")
        return
    if not isinstance(data, dict) or not isinstance(data.get("spack"), dict):
        problem(f"{where}: no top-level 'spack:' mapping")
        return
    specs = data["spack"].get("specs")
    if not isinstance(specs, list):
        problem(f"{where}: spack.specs is not a list")
        return
    kodo_specs = 0
    for number, entry in enumerate(specs, 1):
        if isinstance(entry, dict) and set(entry) <= {"matrix", "exclude"}:
            continue  # a spec matrix
        if not isinstance(entry, str):
            problem(f"{where}: spack.specs entry {number} is a YAML "
                    f"{type(entry).__name__}, not a spec string ({entry!r}); quote a spec "
                    "that holds ': ' (e.g. after a version range)")
            continue
        if package_name(entry) == "kodo":
            kodo_specs += 1
            check_kodo_spec(where, entry, variants)
    if not kodo_specs:
        problem(f"{where}: no kodo spec")


def check_environments(yaml, variants):
    environments = sorted(SPACK_DIR.rglob("spack.yaml"))
    if not environments:
        problem(f"no spack.yaml under {SPACK_DIR}")
    for path in environments:
        check_environment(path, yaml, variants)
    return environments


def main():
    try:
        import yaml
    except ImportError:
        print("spack recipe: PyYAML is missing: the environments' spack.yaml cannot be parsed "
              "(kodo's environment installs python3-yaml, scripts/lib/env.sh; elsewhere: "
              "apt-get install python3-yaml, or pip install pyyaml)")
        return 1
    compile(RECIPE.read_text(), str(RECIPE), "exec")  # a syntax error fails here, with its line
    kodo = load_recipe()
    from spack_repo.builtin.build_systems.cmake import CMakePackage
    if not issubclass(kodo, CMakePackage):
        problem("Kodo is not a CMakePackage")

    directives = kodo.directives()
    own = list(kodo.__dict__.get("_own_directives", []))
    base = [(klass.__name__, d) for klass in kodo.__mro__[1:]
            for d in klass.__dict__.get("_own_directives", [])]
    variants = {args[0]: kwargs for kind, args, kwargs in directives if kind == "variant"}
    depends = [(args[0], kwargs.get("when") or "") for kind, args, kwargs in directives
               if kind == "depends_on"]
    versions = {args[0]: kwargs for kind, args, kwargs in own if kind == "version"}

    check_versions(versions)
    check_source(kodo, directives)
    check_metadata(kodo, directives)
    check_audit(own, base)
    check_kokkos_cuda(own)
    check_compiler_floor(own)
    check_directive_variants(directives, variants)
    check_dependencies(depends)
    check_gpu_architectures(depends)
    checked = check_cmake_args(kodo, variants)
    check_repo_yaml(yaml)
    environments = check_environments(yaml, variants)

    if problems:
        for text in problems:
            print(f"spack recipe: {text}")
        return 1
    releases = f" ({', '.join(verified)}, its CMakeLists.txt says so)" if verified else ""
    print(f"spack recipe: ok ({len(versions)} versions: {', '.join(versions)}{releases}; "
          f"{len(variants)} variants; options checked against kodo's CMake: "
          f"{', '.join(sorted(checked))}; {len(environments)} environment(s))"
          + "".join(f"; {note}" for note in notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
