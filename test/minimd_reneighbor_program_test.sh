#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# MiniMD's reneighboring program (apps/minimd/atom_unit.hpp) against reneighboring unit by
# unit: every atom's position and velocity equal to the last bit (the units' checkpoint
# files compared byte for byte) for unit grids with and without dimensions of one unit,
# with atoms crossing units all the time (--drift), and where a count outgrows its room
# (the step run again unit by unit), on one rank and on 2 and 4; and a thermo step the
# plain steps' program runs.
#   test/minimd_reneighbor_program_test.sh MINIMD REFERENCE WORKDIR NUMPROC_FLAG LAUNCHER...
# shellcheck source=test/minimd_runs.sh
source "$(dirname "$0")/minimd_runs.sh" minimd_reneighbor_program_test "$@"
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
# Units with neighbours on other ranks (the program is the default there too): the
# program's messages to them go through its channels. A slower drift than above (smaller
# units): on 2 ranks at ODF 8 it still outgrows a room.
for case in "2 4" "2 8 --drift 20 -20 20" "4 2 --drift 20 -20 20"; do
  read -r ranks odf drift <<<"$case"
  tag="ranks${ranks}_odf${odf}${drift:+_drift}"
  run "$ranks" "$work/$tag-program" --odf "$odf" $drift
  grep -q "Reneighboring steps: reneighboring program" "$out" || fail "$ranks ranks: no program"
  grep -Eq "1[0-9] reneighboring steps by their program" "$out" || fail "program steps not run"
  [ "$odf" = 8 ] && { grep -Eq "[1-9][0-9]* run again unit by unit" "$out" ||
    fail "$ranks ranks: no step outgrew its room (the case this run is for)"; }
  run "$ranks" "$work/$tag-units" --odf "$odf" $drift --reneighbor-program 0
  grep -q "Reneighboring steps: unit by unit" "$out" || fail "$ranks ranks: not unit by unit"
  same "$work/$tag-program" "$work/$tag-units"
done
# A thermo step that rebuilds no lists (the last, 290) run by the plain steps' program, the
# units summing its thermo after it: the line that step prints unit by unit, on one rank
# and on two.
thermo_290() {
  local ranks=$1 odf=$2
  shift 2
  timeout 300 "${launch[@]}" "$np" "$ranks" "$minimd" -s 10 -n 290 --half_neigh 0 --odf "$odf" \
    "$@" >"$out" 2>"$err" || fail "exit status $? from: $*"
  awk '$1 == 290 { print $2, $3, $4 }' "$out"
}
for case in "1 8" "2 4"; do
  read -r ranks odf <<<"$case"
  by_units=$(thermo_290 "$ranks" "$odf" --step-program 0)
  [ -n "$by_units" ] || fail "$ranks rank(s): no thermo line at step 290"
  by_program=$(thermo_290 "$ranks" "$odf")
  grep -q "the other 0 in" "$out" || fail "$ranks rank(s): a step was not run by a program"
  [ "$by_program" = "$by_units" ] ||
    fail "$ranks rank(s): step 290's thermo by the program ($by_program) is not unit by unit's ($by_units)"
done
echo "minimd_reneighbor_program_test: passed"
