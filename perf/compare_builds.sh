#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Two builds of kodo side by side in one job, interleaved run by run, so that a change
# to the runtime is measured against the code before it on the same machine:
# pingpong_bench (device channel, host-staged channel, calls carrying views) and
# Jacobi3D at 192^3 and 768^3.
#
#   perf/compare_builds.sh BASE_BIN_DIR NEW_BIN_DIR OUT_DIR [REPEATS]
#
# Each BIN_DIR holds jacobi3d and pingpong_bench. Writes OUT_DIR/compare_pingpong.csv
# and OUT_DIR/compare_jacobi3d.csv (one row per build, repeat and case). Environment:
# LAUNCH (default "mpirun -n 2 --bind-to none"), SIZES (pingpong sizes, default
# 8,4096,65536,1048576,8388608,67108864), MODES (pingpong modes, default
# device,host,call), JACOBI (0 skips Jacobi3D), KODO_MACHINE, KODO_COMMIT (for the
# headers).
set -euo pipefail
[[ $# -ge 3 ]] || { sed -n '2,13p' "$0"; exit 2; }
base=$1 new=$2 out=$3 repeats=${4:-3}
launch=${LAUNCH:-mpirun -n 2 --bind-to none}
sizes=${SIZES:-8,4096,65536,1048576,8388608,67108864}
modes=${MODES:-device,host,call}
mkdir -p "$out"

header() {  # file columns
  {
    echo "# command: $0 $base $new $out $repeats  (LAUNCH=\"$launch\", SIZES=$sizes, MODES=$modes)"
    echo "# machine: ${KODO_MACHINE:-unspecified}"
    echo "# commit: ${KODO_COMMIT:-unspecified} (new) against the base build in $base"
    echo "$2"
  } >"$1"
}
pp=$out/compare_pingpong.csv jc=$out/compare_jacobi3d.csv
header "$pp" "build,repeat,mode,test,bytes,iterations,window,latency_us,bandwidth_GBps"
header "$jc" "build,repeat,case,arguments,average_iteration_us,checksum"

# Jacobi3D cases: name and arguments.
cases=(
  "192_overlap|-x 192 -y 192 -z 192 -i 2000 -w 100 --overlap"
  "192_odf2|-x 192 -y 192 -z 192 -i 2000 -w 100 --odf 2"
  "768_overlap|-x 768 -y 768 -z 768 -i 100 -w 10 --overlap"
  "768_odf2|-x 768 -y 768 -z 768 -i 100 -w 10 --odf 2"
)
for ((r = 1; r <= repeats; ++r)); do
  for build in base new; do
    dir=$base
    [[ $build == new ]] && dir=$new
    # shellcheck disable=SC2086
    $launch "$dir/pingpong_bench" --sizes "$sizes" --modes "$modes" --csv "$out/pp.tmp" >/dev/null
    grep -v '^#' "$out/pp.tmp" | tail -n +2 | sed "s/^/$build,$r,/" >>"$pp"
    [[ ${JACOBI:-1} == 0 ]] && continue
    for c in "${cases[@]}"; do
      name=${c%%|*} args=${c#*|}
      # shellcheck disable=SC2086
      text=$($launch "$dir/jacobi3d" $args 2>&1)
      us=$(sed -n 's/^average iteration time: \([0-9.]*\) us$/\1/p' <<<"$text")
      sum=$(sed -n 's/^checksum: //p' <<<"$text")
      [[ -n $us ]] || { echo "jacobi3d $args gave no time:" >&2; echo "$text" >&2; exit 1; }
      echo "$build,$r,$name,$args,$us,$sum" | tee -a "$jc"
    done
  done
done
rm -f "$out/pp.tmp"
