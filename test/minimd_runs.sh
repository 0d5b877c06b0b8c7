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
# unit_bytes CHECKPOINT C L: the saved state of unit L of collection C, found through the
# manifest's index ("unit C L RANK OFFSET BYTES XXH3_..."): where it lies in its rank file.
unit_bytes() {
  local where
  where=$(awk -v c="$2" -v l="$3" '$1 == "unit" && $2 == c && $3 == l { print $4, $5, $6 }' \
    "$1/manifest")
  [[ -n $where ]] || fail "no unit $3 of collection $2 in $1/manifest"
  read -r rank offset bytes <<<"$where"
  tail -c +$((offset + 1)) "$1/rank-$rank.state" | head -c "$bytes"
}
same() {
  local units=0 a b c l
  a=$(echo "$1"/checkpoint-*) b=$(echo "$2"/checkpoint-*)
  [[ -f $a/manifest && -f $b/manifest ]] || fail "no single checkpoint in $1 and $2"
  while read -r c l; do
    cmp -s <(unit_bytes "$a" "$c" "$l") <(unit_bytes "$b" "$c" "$l") ||
      fail "unit $l of collection $c differs between $a and $b"
    units=$((units + 1))
  done < <(awk '$1 == "unit" { print $2, $3 }' "$a/manifest")
  [ "$units" -gt 0 ] || fail "no units in $a"
}
