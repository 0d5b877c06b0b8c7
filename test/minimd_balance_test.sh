#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# MiniMD with units that move (--balance-every): every atom's position and velocity equal
# to the last bit to the run whose units never move (the units' checkpoint files compared
# byte for byte), and the thermo equal to miniMD's log; with every unit moving at every
# balance point (rotate), on half and full lists (the step programs rebuilt), and a slab
# in vacuum balanced by greedy and refine.
#   test/minimd_balance_test.sh MINIMD REFERENCE WORKDIR NUMPROC_FLAG LAUNCHER...
# shellcheck source=test/minimd_runs.sh
source "$(dirname "$0")/minimd_runs.sh" minimd_balance_test "$@"
# run RANKS DIR ARGS...: minimd -s 8 to step 240 with a checkpoint into DIR at the end.
run() {
  local ranks=$1 dir=$2
  shift 2
  echo "+ $ranks rank(s): $*" >"$out"
  timeout 300 "${launch[@]}" "$np" "$ranks" "$minimd" -s 8 -n 240 --checkpoint-every 240 \
    --checkpoint-dir "$dir" "$@" >>"$out" 2>"$err" || fail "exit status $? from: $*"
}
# moved TEXT: the last run moved units (a line of it says TEXT).
moved() { grep -q -- "$1" "$out" || fail "no '$1' in the output"; }

n=0
# case RANKS BALANCE_ARGS -- RUN_ARGS...
case_() {
  local ranks=$1 balance=$2 expect=$3
  shift 3
  n=$((n + 1))
  run "$ranks" "$work/still$n" "$@"
  # shellcheck disable=SC2086
  run "$ranks" "$work/moving$n" "$@" $balance
  moved "$expect"
  same "$work/still$n" "$work/moving$n"
  echo "case $n: $ranks rank(s), $* with $balance: the same atoms"
}
case_ 2 "--balance-every 20 --balancer rotate" "balance at step 20: rotate moved 4 unit(s)" --odf 2
case_ 4 "--balance-every 40 --balancer rotate" "balance at step 40: rotate moved 8 unit(s)" \
  --odf 2 --half_neigh 0
case_ 2 "--balance-every 20 --balancer greedy" "balance at step 20: greedy moved" \
  --odf 4 --half_neigh 0 --slab 0.5
case_ 3 "--balance-every 60 --balancer refine" "balance at step 60: refine moved" \
  --odf 3 --slab 0.4 --comm host
# The thermo of a run whose units move is miniMD's.
echo "+ 2 rank(s): thermo" >"$out"
timeout 300 "${launch[@]}" "$np" 2 "$minimd" -s 10 -n 300 --odf 3 --balance-every 20 \
  --balancer rotate --reference "$reference" >>"$out" 2>"$err" || fail "exit status $?"
grep -q "verified: 4 thermo line" "$out" || fail "thermo not verified"
echo "minimd_balance_test: passed"
