#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Runs jacobi3d over ODFs, completion modes and stream-pool sizes on one rank and writes
# one CSV row per run (time per iteration from the program's own report).
#
#   perf/jacobi_sweep.sh JACOBI3D OUT.csv N "ODFS" "MODES" "STREAMS" [ITERATIONS]
#   e.g. perf/jacobi_sweep.sh build/apps/jacobi3d/jacobi3d out.csv 768 "1 4 8 16" "engine sync" "4"
# JACOBI3D: a path, or a name looked up in the bin/ of the kodo install this script
# belongs to, then on PATH. Environment: KODO_MACHINE, KODO_COMMIT (recorded in the
# header); LAUNCH (a launcher prefix such as "mpirun -n 1", default none).
set -euo pipefail
[[ $# -ge 6 ]] || { sed -n '2,11p' "$0"; exit 2; }
bin=$1 out=$2 n=$3 odfs=$4 modes=$5 streams=$6 iters=${7:-100}
# shellcheck source-path=SCRIPTDIR source=sweep_program.sh
source "$(dirname "${BASH_SOURCE[0]}")/sweep_program.sh"
sweep_program jacobi_sweep JACOBI3D "$bin"
bin=$program
{
  echo "# command: $0 $*"
  echo "# machine: ${KODO_MACHINE:-unspecified}"
  echo "# commit: ${KODO_COMMIT:-unspecified}"
  echo "n,odf,completion,streams_per_priority,iterations,avg_iteration_us,checksum"
} >"$out"
for s in $streams; do
  for mode in $modes; do
    for odf in $odfs; do
      flag=()
      [[ $mode == sync ]] && flag=(--sync)
      log=$(KODO_STREAMS=$s ${LAUNCH:-} "$bin" -x "$n" -y "$n" -z "$n" -i "$iters" -w 10 --odf "$odf" "${flag[@]}")
      avg=$(sed -n 's/^average iteration time: \([0-9.]*\) us$/\1/p' <<<"$log")
      sum=$(sed -n 's/^checksum: \(0x[0-9a-f]*\)$/\1/p' <<<"$log")
      echo "$n,$odf,$mode,$s,$iters,$avg,$sum" | tee -a "$out"
    done
  done
done
