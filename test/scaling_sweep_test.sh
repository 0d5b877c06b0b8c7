#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The scaling sweep on a small strong-scaling grid: one row per (ranks, ODF, mode), and
# every row the same checksum (one grid, whatever the decomposition and mode).
#   test/scaling_sweep_test.sh JACOBI3D NUMPROC_FLAG MPIEXEC [FLAGS...]
# (the launcher with the flags of its MPI, as the other tests launch).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
jacobi3d=$1 numproc=$2
shift 2
LAUNCH="$* $numproc" WARMUP=1 bash "$root/perf/scaling_sweep.sh" "$jacobi3d" "$out" strong 24 "1 2" "1 2" \
  "device host+B device+C+graphs host+overlap baseline" 5 >/dev/null
rows=$(grep -vc '^#\|^kind' "$out")
[[ $rows == 18 ]] || { echo "expected 18 rows, got $rows:"; cat "$out"; exit 1; }
sums=$(grep -v '^#\|^kind' "$out" | cut -d, -f9 | sort -u | wc -l)
[[ $sums == 1 ]] || { echo "checksums differ:"; cat "$out"; exit 1; }
echo "scaling sweep: ok"
