#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Jacobi3D scaling sweep: one jacobi3d run per (GPU count, ODF, mode), one CSV row each.
#
#   perf/scaling_sweep.sh JACOBI3D OUT.csv strong|weak N "GPUS" "ODFS" "MODES" [ITERATIONS]
#   e.g. perf/scaling_sweep.sh jacobi3d strong_768.csv strong 768 "1 2 4" "1 2 4 8 16" "device host"
#
# strong: the grid is N^3 whatever the GPU count. weak: N^3 per GPU, the grid growing
# along x (N*G x N x N). MODES: device, host (--comm), device-sync (--sync), baseline
# (the bulk-synchronous MPI version; ODF 1 only, other ODFs are skipped); a kodo mode
# may carry +A, +B or +C (--fusion), +graphs (--graphs) or +overlap (--overlap), e.g.
# device+C+graphs. Environment:
# LAUNCH (default "mpiexec -n"; the rank count is appended), WARMUP (default 10),
# KODO_MACHINE and KODO_COMMIT (recorded in the header).
set -euo pipefail
[[ $# -ge 7 ]] || { sed -n '2,13p' "$0"; exit 2; }
bin=$1 out=$2 kind=$3 n=$4 gpus=$5 odfs=$6 modes=$7 iters=${8:-100}
[[ $kind == strong || $kind == weak ]] || { echo "scaling_sweep: kind must be strong or weak" >&2; exit 2; }
# Every mode's flags, worked out (and a misspelt mode refused) before any run.
declare -A mode_flags
for mode in $modes; do
  IFS=+ read -r -a parts <<<"$mode"
  case ${parts[0]} in
    device) words="--comm device" ;;
    host) words="--comm host" ;;
    device-sync) words="--comm device --sync" ;;
    baseline) words="--baseline" ;;
    *) echo "scaling_sweep: unknown mode '$mode'" >&2; exit 2 ;;
  esac
  for extra in "${parts[@]:1}"; do
    case $extra in
      A | B | C) words+=" --fusion $extra" ;;
      graphs | overlap) words+=" --$extra" ;;
      *) echo "scaling_sweep: unknown mode '$mode'" >&2; exit 2 ;;
    esac
  done
  mode_flags[$mode]=$words
done
{
  echo "# command: $0 $*"
  echo "# machine: ${KODO_MACHINE:-unspecified}"
  echo "# commit: ${KODO_COMMIT:-unspecified}"
  echo "kind,n,gpus,odf,mode,grid,iterations,avg_iteration_us,checksum,residual"
} >"$out"
for g in $gpus; do
  x=$n
  [[ $kind == weak ]] && x=$((n * g))
  for mode in $modes; do
    for odf in $odfs; do
      [[ ${mode%%+*} == baseline && $odf != 1 ]] && continue  # the baseline runs one block per rank
      read -r -a flags <<<"${mode_flags[$mode]}"
      # shellcheck disable=SC2086
      log=$(${LAUNCH:-mpiexec -n} "$g" "$bin" -x "$x" -y "$n" -z "$n" -i "$iters" -w "${WARMUP:-10}" \
              --odf "$odf" "${flags[@]}")
      avg=$(sed -n 's/^average iteration time: \([0-9.]*\) us$/\1/p' <<<"$log")
      sum=$(sed -n 's/^checksum: \(0x[0-9a-f]*\)$/\1/p' <<<"$log")
      res=$(sed -n 's/^residual: \([^ ]*\) .*/\1/p' <<<"$log")
      [[ -n $avg && -n $sum ]] || { echo "scaling_sweep: no result from: $log" >&2; exit 1; }
      echo "$kind,$n,$g,$odf,$mode,${x}x${n}x${n},$iters,$avg,$sum,$res" | tee -a "$out"
    done
  done
done
