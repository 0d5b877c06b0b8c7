#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# A project of one's own, outside the repository, through scripts/project: a copy of
# test/consumer (find_package(kodo), a reduction over 24 units) configured, built and
# run on 2 ranks; the variables that reach its programs; and the errors for a missing
# project, a directory without CMakeLists.txt and a program its build does not have.
# Run by scripts/test after ctest (ctest itself runs inside the environment).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
project=$repo/scripts/project
work=$(mktemp -d "${TMPDIR:-/tmp}/kodo-own-project.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
  printf 'own_project: FAILED: %s\n' "$*" >&2
  exit 1
}
# Passes when the output holds LINE exactly once.
once() {
  [[ $(grep -cxF -- "$2" <<<"$1") -eq 1 ]] || fail "expected the line '$2' once in:"$'\n'"$1"
}
expect_error() {
  local text=$1 out rc=0
  shift
  out=$("$project" "$@" 2>&1) || rc=$?
  [[ $rc -ne 0 ]] || fail "scripts/project $* succeeded; expected: $text"
  grep -qF -- "$text" <<<"$out" || fail "scripts/project $*: expected '$text' in:"$'\n'"$out"
}

cp -r "$repo/test/consumer" "$work/consumer"
out=$("$project" -n 2 "$work/consumer" consumer 2>&1) || fail "the consumer did not build or run:"$'\n'"$out"
once "$out" "consumer: sum of unit indices = 276"

# KODO_*, OMPI_* and the variables named in KODO_PASS_ENV reach programs; others do not.
build=$work/consumer/build-kodo
[[ ${KODO_ENV:-trixie} == system ]] && build+=-system
printf '#!/bin/sh\nenv\n' >"$build/show_env"
chmod +x "$build/show_env"
out=$(KODO_PASS_ENV="OWN_NAMED" OWN_NAMED=named OWN_OTHER=other KODO_OWN=kodo OMPI_OWN=ompi \
  "$project" "$work/consumer" show_env 2>&1) || fail "show_env did not run:"$'\n'"$out"
for line in OWN_NAMED=named KODO_OWN=kodo OMPI_OWN=ompi; do once "$out" "$line"; done
if [[ ${KODO_ENV:-trixie} == trixie ]] && grep -q '^OWN_OTHER=' <<<"$out"; then
  fail "OWN_OTHER reached the program, but nothing names it"
fi

# A fresh checkout (the files a clone of this tree holds, no build): scripts/project builds
# and installs the library alone, and the consumer's build directory, configured above
# against this checkout's kodo, follows the checkout it is now pointed at.
mkdir "$work/kodo"
git -C "$repo" ls-files -z --cached --others --exclude-standard |
  (cd "$repo" && xargs -0 cp --parents -t "$work/kodo" 2>/dev/null || true)
[[ -x $work/kodo/scripts/project ]] || fail "the fresh checkout in $work/kodo lacks scripts/project"
out=$(KODO_BUILD_DIR="$work/kodo/build/host" "$work/kodo/scripts/project" -n 2 "$work/consumer" consumer 2>&1) ||
  fail "scripts/project of a fresh checkout did not build or run the consumer:"$'\n'"$out"
once "$out" "consumer: sum of unit indices = 276"
grep -qF "configuring it again against $work/kodo/build/host/install" <<<"$out" ||
  fail "the consumer's build did not follow the fresh checkout:"$'\n'"$out"
[[ ! -e $work/kodo/build/host/apps/jacobi3d/jacobi3d ]] ||
  fail "scripts/project built jacobi3d, which a project does not need"

mkdir "$work/empty"
expect_error "project directory $work/absent does not exist" "$work/absent"
expect_error "has no CMakeLists.txt" "$work/empty"
expect_error "no program 'absent' in the build of $work/consumer" "$work/consumer" absent
KODO_PASS_ENV=not-a-name expect_error "KODO_PASS_ENV: 'not-a-name'" "$work/consumer" show_env
echo "own_project: passed"
