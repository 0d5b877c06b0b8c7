# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Doxygen's input filter for the API reference (docs/Doxyfile.in, FILTER_PATTERNS): what
# doxygen reads, not the files, is changed, line for line (warnings keep their lines).
#   awk -v root=SOURCE_DIR -f kodoDocsFilter.awk FILE.md|FILE.hpp
# In a header's /// comments and in a Markdown page, outside code spans and fenced blocks:
#   - an option written plainly (--help) keeps its two dashes: doxygen would print an en
#     dash (-> \--help);
#   - a code span holding a quote (`a='b'`) gets two backticks: doxygen 1.9.8 reads a
#     backtick closed by a quote as a quotation and pairs the rest of the backticks wrongly.
# In a Markdown page only (README.md and the guides):
#   - each heading gets GitHub's id for it, prefixed by the page's name (md_readme,
#     md_porting, md_perf_readme: the file's path without docs/ and .md), which is also the
#     label of the page's title, so the HTML pages have stable names;
#   - links to a page or a heading, (other.md), (#id) and (other.md#id), become links to
#     its label (the pages kodoDocs.cmake lists; a link to another fails the run).
# Not handled: indented code blocks (the pages use fenced ones), code spans across a blank
# line (not code spans in Markdown either).

function pagelabel(rel,    s) {
  s = tolower(rel)
  sub(/\.md$/, "", s)
  sub(/^docs\//, "", s)
  gsub(/[^a-z0-9]/, "_", s)
  return "md_" s
}

# A path relative to root, with "." and ".." resolved.
function normalize(path,    n, parts, i, out, depth, stack) {
  n = split(path, parts, "/")
  depth = 0
  for (i = 1; i <= n; i++) {
    if (parts[i] == "" || parts[i] == ".") continue
    if (parts[i] == ".." && depth > 0) { depth--; continue }
    stack[++depth] = parts[i]
  }
  out = ""
  for (i = 1; i <= depth; i++) out = out (i > 1 ? "/" : "") stack[i]
  return out
}

# GitHub's id for a heading: lower case, link targets and punctuation dropped, spaces to
# hyphens. (Letters beyond ASCII are dropped too, where GitHub keeps them.)
function slug(title,    s, out, i, c) {
  s = tolower(title)
  gsub(/\]\([^)]*\)/, "", s)
  out = ""
  for (i = 1; i <= length(s); i++) {
    c = substr(s, i, 1)
    if (c ~ /[a-z0-9_-]/) out = out c
    else if (c == " ") out = out "-"
  }
  return out
}

# A link target of a Markdown page: a page's or a heading's becomes its label.
function target(t,    hash, path) {
  if (t ~ /^[a-zA-Z][a-zA-Z0-9+.-]*:/) return t  # https:, mailto:
  hash = index(t, "#")
  if (hash == 1) return "#" page "-" substr(t, 2)
  path = (hash == 0) ? t : substr(t, 1, hash - 1)
  if (path !~ /\.md$/) return t
  path = "#" pagelabel(normalize(dir "/" path))
  return (hash == 0) ? path : path "-" substr(t, hash + 1)
}

function links(t,    out, i, j) {
  out = ""
  while ((i = index(t, "](")) > 0) {
    j = index(substr(t, i + 2), ")")
    if (j == 0) break
    out = out substr(t, 1, i + 1) target(substr(t, i + 2, j - 1)) ")"
    t = substr(t, i + 2 + j)
  }
  return out t
}

# Text outside code spans: options keep their dashes (and, in a page, links are mended).
function text(t,    out, i, before, next_char) {
  if (markdown) t = links(t)
  out = ""
  while ((i = index(t, "--")) > 0) {
    out = out substr(t, 1, i - 1)
    before = (out == "") ? "" : substr(out, length(out), 1)
    next_char = substr(t, i + 2, 1)
    if (next_char ~ /[A-Za-z]/ && (before == "" || before ~ /[ \t\n(\["'|]/)) out = out "\\"
    out = out "--"
    t = substr(t, i + 2)
  }
  return out t
}

# Where in s the next run of exactly n backticks starts (0: none).
function closing(s, n,    off, i, m) {
  off = 0
  while ((i = index(s, "`")) > 0) {
    m = 0
    while (substr(s, i + m, 1) == "`") m++
    if (m == n) return off + i
    off += i + m - 1
    s = substr(s, i + m)
  }
  return 0
}

# A paragraph: its text outside code spans through text(), its code spans kept (with two
# backticks where one would be read as a quotation).
function fix(s,    out, i, n, run, rest, end, content) {
  out = ""
  while ((i = index(s, "`")) > 0) {
    out = out text(substr(s, 1, i - 1))
    s = substr(s, i)
    n = 0
    while (substr(s, n + 1, 1) == "`") n++
    run = substr(s, 1, n)
    rest = substr(s, n + 1)
    end = closing(rest, n)
    if (end == 0) {
      out = out run
      s = rest
      continue
    }
    content = substr(rest, 1, end - 1)
    if (n == 1 && index(content, "'") > 0) out = out "``" content "``"
    else out = out run content run
    s = substr(rest, end + n)
  }
  return out text(s)
}

function flush(    i, n, joined, lines) {
  if (held == 0) return
  joined = body[1]
  for (i = 2; i <= held; i++) joined = joined "\n" body[i]
  n = split(fix(joined), lines, "\n")
  for (i = 1; i <= n; i++) print prefix[i] lines[i]
  held = 0
}

function hold(before, rest) {
  held++
  prefix[held] = before
  body[held] = rest
}

function fence_line(s) {
  return s ~ /^[ \t]*(```|~~~)/ || s ~ /^[ \t]*[@\\](code|verbatim|endcode|endverbatim)([^a-z]|$)/
}

function heading(line,    level, title, id, label) {
  level = 0
  while (substr(line, level + 1, 1) == "#") level++
  title = substr(line, level + 1)
  sub(/^[ \t]+/, "", title)
  sub(/[ \t]+$/, "", title)
  if (title ~ /\{#[^}]*\}$/) return fix(line)
  id = slug(title)
  if (id in seen) id = id "-" seen[id]++
  else seen[id] = 1
  label = (headings++ == 0) ? page : page "-" id
  return fix(line) " {#" label "}"
}

BEGIN {
  held = 0
  headings = 0
  in_fence = 0
}

FNR == 1 {
  rel = FILENAME
  if (root != "" && index(rel, root "/") == 1) rel = substr(rel, length(root) + 2)
  markdown = (rel ~ /\.md$/)
  page = pagelabel(rel)
  dir = rel
  if (!sub(/\/[^\/]*$/, "", dir)) dir = ""
}

markdown {
  if (in_fence || fence_line($0)) {
    flush()
    if (fence_line($0)) in_fence = !in_fence
    print
  } else if ($0 ~ /^[ \t]*$/) {
    flush()
    print
  } else if ($0 ~ /^#+[ \t]/) {
    flush()
    print heading($0)
  } else {
    hold("", $0)
  }
  next
}

{
  i = index($0, "///")
  if (i == 0) {
    flush()
    in_fence = 0
    print
    next
  }
  before = substr($0, 1, i + 2)
  rest = substr($0, i + 3)
  if (in_fence || fence_line(rest)) {
    flush()
    if (fence_line(rest)) in_fence = !in_fence
    print
  } else if (rest ~ /^[ \t<]*$/) {
    flush()
    print
  } else {
    hold(before, rest)
  }
}

END { flush() }
