#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Channel ping-pong (pingpong_bench on 2 ranks) and raw UCX (ucx_perftest tag_lat and
# tag_bw from the same UCX) in one job, so the ratio is measured side by side.
#
#   perf/pingpong.sh PINGPONG_BENCH UCX_PERFTEST OUT_DIR [SIZES]
#
# Writes OUT_DIR/pingpong_kodo.csv and OUT_DIR/pingpong_ucx_perftest.csv. SIZES is a
# comma-separated list (default 8 B to 64 MiB in powers of 2). Environment: LAUNCH
# (default "mpiexec -n 2"), MEM (ucx_perftest memory type, default cuda), GPUS (default
# "0,1": the perftest server sees only the first GPU, the client only the second; on
# the H200 pair, a client that sees both GPUs in the other order measured 149 us at
# 8 B instead of 9.4), KODO_MACHINE, KODO_COMMIT.
set -euo pipefail
[[ $# -ge 3 ]] || { sed -n '2,13p' "$0"; exit 2; }
bench=$1 perftest=$2 out=$3
sizes=${4:-$(s=8; l=8; while ((s < 64 * 1024 * 1024)); do s=$((s * 2)); l+=",$s"; done; echo "$l")}
mem=${MEM:-cuda} gpus=${GPUS:-0,1}
first=${gpus%%,*} second=${gpus##*,}
mkdir -p "$out"

# shellcheck disable=SC2086
${LAUNCH:-mpiexec -n 2} "$bench" --sizes "$sizes" --csv "$out/pingpong_kodo.csv"

csv=$out/pingpong_ucx_perftest.csv
{
  echo "# command: $0 $*  (ucx_perftest -m $mem, server on GPU $first, client on GPU $second)"
  echo "# machine: ${KODO_MACHINE:-unspecified}"
  echo "# commit: ${KODO_COMMIT:-unspecified}"
  echo "test,bytes,iterations,latency_us,bandwidth_GBps"
} >"$csv"
port=$((13337 + RANDOM % 1000))
# One server/client pair per measurement; the client retries until the server listens.
measure() {  # test size iterations [extra flags]
  local test=$1 size=$2 n=$3 line=""
  shift 3
  port=$((port + 1))
  CUDA_VISIBLE_DEVICES=$first timeout 120 "$perftest" -p "$port" >/dev/null 2>&1 &
  local server=$!
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    sleep 0.3
    if line=$(CUDA_VISIBLE_DEVICES=$second timeout 120 "$perftest" 127.0.0.1 -p "$port" \
                -t "$test" -m "$mem" -s "$size" -n "$n" -w $((n / 10 + 1)) -f "$@" 2>/dev/null | tail -1) &&
       [[ -n $line ]]; then
      break
    fi
  done
  wait "$server" || true
  # Final line: iterations, latency 50%/average/overall (us), bandwidth average/overall
  # (MB/s, MB = 2^20 bytes), message rate average/overall.
  read -r -a f <<<"$line"
  ((${#f[@]} >= 8)) || { echo "ucx_perftest $test -s $size gave no result" >&2; return 1; }
  local name=$test
  (($# > 0)) && name="$test($*)"
  if [[ $test == *lat ]]; then
    echo "$name,$size,${f[0]},${f[2]}," | tee -a "$csv"
  else
    echo "$name,$size,${f[0]},,$(awk -v m="${f[5]}" 'BEGIN { printf "%.3f", m * 1048576 / 1e9 }')" | tee -a "$csv"
  fi
}
for size in ${sizes//,/ }; do
  n=$(awk -v s="$size" 'BEGIN { n = int(2e9 / s); if (n > 10000) n = 10000; if (n < 50) n = 50; print n }')
  measure tag_lat "$size" "$n"
  measure tag_bw "$size" "$n"
done
# With peer error handling (-e), what KODO_UCX_ERROR_MODE=peer gives kodo's endpoints.
measure tag_lat 8 10000 -e
measure tag_bw 8388608 238 -e
