#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""No giants: no function over 120 lines and no .cpp over 600 in src/ and apps/, and no
public header whose opening comment runs over 15 lines.

usage: check_sizes.py REPOSITORY_ROOT [ALLOWED]   (ALLOWED: test/check_sizes_allowed.txt)
       check_sizes.py --self-test                 (the check refuses what it should)

A function's length runs from the first line of its declaration (its template line,
return type and name) to its closing brace. Functions are found by a scan of the braces,
not by a compiler: comments, string and character literals and preprocessor lines are
blanked first, then a '{' opened in a namespace or class opens a function body when the
text before it holds a parameter list and is not a class, namespace, enum or initializer.
Only functions at namespace or class scope are measured; a lambda counts towards the
function that holds it.

A public header is one kodo installs: under src/ but not in a detail/ folder, and
cmake/version.hpp.in. Its opening comment (the /// @file block and any comment before
its first line of code, less the SPDX lines) says what the header is for and the facts a
user needs first; narratives, tables and measured numbers belong in docs/. No exceptions.

ALLOWED names the exceptions, one a line, each with its reason:
    PATH: REASON             a .cpp over 600 lines
    PATH FUNCTION: REASON    a function over 120 lines (Class::name as printed here)
An entry that no longer matches an offender fails too, so the list shrinks as giants go.
Prints each offender and exits 1 if there is any.
"""
import pathlib
import re
import sys

MAX_FUNCTION_LINES = 120
MAX_CPP_LINES = 600
MAX_PREAMBLE_LINES = 15
FOLDERS = ("src", "apps")
SCOPE_WORDS = re.compile(r"\b(class|struct|union|enum|namespace|extern)\b")
QUALIFIERS = {"const", "noexcept", "override", "final", "mutable", "volatile", "&", "&&"}
TOKEN = re.compile(r"->|::|&&|[A-Za-z_]\w*|\d[\w.']*|\S")


def blank_non_code(text):
    """Comments, literals and preprocessor lines become spaces; line breaks stay."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":  # a directive, with its continuation lines
            while i < n and not (text[i] == "\n" and text[i - 1] != "\\"):
                out.append("\n" if text[i] == "\n" else " ")
                i += 1
            continue
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.extend("\n" if ch == "\n" else " " for ch in text[i:end])
            i = end
        elif text.startswith('R"', i) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delimiter = ")" + text[i + 2:open_paren] + '"'
            end = text.find(delimiter, open_paren)
            end = n if end < 0 else end + len(delimiter)
            out.extend("\n" if ch == "\n" else " " for ch in text[i:end])
            i = end
        elif c == '"' or (c == "'" and not is_digit_separator(text, i)):
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def is_digit_separator(text, i):
    """1'000'000: a quote inside a number."""
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "'._"):
        j -= 1
    return j < i and text[j].isdigit()


def function_name(header):
    """The qualified name before the parameter list, or the variable a lambda is bound to."""
    match = re.search(r"((?:[A-Za-z_~]\w*\s*::\s*)*"
                      r"(?:operator\s*(?:\(\)|[^\s(]+)|~?[A-Za-z_]\w*))\s*\(", header)
    if "=" in header.split("(")[0]:
        match = re.search(r"([A-Za-z_]\w*)\s*=", header) or match
    return re.sub(r"\s+", "", match.group(1)) if match else "?"


def without_template_heads(header):
    """The header less its leading 'template <...>' lines (their 'class' names no class)."""
    text = header.lstrip()
    while re.match(r"template\s*<", text):
        depth, i = 0, text.index("<")
        for i in range(i, len(text)):
            depth += {"<": 1, ">": -1}.get(text[i], 0)
            if depth == 0:
                break
        text = text[i + 1:].lstrip()
    return text


def classify(header, tokens):
    """What a '{' at namespace or class scope opens: 'scope', 'function' or 'init'."""
    last = tokens[-1] if tokens else ""
    if last in {"=", ",", "(", "[", "{", "return", ""}:
        return "init" if last else "scope"
    bare = without_template_heads(header)
    before_paren = bare.split("(")[0]
    if SCOPE_WORDS.search(before_paren):
        return "scope"
    if "(" not in bare:
        return "init"
    depth, params_closed, init_list = 0, False, False
    for token in tokens:
        if token in "([":
            depth += 1
        elif token in ")]":
            depth -= 1
            params_closed = params_closed or depth == 0
        elif token == ":" and depth == 0 and params_closed:
            init_list = True
    if init_list:  # Type::Type(...) : a_(x), b_{y} {: a member's braces, then the body
        return "function" if last in {")", "}"} else "init"
    if last in {")", "}"} or last in QUALIFIERS:
        return "function"
    if "->" in tokens or "requires" in tokens:
        return "function"
    return "init"


def scan(path):
    """(name, first line, last line) of each function at namespace or class scope."""
    code = blank_non_code(path.read_text(encoding="utf-8"))
    functions = []
    stack = []  # ('scope', name) | ('function', name, first line) | ('init',)
    header, header_line = [], None
    depth_in_function = 0
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        if depth_in_function:
            if c == "{":
                depth_in_function += 1
            elif c == "}":
                depth_in_function -= 1
                if depth_in_function == 0:
                    _, name, first = stack.pop()
                    functions.append((name, first, line))
                    header, header_line = [], None
            continue
        if stack and stack[-1][0] == "init":
            if c == "{":
                stack.append(("init",))
            elif c == "}":
                stack.pop()
            header.append(c)
            continue
        if c == "{":
            text = "".join(header)
            kind = classify(text, TOKEN.findall(text))
            if kind == "function":
                classes = [entry[1] for entry in stack if entry[0] == "scope" and entry[1]]
                name = "::".join(classes + [function_name(text)])
                stack.append(("function", name, header_line or line))
                depth_in_function = 1
            elif kind == "init":
                stack.append(("init",))
                header.append(c)
            else:
                words = re.findall(
                    r"\b(?:class|struct|union)\s+(?:\[\[.*?\]\]\s*)?([A-Za-z_][\w:]*)", text)
                stack.append(("scope", words[-1] if words else ""))
                header, header_line = [], None
        elif c == "}":
            if stack:
                stack.pop()
            header, header_line = [], None
        elif c == ";":
            header, header_line = [], None
        else:
            if header_line is None and not c.isspace():
                header_line = line
            header.append(c)
    if stack or depth_in_function:
        raise ValueError(f"{path}: its braces do not balance once comments, literals and "
                         f"preprocessor lines are left out")
    return functions


def preamble_lines(text):
    """The comment lines a header opens with, before its first line of code (the SPDX
    lines, #pragma once and blank lines are skipped, not counted)."""
    count = 0
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line == "#pragma once" or "SPDX-" in line:
            continue
        if not line.startswith("//"):
            break
        count += 1
    return count


def public_headers(root):
    """The headers kodo installs: src/'s outside detail/ folders, and version.hpp's source."""
    headers = [p for p in sorted((root / "src").rglob("*.hpp")) if "detail" not in p.parts]
    version = root / "cmake" / "version.hpp.in"
    return headers + ([version] if version.exists() else [])


def long_preambles(root):
    """(path, message) of each public header whose opening comment is too long."""
    found = []
    for path in public_headers(root):
        rel = path.relative_to(root).as_posix()
        lines = preamble_lines(path.read_text(encoding="utf-8"))
        if lines > MAX_PREAMBLE_LINES:
            found.append((rel, f"{rel}: its opening comment runs {lines} lines (at most "
                               f"{MAX_PREAMBLE_LINES})"))
    return found


def read_allowed(path):
    allowed = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        what, _, reason = entry.partition(": ")
        if not reason.strip():
            sys.exit(f"check_sizes: {path}:{number}: an entry needs a reason "
                     f"(PATH[ FUNCTION]: REASON)")
        allowed[tuple(what.split())] = reason.strip()
    return allowed


def self_test():
    """Giants made up in a temporary tree: each refused, then each allowed, then the
    allowed list refused once they are gone. Exits 1 on any other outcome."""
    import subprocess
    import tempfile
    body = "  x += 1;\n" * MAX_FUNCTION_LINES
    cases = {  # file text, allowed entry, what the check must print
        "function": ("namespace a {\nstruct S {\n  int f(int x) const {\n" + body +
                     "    return [x] { return x; }();\n  }\n};\n}  // namespace a\n",
                     "src/giant.cpp S::f", "S::f runs 123 lines"),
        "file": ("// '{' \"}\" /* { */\nint k = 1'000;\n" +
                 "int g() { return 1; }\n" * MAX_CPP_LINES,
                 "src/giant.cpp", "src/giant.cpp: 602 lines"),
    }
    failed = False
    for what, (text, entry, expected) in cases.items():
        with tempfile.TemporaryDirectory() as root:
            tree = pathlib.Path(root)
            (tree / "src").mkdir()
            (tree / "apps").mkdir()
            allowed = tree / "allowed.txt"
            run = lambda: subprocess.run([sys.executable, __file__, root, str(allowed)],
                                         capture_output=True, text=True)
            (tree / "src" / "giant.cpp").write_text(text)
            allowed.write_text("")
            refused = run()
            allowed.write_text(f"{entry}: a test\n")
            passed = run()
            (tree / "src" / "giant.cpp").write_text("int g() { return 1; }\n")
            stale = run()
            ok = (refused.returncode == 1 and expected in refused.stdout and
                  passed.returncode == 0 and stale.returncode == 1 and
                  "no longer over the limit" in stale.stdout)
            print(f"check_sizes: self-test, a giant {what}: {'refused' if ok else 'NOT refused'}")
            failed = failed or not ok
    return 1 if failed or not self_test_preamble() else 0


def self_test_preamble():
    """A public header opening with 16 comment lines is refused, one with 15 passes, and a
    detail/ header is not measured."""
    import subprocess
    import tempfile
    head = "// SPDX-FileCopyrightText: x\n// SPDX-License-Identifier: x\n#pragma once\n"
    text = lambda lines: head + "/// @file\n" + "/// words\n" * (lines - 1) + "\nint f();\n"
    with tempfile.TemporaryDirectory() as root:
        tree = pathlib.Path(root)
        (tree / "src" / "kodo" / "detail").mkdir(parents=True)
        (tree / "apps").mkdir()
        allowed = tree / "allowed.txt"
        allowed.write_text("")
        run = lambda: subprocess.run([sys.executable, __file__, root, str(allowed)],
                                     capture_output=True, text=True)
        (tree / "src" / "kodo" / "wordy.hpp").write_text(text(MAX_PREAMBLE_LINES + 1))
        refused = run()
        (tree / "src" / "kodo" / "wordy.hpp").write_text(text(MAX_PREAMBLE_LINES))
        (tree / "src" / "kodo" / "detail" / "long.hpp").write_text(text(40))
        passed = run()
    ok = (refused.returncode == 1 and passed.returncode == 0 and
          "src/kodo/wordy.hpp: its opening comment runs 16 lines" in refused.stdout)
    print(f"check_sizes: self-test, a long preamble: {'refused' if ok else 'NOT refused'}")
    return ok


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.split("\n\n")[1])
    root = pathlib.Path(sys.argv[1])
    allowed = read_allowed(pathlib.Path(sys.argv[2]) if len(sys.argv) == 3
                           else root / "test" / "check_sizes_allowed.txt")
    offenders, unreadable, used, files, measured = [], [], set(), 0, 0
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".cpp", ".hpp"):
                continue
            rel = path.relative_to(root).as_posix()
            files += 1
            lines = path.read_text(encoding="utf-8").count("\n")
            if path.suffix == ".cpp" and lines > MAX_CPP_LINES:
                offenders.append(((rel,), f"{rel}: {lines} lines (at most {MAX_CPP_LINES})"))
            try:
                functions = scan(path)
            except ValueError as e:
                unreadable.append(str(e))
                continue
            for name, first, last in functions:
                measured += 1
                length = last - first + 1
                if length > MAX_FUNCTION_LINES:
                    offenders.append(((rel, name), f"{rel}:{first}: {name} runs {length} lines "
                                                   f"(at most {MAX_FUNCTION_LINES})"))
    preambles = long_preambles(root)
    for _, message in preambles:
        print(f"check_sizes: {message}: keep what the header is for and the facts a user "
              f"needs first; move narratives, tables and numbers to docs/ and link there")
    for problem in unreadable:
        print(f"check_sizes: {problem}: write it so that they do")
    bad = bool(unreadable) or bool(preambles)
    for key, message in offenders:
        if key in allowed:
            used.add(key)
            print(f"check_sizes: allowed, {message}: {allowed[key]}")
        else:
            hint = ("split it into named steps" if len(key) == 2 else
                    "cut it into files named for what they hold")
            print(f"check_sizes: {message}: {hint}")
            bad = True
    for key in allowed.keys() - used:
        print(f"check_sizes: the allowed list names {' '.join(key)}, no longer over the limit: "
              f"take it off the list")
        bad = True
    print(f"check_sizes: {files} files, {measured} functions, "
          f"within the limits: {'no' if bad else 'yes'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
