#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The results index cannot drift: perf/results/README.md names every results file, and
every results file the docs and sources cite is there.

usage: check_results_index.py REPOSITORY_ROOT
       check_results_index.py --self-test      (the check refuses what it should)

perf/results/README.md holds one table row a file, for every file under perf/results
(archive/ included, the index aside), its first cell a link to the file by its path there
(`[x.csv](x.csv)`, `[archive/0.1.0/y.txt](archive/0.1.0/y.txt)`), its last cell what cites
the file (`-`: nothing). A citation is a path `results/NAME` (`perf/results/NAME`) or a
bare results file name (a .csv or .txt name with a machine in it: _h100, _h200, _h200x2,
_vm, _host) in the repository's docs and sources: README.md, CHANGELOG.md,
CONTRIBUTING.md, docs/, perf/ outside results/, src/, apps/, test/, examples/, scripts/,
cmake/, spack/, and the results files outside archive/ (whose citations must name a file
too, but which the rows do not list).
A citation may hold `*` and `{a,b}`, and `...NAME` stands for a name whose head the text
left out. Checked:
- every file is named in the index, once, and every file the index names exists;
- every citation names at least one file; it names files at the top of perf/results
  unless it says archive/: a file the docs cite is not archived;
- each row's last cell lists exactly the docs and sources that cite its file (the
  citations from other results files aside).
Prints each problem and exits 1 if there is any.
"""
import fnmatch
import pathlib
import re
import sys

RESULTS = "perf/results"
INDEX = RESULTS + "/README.md"
ARCHIVE = "archive/"
CITING = ("README.md", "CHANGELOG.md", "CONTRIBUTING.md", "CITATION.cff", "CMakeLists.txt",
          "docs", "perf", "src", "apps", "test", "examples", "scripts", "cmake", "spack")
NAME_CHARS = r"[\w.*{},/-]"
PATH_CITATION = re.compile(r"(?<![\w-])results/(" + NAME_CHARS + r"*)")
MACHINE = re.compile(r"_(h100|h200(x\d+)?|vm|host)(?=[_.-])")
BARE_CITATION = re.compile(r"(?<![\w./*{},-])((?:\.\.\.)?[\w*{},-]+\.(?:csv|txt))(?![\w.])")
INDEX_ROW = re.compile(r"^\|\s*\[`?([^]`]+)`?\]\(([^)]+)\)\s*\|(.*)\|\s*$")


def expand_braces(pattern):
    """a{b,c}d -> [abd, acd]; nested braces too."""
    match = re.search(r"\{([^{}]*)\}", pattern)
    if not match:
        return [pattern]
    head, tail = pattern[:match.start()], pattern[match.end():]
    return [out for part in match.group(1).split(",")
            for out in expand_braces(head + part + tail)]


def results_files(root):
    """Paths relative to perf/results of every file under it, the index aside."""
    base = root / RESULTS
    return sorted(p.relative_to(base).as_posix() for p in base.rglob("*")
                  if p.is_file() and p.relative_to(base).as_posix() != "README.md")


def citing_files(root, skip):
    """(path relative to root, text) of every text file whose citations count."""
    for entry in CITING:
        top = root / entry
        paths = [top] if top.is_file() else sorted(top.rglob("*")) if top.is_dir() else []
        for path in paths:
            rel = path.relative_to(root).as_posix()
            if not path.is_file() or rel.startswith(RESULTS + "/") or path.resolve() in skip:
                continue
            try:
                yield rel, path.read_text(encoding="utf-8")
            except UnicodeDecodeError:  # a plot, a binary
                continue
    for rel in results_files(root):
        if not rel.startswith(ARCHIVE):
            yield RESULTS + "/" + rel, (root / RESULTS / rel).read_text(encoding="utf-8")


def citations(text):
    """The patterns, relative to perf/results, that a text cites."""
    found = []
    for match in PATH_CITATION.finditer(text):
        name = match.group(1).rstrip(".,")
        if name and not name.endswith("/"):
            found.append(name)
    for match in BARE_CITATION.finditer(text):
        name = match.group(1)
        if name.startswith("...") or MACHINE.search(name):
            found.append("*" + name[3:] if name.startswith("...") else name)
    return found


def matches(pattern, files):
    """The files a cited pattern names: archived ones only when it says archive/."""
    archived = pattern.startswith(ARCHIVE)
    pool = [f for f in files if f.startswith(ARCHIVE) == archived]
    named = set()
    for one in expand_braces(pattern):
        named.update(f for f in pool if fnmatch.fnmatchcase(f, one)
                     and ("/" not in f or archived))
    return named


def read_index(path):
    """{name: [row's cells]} and the problems of the index itself."""
    rows, problems = {}, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = INDEX_ROW.match(line)
        if not match:
            continue
        name, target, rest = match.groups()
        if name != target:
            problems.append(f"{INDEX}:{number}: the row of {name} links to {target}")
        if name in rows:
            problems.append(f"{INDEX}:{number}: {name} has a second row")
        rows[name] = [cell.strip() for cell in rest.split("|")]
    return rows, problems


def check(root):
    files = results_files(root)
    index = root / INDEX
    if not index.is_file():
        return [f"{INDEX} is missing: it indexes every file under {RESULTS}"]
    rows, problems = read_index(index)
    for name in files:
        if name not in rows:
            problems.append(f"{RESULTS}/{name} has no row in {INDEX}: add one (what it shows, "
                            f"machine, run, what cites it)")
    for name in sorted(rows.keys() - set(files)):
        problems.append(f"{INDEX} has a row for {name}, which is not in {RESULTS}")
    cited_by = {name: set() for name in files}
    skip = {pathlib.Path(__file__).resolve()}
    for rel, text in citing_files(root, skip):
        for pattern in citations(text):
            if pattern == "README.md":  # the index itself
                continue
            named = matches(pattern, files)
            if not named:
                where = ("archived or not " if not pattern.startswith(ARCHIVE) else "not ")
                problems.append(f"{rel} cites {RESULTS}/{pattern}, which is {where}in "
                                f"{RESULTS}")
            if not rel.startswith(RESULTS + "/"):
                for name in named:
                    cited_by[name].add(rel)
    for name in files:
        if name not in rows:
            continue
        listed = {c.strip() for c in rows[name][-1].split(",")} - {"-", ""}
        want = cited_by[name]
        if listed != want:
            problems.append(f"{INDEX}: the row of {name} says it is cited by "
                            f"{', '.join(sorted(listed)) or '-'}; it is cited by "
                            f"{', '.join(sorted(want)) or '-'}")
    return problems


def self_test():
    """A made-up tree: the check passes it, then refuses each way it can drift.
    Exits 1 on any other outcome."""
    import tempfile

    def tree(root, index_rows, doc):
        base = root / RESULTS
        (base / "archive" / "0.1.0").mkdir(parents=True, exist_ok=True)
        (root / "docs").mkdir(exist_ok=True)
        (base / "a_h200.csv").write_text("# command: bench\n")
        (base / "b_h200x2_run1.txt").write_text("# as a_h200.csv\n")
        (base / "archive" / "0.1.0" / "c_vm.csv").write_text("# old\n")
        (root / "docs" / "doc.md").write_text(doc)
        (base / "README.md").write_text(
            "| file | shows | cited by |\n| --- | --- | --- |\n" +
            "".join(f"| [{n}]({n}) | x | {c} |\n" for n, c in index_rows))

    good_rows = [("a_h200.csv", "docs/doc.md"), ("b_h200x2_run1.txt", "docs/doc.md"),
                 ("archive/0.1.0/c_vm.csv", "-")]
    good_doc = ("See `perf/results/a_h200.csv` and `...h200x2_run{1,2}.txt` "
                "(perf/results/README.md).\n")
    cases = {  # what drifted: (index rows, doc, what a problem must say)
        "nothing": (good_rows, good_doc, None),
        "a file without a row": (good_rows[1:], good_doc, "a_h200.csv has no row"),
        "a row without a file": (good_rows + [("d_h100.csv", "-")], good_doc,
                                 "row for d_h100.csv, which is not"),
        "a citation of no file": (good_rows, good_doc + "`e_h200.csv`\n",
                                  "cites perf/results/e_h200.csv, which is archived or not"),
        "a citation of an archived file": (good_rows, good_doc + "results/c_vm.csv\n",
                                           "cites perf/results/c_vm.csv"),
        "a citation the row omits": (good_rows, good_doc + "results/archive/0.1.0/c_vm.csv\n",
                                     "c_vm.csv says it is cited by -"),
        "a row naming no citer": ([(n, "docs/doc.md") for n, _ in good_rows], good_doc,
                                  "c_vm.csv says it is cited by docs/doc.md; it is cited by -"),
    }
    failed = False
    for what, (rows, doc, expected) in cases.items():
        with tempfile.TemporaryDirectory() as root:
            tree(pathlib.Path(root), rows, doc)
            problems = check(pathlib.Path(root))
            ok = (not problems if expected is None else
                  any(expected in problem for problem in problems))
            verdict = ("passed" if expected is None else "refused") if ok else "WRONG"
            print(f"check_results_index: self-test, {what}: {verdict}")
            if not ok:
                print("\n".join("  " + p for p in problems) or "  (no problem found)")
            failed = failed or not ok
    return 1 if failed else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    root = pathlib.Path(sys.argv[1])
    problems = check(root)
    for problem in problems:
        print(f"check_results_index: {problem}")
    print(f"check_results_index: {len(results_files(root))} files under {RESULTS}, "
          f"index and citations agree: {'no' if problems else 'yes'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
