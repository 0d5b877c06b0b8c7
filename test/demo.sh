#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The demo as a newcomer runs it: the build's output stays in its log, both runs verify,
# and the summary says in words what ran and what to try next. Run by scripts/test after
# ctest (scripts/demo enters the environment itself).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
fail() {
  printf 'demo: FAILED: %s\n' "$*" >&2
  exit 1
}
out=$("$repo/scripts/demo" 2>/dev/null) || fail "scripts/demo exited with status $?:"$'\n'"$out"
expect() {
  grep -qE -- "$1" <<<"$out" || fail "expected a line matching '$1' in:"$'\n'"$out"
}
expect '^verified: the checksum equals the serial reference'"'"'s$'
expect '^  Both results were verified'
expect '^  Time per iteration: [0-9.]+ us with 4 units per rank, [0-9.]+ us with 1 \([0-9.]+x that\)\.$'
expect '16 units \(4 x 4 x 1 blocks, 4 per rank\)'
expect '^  scripts/run -n 4 jacobi3d '
# Nothing of the build on stdout: no CMake or ninja lines.
if grep -qE '^(\[[0-9]+/[0-9]+\]|-- |ninja: )' <<<"$out"; then
  fail "build output reached the terminal:"$'\n'"$out"
fi
# A bad argument fails with the program's message and a non-zero status.
rc=0
err=$("$repo/scripts/demo" --odf nonsense 2>&1) || rc=$?
[[ $rc -ne 0 ]] || fail "scripts/demo --odf nonsense succeeded"
grep -q "jacobi3d with 1 unit per rank failed" <<<"$err" || fail "no failure message in:"$'\n'"$err"
echo "demo: passed"
