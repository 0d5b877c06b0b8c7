#!/usr/bin/env bash
# MiniMD's reneighboring program (apps/minimd/atom_unit.hpp) against reneighboring unit by
# unit: every atom's position and velocity equal to the last bit (the units' checkpoint
# files compared byte for byte) for unit grids with and without dimensions of one unit,
# with atoms crossing units all the time (--drift), and where a count outgrows its room
# (the step run again unit by unit). On two ranks the reneighboring stays unit by unit.
#   test/minimd_reneighbor_program_test.sh MINIMD REFERENCE WORKDIR NUMPROC_FLAG LAUNCHER...
set -uo pipefail
minimd=$1 reference=$2 work=$3 np=$4
shift 4
launch=("$@")
rm -rf "$work" && mkdir -p "$work"
out="$work/out.txt" err="$work/err.txt"

fail() {
  echo "minimd_reneighbor_program_test: $*"
  echo "--- last output:"
  cat "$out"
  echo "--- its standard error:"
  cat "$err"
  exit 1
}
# run RANKS DIR ARGS...: minimd with a checkpoint into DIR at step 280; must exit 0 and
# verify its thermo against miniMD's.
run() {
  local ranks=$1 dir=$2
  shift 2
  echo "+ $ranks rank(s): $*" >"$out"
  timeout 300 "${launch[@]}" "$np" "$ranks" "$minimd" -s 10 -n 280 --half_neigh 0 \
    --checkpoint-every 280 --checkpoint-dir "$dir" --reference "$reference" "$@" \
    >>"$out" 2>"$err" || fail "exit status $? from: $*"
  grep -q "verified: 3 thermo line" "$out" || fail "thermo not verified: $*"
}
# same A B: the units' saved atoms of two runs, byte for byte.
same() {
  local files=0
  for f in "$1"/checkpoint-*/*.state; do
    cmp -s "$f" "$2/${f#"$1"/}" || fail "$f differs from its run unit by unit"
    files=$((files + 1))
  done
  [ "$files" -gt 0 ] || fail "no unit files in $1"
}

for odf in 8 4 3 2; do
  for drift in "" "--drift 40 -40 40"; do
    tag="odf${odf}${drift:+_drift}"
    run 1 "$work/$tag-program" --odf "$odf" $drift
    grep -q "Reneighboring steps: reneighboring program" "$out" || fail "no reneighboring program"
    grep -Eq "1[0-9] reneighboring steps by their program" "$out" || fail "program steps not run"
    [ -n "$drift" ] && [ "$odf" = 8 ] && { grep -Eq "[1-9][0-9]* run again unit by unit" "$out" ||
      fail "no step outgrew its room (the case this run is for)"; }
    run 1 "$work/$tag-units" --odf "$odf" $drift --reneighbor-program 0
    grep -q "Reneighboring steps: unit by unit" "$out" || fail "--reneighbor-program 0 ignored"
    same "$work/$tag-program" "$work/$tag-units"
  done
done
# Where units have neighbours on other ranks, reneighboring stays unit by unit.
run 2 "$work/two-ranks" --odf 4
grep -q "Reneighboring steps: unit by unit" "$out" || fail "two ranks: not unit by unit"
echo "minimd_reneighbor_program_test: passed"
