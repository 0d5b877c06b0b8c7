#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Signals to one rank of a running Jacobi3D job:
#   test/fault_signals_test.sh CASE JACOBI3D NUMPROC_FLAG LAUNCHER...
# kill: rank 1 gets SIGKILL mid-run; the job must end within 5 s, naming the lost rank.
# stop: rank 1 is stopped (SIGSTOP) for 10 s, then continued; the job must finish with
#       the serial reference's checksum.
set -uo pipefail
case=$1 jacobi=$2 np=$3
shift 3
launch=("$@")
# Standard output and error apart: a line of one can land inside a line of the other.
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fail() {
  echo "fault_signals_test ($case): $*"
  echo "--- output:"
  cat "$out"
  echo "--- standard error:"
  cat "$err"
  exit 1
}
# The pid of rank $2 among the processes descending from pid $1 (the job started from
# this shell; other jobs on the machine, such as a concurrent test, are never touched).
pid_of_rank() {
  local todo=("$1") pid child
  while ((${#todo[@]} > 0)); do
    pid=${todo[0]}
    todo=("${todo[@]:1}")
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
      echo "$pid"
      return 0
    fi
    for child in $(pgrep -P "$pid"); do todo+=("$child"); done
  done
  return 1
}
# Waits until the job's ranks have started iterating (the header is printed).
wait_for_start() {
  local i
  for i in $(seq 1 300); do
    grep -q "^jacobi3d: grid" "$out" && return 0
    sleep 0.1
  done
  fail "the job did not start"
}

case $case in
  kill)
    timeout 120 "${launch[@]}" "$np" 3 "$jacobi" -x 40 -y 36 -z 32 -i 100000000 -w 0 >"$out" 2>"$err" &
    job=$!
    wait_for_start
    sleep 1
    victim=$(pid_of_rank "$job" 1) || fail "rank 1 not found"
    kill -KILL "$victim"
    killed=$(date +%s.%N)
    wait "$job"
    status=$?
    took=$(awk -v a="$killed" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    [[ $status != 0 && $status != 124 ]] || fail "exit status $status"
    awk -v t="$took" 'BEGIN { exit !(t < 5) }' || fail "the job took $took s to end after the kill"
    grep -qE "rank 1|process rank 1" "$out" "$err" || fail "the lost rank is not named"
    echo "fault_signals_test (kill): the job ended $took s after rank 1 was killed"
    ;;
  stop)
    timeout 120 "${launch[@]}" "$np" 2 "$jacobi" -x 40 -y 36 -z 32 -i 10000 -w 0 --odf 2 --verify \
      >"$out" 2>"$err" &
    job=$!
    wait_for_start
    victim=$(pid_of_rank "$job" 1) || fail "rank 1 not found"
    kill -STOP "$victim"
    sleep 10
    kill -CONT "$victim"
    wait "$job"
    status=$?
    [[ $status == 0 ]] || fail "exit status $status"
    grep -q "verified: the checksum equals" "$out" || fail "not verified"
    # The stop may land in the program's build (init time) or in its iterations (total).
    stopped=$(awk '/^init time:|^total time:/ { s += $3 } END { printf "%.1f", s }' "$out")
    awk -v s="$stopped" 'BEGIN { exit !(s >= 9.5) }' ||
      fail "the job was not stopped while it ran (init + total time $stopped s)"
    echo "fault_signals_test (stop): verified after a 10 s stop"
    ;;
  *) fail "unknown case" ;;
esac
