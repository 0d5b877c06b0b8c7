#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Load balancing of Jacobi3D blocks of unequal work (--imbalance), one CSV row per run:
# no balancing, each balancer, a static placement from the end of the warm-up on
# (static: greedy's, which ignores where blocks were; static_refine: refine's, which
# moves the fewest blocks and so keeps most neighbours on one GPU), and every block doing
# the same work (even: the balanced ideal's time is even's times the mean work factor,
# (F + 1) / 2, where half the blocks do F times the work).
#
#   perf/balance_sweep.sh JACOBI3D OUT.csv N RANKS "ODFS" F [REPEATS] [ITERATIONS]
#   e.g. perf/balance_sweep.sh jacobi3d balance.csv 768 2 "4 8" 2 3 300
#
# The grid is N^3. Runs of one repeat are interleaved. REPEATS: the argument, else the
# environment's REPEATS, else 3. JACOBI3D: a path, or a name looked up in the bin/ of the
# kodo install this script belongs to, then on PATH. The balancing runs balance at
# every 100th update (their first balance point lies in the timed iterations); static
# balances at the end of a warm-up of 100 updates and times ITERATIONS - 1 after it (its
# next balance point, within the tolerance, moves nothing). Environment: LAUNCH (default
# "mpiexec -n"; the rank count is appended), VARIANTS (default "none refine greedy static
# static_refine even"), KODO_MACHINE and KODO_COMMIT (recorded in the header).
set -euo pipefail
[[ $# -ge 6 ]] || { sed -n '2,21p' "$0"; exit 2; }
bin=$1 out=$2 n=$3 ranks=$4 odfs=$5 factor=$6 repeats=${7:-${REPEATS:-3}} iters=${8:-300}
[[ $repeats =~ ^[1-9][0-9]*$ ]] || { echo "balance_sweep: REPEATS must be a positive integer, not '$repeats'" >&2; exit 2; }
# shellcheck source-path=SCRIPTDIR source=sweep_program.sh
source "$(dirname "${BASH_SOURCE[0]}")/sweep_program.sh"
sweep_program balance_sweep JACOBI3D "$bin"
bin=$program
read -r -a launch <<<"${LAUNCH:-mpiexec -n}"
{
  echo "# command: $0 $*"
  echo "# machine: ${KODO_MACHINE:-unspecified}"
  echo "# commit: ${KODO_COMMIT:-$(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  echo "grid,ranks,odf,variant,repeat,us_per_iteration,balance_points,applied,moves,moving_s,imbalance_first,imbalance_last"
} >"$out"
for rep in $(seq "$repeats"); do
  for odf in $odfs; do
    for variant in ${VARIANTS:-none refine greedy static static_refine even}; do
      case $variant in
        even) args=(-w 10 -i "$iters") ;;
        none) args=(-w 10 -i "$iters" --imbalance "$factor") ;;
        refine | greedy)
          args=(-w 10 -i "$iters" --imbalance "$factor" --balance-every 100 --balancer "$variant") ;;
        static | static_refine)
          [[ $variant == static ]] && balancer=greedy || balancer=refine
          args=(-w 100 -i $((iters - 1)) --imbalance "$factor" --balance-every 100 --balancer "$balancer") ;;
        *) echo "balance_sweep: unknown variant '$variant'" >&2; exit 2 ;;
      esac
      log=$("${launch[@]}" "$ranks" "$bin" -x "$n" -y "$n" -z "$n" --odf "$odf" "${args[@]}" 2>&1) ||
        { echo "balance_sweep: failed: $bin --odf $odf ${args[*]}" >&2; echo "$log" | tail -5 >&2; exit 1; }
      us=$(sed -n 's/^average iteration time: \([0-9.]*\) us$/\1/p' <<<"$log")
      b=$(sed -n 's/^balancing: \([0-9]*\) balance point(s), \([0-9]*\) applied, \([0-9]*\) block move(s), \([0-9.]*\) s moving, max\/avg - 1 of the ranks. loads \([0-9.]*\) at the first, \([0-9.]*\) after the last$/\1,\2,\3,\4,\5,\6/p' <<<"$log")
      [[ -n $b ]] || b=0,0,0,0,,
      echo "$n,$ranks,$odf,$variant,$rep,$us,$b" | tee -a "$out"
    done
  done
done
