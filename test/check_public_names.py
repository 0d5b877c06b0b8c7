#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Every public name is listed: what namespace kodo declares is docs/public_names.txt.

usage: check_public_names.py --doxygen DOXYGEN --doxyfile DOXYFILE --work DIR
                             --root REPOSITORY_ROOT HEADER...
       check_public_names.py --self-test --doxygen DOXYGEN --doxyfile DOXYFILE --work DIR

Doxygen runs over the installed headers (HEADER...: kodo's HEADERS file set, as the API
reference reads them) with the API reference's settings (DOXYFILE, docs/Doxyfile.in: the
detail/ folders and kodo::detail left out) and, in DIR, XML output and every name
extracted, documented or not. The names it finds at namespace scope in kodo and in any
namespace inside it but kodo::detail (classes, structs, enums, functions, variables,
aliases, concepts; not their members; a nested namespace's names as ns::name) are the
public names, each with the header that declares it. Names in a branch of #if that the
build does not take are not seen.

REPOSITORY_ROOT/docs/public_names.txt lists them, one a line under the header that
declares them (a line `# <kodo/core/error.hpp>` opens a header's group; other lines from
`#` on are comments); a name declared by two headers (overloads) is listed under each.
The check fails on a declared name the list does not hold (unlisted), on a listed one no
header declares there (stale, or listed under a header it moved from), on a listed name
that src/kodo/kodo.hpp's /// list does not name as `@ref kodo::Name`, on a name doxygen
reads as private (the reference leaves it out, silently), and where docs/api_reference.md
does not quote the list. It prints each with what to do.
"""
import argparse
import collections
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

LIST = "docs/public_names.txt"
KODO_HPP = "src/kodo/kodo.hpp"
API_REFERENCE = "docs/api_reference.md"
QUOTE = "\\verbinclude public_names.txt"
GROUP = re.compile(r"#\s*<(kodo/[^>\s]+)>\s*$")
RULE = 'CONTRIBUTING.md, "The public surface and its changes"'


def include_roots(headers):
    """The folder above each header's outermost kodo/ folder (src/, build/include/)."""
    roots = set()
    for header in headers:
        path = pathlib.Path(header).resolve()
        tops = [p for p in path.parents if p.name == "kodo"]
        roots.add(str(tops[-1].parent if tops else path.parent))
    return sorted(roots)


def run_doxygen(doxygen, doxyfile, headers, work):
    """Doxygen's XML of `headers` in work/xml, with the API reference's settings."""
    work = work.resolve()
    shutil.rmtree(work / "xml", ignore_errors=True)  # no file of an earlier run read
    work.mkdir(parents=True, exist_ok=True)
    quoted = " ".join(f'"{h}"' for h in headers)
    roots = " ".join(f'"{r}"' for r in include_roots(headers))
    overrides = f"""
INPUT = {quoted}
OUTPUT_DIRECTORY = "{work}"
STRIP_FROM_PATH = {roots}
USE_MDFILE_AS_MAINPAGE =
EXTRACT_ALL = YES
GENERATE_HTML = NO
GENERATE_XML = YES
XML_OUTPUT = xml
XML_PROGRAMLISTING = NO
QUIET = YES
WARNINGS = NO
WARN_IF_UNDOCUMENTED = NO
WARN_AS_ERROR = NO
"""
    config = pathlib.Path(doxyfile).read_text(encoding="utf-8") + overrides
    done = subprocess.run([doxygen, "-"], input=config, text=True, cwd=work,
                          capture_output=True)
    if done.returncode != 0 or not (work / "xml" / "index.xml").exists():
        sys.exit(f"check_public_names: doxygen failed ({done.returncode}):\n{done.stderr}")
    return work / "xml"


def location(xml_dir, refid):
    """The header a compound (a class, a concept) is declared in."""
    compound = ET.parse(xml_dir / f"{refid}.xml").getroot().find("compounddef")
    return compound.find("location").get("file")


def concepts(xml_dir):
    """{namespace: [(refid, name)]} of the concepts (doxygen 1.9.8's namespace XML omits
    them; its index holds them)."""
    found = collections.defaultdict(list)
    for compound in ET.parse(xml_dir / "index.xml").getroot().findall("compound"):
        if compound.get("kind") == "concept":
            space, _, name = compound.find("name").text.rpartition("::")
            found[space].append((compound.get("refid"), name))
    return found


def declared(xml_dir, refid="namespacekodo", prefix=""):
    """{(header, name): doxygen's protection} of the names at namespace scope in kodo, less
    kodo::detail. A name doxygen reads as private is left out of the reference."""
    path = xml_dir / f"{refid}.xml"
    if not path.exists():
        return {}
    space = ET.parse(path).getroot().find("compounddef")
    names = {}
    for inner in space.findall("innerclass"):
        name = re.sub(r"<.*", "", inner.text).split("::")[-1].strip()  # a specialization
        names[(location(xml_dir, inner.get("refid")), prefix + name)] = inner.get("prot")
    for concept, name in concepts(xml_dir)[space.find("compoundname").text]:
        names[(location(xml_dir, concept), prefix + name)] = "public"
    for section in space.findall("sectiondef"):
        for member in section.findall("memberdef"):
            key = (member.find("location").get("file"), prefix + member.find("name").text)
            names[key] = member.get("prot")
    for inner in space.findall("innernamespace"):
        name = inner.text.split("::")[-1]
        if name != "detail":
            names.update(declared(xml_dir, inner.get("refid"), f"{prefix}{name}::"))
    return names


def read_list(path):
    """{(header, name): line} of the list, and what is wrong with its form."""
    listed, problems, header = {}, [], None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        group = GROUP.match(line.strip())
        if group:
            header = group.group(1)
            continue
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        if header is None:
            problems.append(f"{LIST}:{number}: {name} comes before any `# <kodo/...hpp>` line")
        elif (header, name) in listed:
            problems.append(f"{LIST}:{number}: {name} is listed twice under <{header}>")
        else:
            listed[(header, name)] = number
    return listed, problems


def named_in_kodo_hpp(text, name):
    """Whether kodo.hpp's /// comments hold `@ref kodo::name` (not kodo::name::member)."""
    comments = "\n".join(line.split("///", 1)[1] for line in text.splitlines() if "///" in line)
    return re.search(r"@ref\s+kodo::" + re.escape(name) + r"(?![\w:])", comments) is not None


def report(title, entries, advice):
    """A failure's lines: what, each entry, then what to do."""
    return [title] + [f"  {e}" for e in entries] + [f"  {line}" for line in advice]


def compare(root, names):
    """The check's failures, each as lines to print (none: the list is exact)."""
    listed, failures = read_list(root / LIST)
    if failures:
        failures = [report(f"check_public_names: {LIST} is malformed:", failures,
                           ["Each name stands on its own line under its header's group."])]
    where = collections.defaultdict(list)
    for header, name in names:
        where[name].append(header)
    unlisted = sorted(names.keys() - listed.keys())
    stale = sorted(listed.keys() - names.keys(), key=listed.get)
    hidden = sorted(key for key, protection in names.items() if protection != "public")
    if hidden:
        failures.append(report(
            f"check_public_names: doxygen reads {len(hidden)} public name(s) as private, so "
            "the API reference leaves them out:", [f"{n} in <{h}>" for h, n in hidden],
            ["A class of kodo::detail before it ends with an access label (private:) that",
             "doxygen carries over: declare the name before that class (a forward",
             "declaration of what it uses is enough)."]))
    if unlisted:
        failures.append(report(
            f"check_public_names: namespace kodo declares {len(unlisted)} name(s) {LIST} "
            "does not list:", [f"{n}, declared in <{h}>" for h, n in unlisted],
            [f"A name users call: add it to {LIST} under its header's `# <kodo/...>` line,",
             f"and to the list under namespace kodo in {KODO_HPP} as @ref kodo::Name with a phrase",
             "saying what it is for. A name only kodo's own code uses: move it into",
             "kodo::detail (a name the last release had in kodo:: keeps a [[deprecated]]",
             "form there for a minor release, listed until it goes).", RULE]))
    if stale:
        failures.append(report(
            f"check_public_names: {LIST} lists {len(stale)} name(s) no header declares where "
            "it says:",
            [f"{LIST}:{listed[(h, n)]}: {n} under <{h}>" +
             (f" (declared in <{'>, <'.join(sorted(where[n]))}>)" if n in where else "")
             for h, n in stale],
            ["A name that moved to another header: list it under that header instead. A",
             f"name removed: take it off {LIST} and off the list in {KODO_HPP} (a public",
             "name keeps a [[deprecated]] form for a minor release before it goes).", RULE]))
    text = (root / KODO_HPP).read_text(encoding="utf-8")
    missing = sorted({n for _, n in listed if not named_in_kodo_hpp(text, n)})
    if missing:
        failures.append(report(
            f"check_public_names: the list under namespace kodo in {KODO_HPP} does not name "
            f"{len(missing)} listed name(s):", missing,
            ['Add each to its part of that list as @ref kodo::Name "Name", with a phrase',
             "saying what it is for.", RULE]))
    if QUOTE not in (root / API_REFERENCE).read_text(encoding="utf-8"):
        failures.append(report(f"check_public_names: {API_REFERENCE} does not quote the list:",
                               [], [f"It holds the line {QUOTE} (the reference shows the list)."]))
    return failures


def check(args):
    root = pathlib.Path(args.root)
    xml_dir = run_doxygen(args.doxygen, args.doxyfile, args.headers, pathlib.Path(args.work))
    names = declared(xml_dir)
    if not names:
        sys.exit("check_public_names: doxygen's XML holds no name of namespace kodo")
    failures = compare(root, names)
    for lines in failures:
        print("\n".join(lines))
    headers = len({h for h, _ in names})
    print(f"check_public_names: {len({n for _, n in names})} public names in {headers} headers"
          f"{', listed' if not failures else ''}")
    return 1 if failures else 0


MADE_UP = {  # a made-up repository: its headers, kodo.hpp, the list and the reference
    "src/kodo/made_up.hpp": """#pragma once
namespace kodo {
struct Listed {};
inline constexpr int listed_value = 1;
void overloaded(int);
template <class T>
concept Listable = sizeof(T) > 0;
namespace detail {
struct Hidden {};
void hidden_function();
}  // namespace detail
}  // namespace kodo
""",
    "src/kodo/other.hpp": """#pragma once
namespace kodo {
void overloaded(double);
namespace io {
struct Sink {};
}  // namespace io
}  // namespace kodo
""",
    KODO_HPP: """#pragma once
/// @file
/// @ref kodo::Listed "Listed", @ref kodo::listed_value, @ref kodo::overloaded,
/// @ref kodo::Listable "Listable" and @ref kodo::io::Sink.
""",
    LIST: "# made up\n# <kodo/made_up.hpp>\nListed\nlisted_value\noverloaded  # (int)\n"
          "Listable\n\n# <kodo/other.hpp>\noverloaded\nio::Sink\n",
    API_REFERENCE: f"The list:\n\n{QUOTE}\n",
}
CASES = {  # what changes in the made-up repository, and what the check must print
    "the list exact": ({}, None),
    "a name made up, unlisted": (
        {"src/kodo/made_up.hpp": ("void overloaded(int);\n",
                                  "void overloaded(int);\nint made_up();\n")},
        "made_up, declared in <kodo/made_up.hpp>"),
    "a listed name no header declares": (
        {LIST: ("Listable\n", "Listable\nStaleName\n")}, "StaleName under <kodo/made_up.hpp>"),
    "a name listed under a header it left": (
        {"src/kodo/made_up.hpp": ("struct Listed {};\n", ""),
         "src/kodo/other.hpp": ("namespace io", "struct Listed {};\nnamespace io")},
        "Listed under <kodo/made_up.hpp> (declared in <kodo/other.hpp>)"),
    "a listed name kodo.hpp does not name": (
        {KODO_HPP: ('@ref kodo::Listable "Listable"', "Listable")}, "\n  Listable\n"),
    "a name doxygen reads as private": (
        {"src/kodo/other.hpp": ("}  // namespace kodo\n",
                                "}  // namespace kodo\nnamespace kodo::detail {\nclass C {\n"
                                " private:\n  int x;\n};\n}  // namespace kodo::detail\n"
                                "namespace kodo {\nint after_detail();\n}  // namespace kodo\n"),
         LIST: ("io::Sink\n", "io::Sink\nafter_detail\n"),
         KODO_HPP: ("@ref kodo::io::Sink.", "@ref kodo::io::Sink, @ref kodo::after_detail.")},
        "after_detail in <kodo/other.hpp>"),
    "a reference that does not quote the list": (
        {API_REFERENCE: (QUOTE, "")}, f"{API_REFERENCE} does not quote the list"),
}


def self_test(args):
    """The made-up repository checked as it is (passes), then with each fault (refused,
    naming it; kodo::detail's names never reported). Exits 1 on any other outcome."""
    failed = False
    for what, (edits, expected) in CASES.items():
        with tempfile.TemporaryDirectory(dir=args.work) as tree:
            root = pathlib.Path(tree)
            for rel, text in MADE_UP.items():
                old, new = edits.get(rel, ("", ""))
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text.replace(old, new, 1) if old else text)
            headers = [str(root / "src/kodo" / h) for h in ("made_up.hpp", "other.hpp", "kodo.hpp")]
            done = subprocess.run(
                [sys.executable, __file__, "--doxygen", args.doxygen, "--doxyfile", args.doxyfile,
                 "--work", str(root / "work"), "--root", tree] + headers,
                capture_output=True, text=True)
            out = done.stdout + done.stderr
            if expected is None:
                ok = done.returncode == 0 and "5 public names" in out
            else:
                ok = done.returncode == 1 and expected in out and "idden" not in out
            verdict = ("passed" if expected is None else "refused") if ok else "WRONG"
            print(f"check_public_names: self-test, {what}: {verdict}")
            if not ok:
                print(out)
            failed = failed or not ok
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("--doxygen", required=True)
    parser.add_argument("--doxyfile", required=True)
    parser.add_argument("--work", required=True, help="doxygen's output goes here")
    parser.add_argument("--root", help="the repository")
    parser.add_argument("headers", nargs="*")
    args = parser.parse_args()
    if args.self_test:
        pathlib.Path(args.work).mkdir(parents=True, exist_ok=True)
        return self_test(args)
    if not args.root or not args.headers:
        parser.error("--root and the headers are needed")
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
