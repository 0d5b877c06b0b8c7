#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Jacobi3D scaling sweep: REPEATS jacobi3d runs per (GPU count, ODF, mode), one CSV row each.
#
#   perf/scaling_sweep.sh JACOBI3D OUT.csv strong|weak N "GPUS" "ODFS" "MODES" [ITERATIONS]
#   e.g. REPEATS=5 perf/scaling_sweep.sh jacobi3d strong_768.csv strong 768 "1 2 4" "1 2 4 8 16" "device host"
#
# strong: the grid is N^3 whatever the GPU count. weak: N^3 per GPU, the grid growing
# along x (N*G x N x N). MODES: device, host (--comm), device-sync (--sync), baseline
# (the bulk-synchronous MPI version; ODF 1 only, other ODFs are skipped); a kodo mode
# may carry +A, +B or +C (--fusion), +graphs (--graphs) or +overlap (--overlap), e.g.
# device+C+graphs. Repeats are interleaved: repeat r of every configuration runs before
# repeat r+1; the last column, repeat, counts from 1. JACOBI3D: a path, or a name looked
# up in the bin/ of the kodo install this script belongs to, then on PATH. Environment:
# REPEATS (default 3), LAUNCH (default "mpiexec -n"; the rank count is appended),
# WARMUP (default 10), KODO_MACHINE and KODO_COMMIT (recorded in the header).
set -euo pipefail
fail() {
  echo "scaling_sweep: $*" >&2
  exit 2
}
[[ $# -ge 7 && $# -le 8 ]] || { sed -n '2,17p' "$0" >&2; exit 2; }
bin=$1 out=$2 kind=$3 n=$4 gpus=$5 odfs=$6 modes=$7 iters=${8:-100}
repeats=${REPEATS:-3}
[[ $kind == strong || $kind == weak ]] || fail "kind must be strong or weak, not '$kind'"
[[ $repeats =~ ^[1-9][0-9]*$ ]] || fail "REPEATS must be a positive integer, not '$repeats'"
# Every mode's flags, worked out (and a misspelt mode refused) before any run.
declare -A mode_flags
for mode in $modes; do
  IFS=+ read -r -a parts <<<"$mode"
  case ${parts[0]} in
    device) words="--comm device" ;;
    host) words="--comm host" ;;
    device-sync) words="--comm device --sync" ;;
    baseline) words="--baseline" ;;
    *) fail "unknown mode '$mode'" ;;
  esac
  for extra in "${parts[@]:1}"; do
    case $extra in
      A | B | C) words+=" --fusion $extra" ;;
      graphs | overlap) words+=" --$extra" ;;
      *) fail "unknown mode '$mode'" ;;
    esac
  done
  mode_flags[$mode]=$words
done
# shellcheck source-path=SCRIPTDIR source=sweep_program.sh
source "$(dirname "${BASH_SOURCE[0]}")/sweep_program.sh"
sweep_program scaling_sweep JACOBI3D "$bin"
bin=$program
{
  echo "# command: REPEATS=$repeats $0 $*"
  echo "# machine: ${KODO_MACHINE:-unspecified}"
  echo "# commit: ${KODO_COMMIT:-unspecified}"
  echo "kind,n,gpus,odf,mode,grid,iterations,avg_iteration_us,checksum,residual,repeat"
} >"$out"
for rep in $(seq "$repeats"); do
  for g in $gpus; do
    x=$n
    [[ $kind == weak ]] && x=$((n * g))
    for mode in $modes; do
      for odf in $odfs; do
        [[ ${mode%%+*} == baseline && $odf != 1 ]] && continue  # the baseline runs one block per rank
        read -r -a flags <<<"${mode_flags[$mode]}"
        # shellcheck disable=SC2086
        log=$(${LAUNCH:-mpiexec -n} "$g" "$bin" -x "$x" -y "$n" -z "$n" -i "$iters" -w "${WARMUP:-10}" \
                --odf "$odf" "${flags[@]}") ||
          { echo "scaling_sweep: repeat $rep, $g GPUs, ODF $odf, $mode: exit status $?" >&2; exit 1; }
        avg=$(sed -n 's/^average iteration time: \([0-9.]*\) us$/\1/p' <<<"$log")
        sum=$(sed -n 's/^checksum: \(0x[0-9a-f]*\)$/\1/p' <<<"$log")
        res=$(sed -n 's/^residual: \([^ ]*\) .*/\1/p' <<<"$log")
        [[ -n $avg && -n $sum ]] || { echo "scaling_sweep: no result from: $log" >&2; exit 1; }
        echo "$kind,$n,$g,$odf,$mode,${x}x${n}x${n},$iters,$avg,$sum,$res,$rep" | tee -a "$out"
      done
    done
  done
done
