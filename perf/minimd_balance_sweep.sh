#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Load balancing of MiniMD's units on a slab (--slab F: the atoms of the lower fraction F
# of the box in x, vacuum elsewhere), one CSV row per run: no balancing, each balancer
# (every --balance-every steps; the first balance point moves the units, the later ones
# find the loads within the tolerance), and the same atoms in a box without vacuum
# (even: the balanced ideal's work, -nx S*F rounded).
#
#   perf/minimd_balance_sweep.sh MINIMD OUT.csv S RANKS "ODFS" F [REPEATS] [STEPS] [EVERY]
#   e.g. perf/minimd_balance_sweep.sh minimd slab.csv 20 2 "4 8" 0.5 3 400 20
#
# Full lists (--half_neigh 0). Runs of one repeat are interleaved. REPEATS: the argument,
# else the environment's REPEATS, else 3. MINIMD: a path, or a name looked up in the bin/
# of the kodo install this script belongs to, then on PATH. Environment: LAUNCH (default
# "mpiexec -n"; the rank count is appended), KODO_MACHINE and KODO_COMMIT (recorded in
# the header).
set -euo pipefail
[[ $# -ge 6 ]] || { sed -n '2,17p' "$0"; exit 2; }
bin=$1 out=$2 s=$3 ranks=$4 odfs=$5 slab=$6 repeats=${7:-${REPEATS:-3}} steps=${8:-400} every=${9:-20}
[[ $repeats =~ ^[1-9][0-9]*$ ]] || { echo "minimd_balance_sweep: REPEATS must be a positive integer, not '$repeats'" >&2; exit 2; }
# shellcheck source-path=SCRIPTDIR source=sweep_program.sh
source "$(dirname "${BASH_SOURCE[0]}")/sweep_program.sh"
sweep_program minimd_balance_sweep MINIMD "$bin"
bin=$program
read -r -a launch <<<"${LAUNCH:-mpiexec -n}"
nx=$(awk -v s="$s" -v f="$slab" 'BEGIN { n = int(s * f + 0.5); print (n < 1 ? 1 : n) }')
{
  echo "# command: $0 $*"
  echo "# machine: ${KODO_MACHINE:-unspecified}"
  echo "# commit: ${KODO_COMMIT:-$(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  echo "s,ranks,odf,variant,repeat,atoms,seconds,atom_steps_per_s,balance_points,applied,moves,moving_s"
} >"$out"
for rep in $(seq "$repeats"); do
  for odf in $odfs; do
    for variant in none refine greedy even; do
      case $variant in
        none) args=(-s "$s" --slab "$slab") ;;
        refine | greedy) args=(-s "$s" --slab "$slab" --balance-every "$every" --balancer "$variant") ;;
        even) args=(-nx "$nx" -ny "$s" -nz "$s") ;;
      esac
      log=$("${launch[@]}" "$ranks" "$bin" "${args[@]}" -n "$steps" --half_neigh 0 --odf "$odf" 2>&1) ||
        { echo "minimd_balance_sweep: failed: $bin ${args[*]} --odf $odf" >&2; echo "$log" | tail -5 >&2; exit 1; }
      perf=$(awk '$1 == "PERF_SUMMARY" { print $5 "," $6 "," $NF }' <<<"$log")
      b=$(sed -n 's/^# balancing: \([0-9]*\) balance point(s), \([0-9]*\) applied, \([0-9]*\) unit move(s), \([0-9.]*\) s moving$/\1,\2,\3,\4/p' <<<"$log")
      [[ -n $b ]] || b=0,0,0,0
      echo "$s,$ranks,$odf,$variant,$rep,$perf,$b" | tee -a "$out"
    done
  done
done
