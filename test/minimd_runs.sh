# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Shared by MiniMD's tests that compare runs (sourced, not run):
#   source minimd_runs.sh TEST_NAME MINIMD REFERENCE WORKDIR NUMPROC_FLAG LAUNCHER...
# sets minimd, reference, work (emptied), np, launch, out and err (the last run's output
# and error), and defines fail MESSAGE (prints it and the last run, exits 1) and
# same A B (the units' saved atoms of two runs' checkpoints, byte for byte).
set -uo pipefail
test_name=$1 minimd=$2 reference=$3 work=$4 np=$5
shift 5
launch=("$@")
rm -rf "$work" && mkdir -p "$work"
out="$work/out.txt" err="$work/err.txt"

fail() {
  echo "$test_name: $*"
  echo "--- last output:"
  cat "$out"
  echo "--- its standard error:"
  cat "$err"
  exit 1
}
same() {
  local files=0
  for f in "$1"/checkpoint-*/*.state; do
    cmp -s "$f" "$2/${f#"$1"/}" || fail "$f differs from ${f/#"$1"/"$2"}"
    files=$((files + 1))
  done
  [ "$files" -gt 0 ] || fail "no unit files in $1"
}
