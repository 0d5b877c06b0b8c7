#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# MiniMD scaling sweep: REPEATS minimd runs per (GPU count, ODF, mode), one CSV row each.
#
#   perf/minimd_sweep.sh MINIMD OUT.csv strong|weak S "GPUS" "ODFS" "MODES" [STEPS]
#   e.g. perf/minimd_sweep.sh minimd strong_64.csv strong 64 "1 2" "1 2 4 8" "device host"
#
# strong: S^3 FCC unit cells (4 S^3 atoms) whatever the GPU count (-nx S -ny S -nz S, the
# same as -s S). weak: S^3 cells per GPU, the box growing along x (-nx S*G -ny S -nz S).
# MODES: device (--comm device), host (--comm host), device-sync (--comm device --sync),
# program and unit-by-unit (--comm device --step-program 1 / 0; with full lists,
# MINIMD_ARGS="--half_neigh 0": plain steps as one device program per rank, or not).
# STEPS: time steps (default 300). MINIMD: a path, or a name looked up in the bin/ of the
# kodo install this script belongs to, then on PATH.
# Each row holds what the run's PERF_SUMMARY line reports (atoms, atom-steps/s and the
# times in seconds), checked against the ranks, ODF, steps and atoms asked for. Repeats
# are interleaved (repeat r of every configuration before repeat r+1; the last column,
# repeat, counts from 1). Environment: REPEATS (default 3), LAUNCH (default "mpiexec -n";
# the rank count is appended), MINIMD_ARGS (more minimd flags for every run, e.g.
# "--half_neigh 0"), KODO_MACHINE and KODO_COMMIT (recorded in the header).
set -euo pipefail
usage() { sed -n '2,21p' "$0" >&2; }
fail() {
  echo "minimd_sweep: $*" >&2
  exit 2
}
[[ $# -ge 7 && $# -le 8 ]] || { usage; exit 2; }
bin=$1 out=$2 kind=$3 s=$4 gpus=$5 odfs=$6 modes=$7 steps=${8:-300}
repeats=${REPEATS:-3}

# Every argument checked before any run.
positive() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
[[ $kind == strong || $kind == weak ]] || fail "kind must be strong or weak, not '$kind'"
positive "$s" || fail "S must be a positive integer, not '$s'"
positive "$steps" || fail "STEPS must be a positive integer, not '$steps'"
positive "$repeats" || fail "REPEATS must be a positive integer, not '$repeats'"
[[ -n ${gpus//[[:space:]]/} ]] || fail "GPUS is empty"
for g in $gpus; do positive "$g" || fail "GPUS holds '$g', not a positive integer"; done
[[ -n ${odfs//[[:space:]]/} ]] || fail "ODFS is empty"
for odf in $odfs; do positive "$odf" || fail "ODFS holds '$odf', not a positive integer"; done
[[ -n ${modes//[[:space:]]/} ]] || fail "MODES is empty"
declare -A mode_flags
for mode in $modes; do
  case $mode in
    device) mode_flags[$mode]="--comm device" ;;
    host) mode_flags[$mode]="--comm host" ;;
    device-sync) mode_flags[$mode]="--comm device --sync" ;;
    program) mode_flags[$mode]="--comm device --step-program 1" ;;
    unit-by-unit) mode_flags[$mode]="--comm device --step-program 0" ;;
    *) fail "unknown mode '$mode' (device, host, device-sync, program or unit-by-unit)" ;;
  esac
done
# shellcheck source-path=SCRIPTDIR source=sweep_program.sh
source "$(dirname "${BASH_SOURCE[0]}")/sweep_program.sh"
sweep_program minimd_sweep MINIMD "$bin"
bin=$program
read -r -a extra <<<"${MINIMD_ARGS:-}"

printf -v command ' %q' "$@"  # quoted, so that the line can be run again as it stands
{
  echo "# command: REPEATS=$repeats ${MINIMD_ARGS:+MINIMD_ARGS=$(printf '%q' "$MINIMD_ARGS") }$0$command"
  echo "# machine: ${KODO_MACHINE:-unspecified}"
  echo "# commit: ${KODO_COMMIT:-unspecified}"
  echo "kind,s,gpus,odf,mode,cells,steps,atoms,atom_steps_per_s,t_total,t_force,t_neigh,t_comm,t_other,repeat"
} >"$out"
for rep in $(seq "$repeats"); do
  for g in $gpus; do
    nx=$s
    [[ $kind == weak ]] && nx=$((s * g))
    atoms=$((4 * nx * s * s))
    for mode in $modes; do
      for odf in $odfs; do
        read -r -a flags <<<"${mode_flags[$mode]}"
        rc=0
        # shellcheck disable=SC2086
        log=$(${LAUNCH:-mpiexec -n} "$g" "$bin" -nx "$nx" -ny "$s" -nz "$s" -n "$steps" \
                --odf "$odf" "${flags[@]}" "${extra[@]}" 2>&1) || rc=$?
        # PERF_SUMMARY ranks odf steps natoms t_total t_force t_neigh t_comm t_other atom_steps_per_s
        read -r -a f <<<"$(awk '$1 == "PERF_SUMMARY" { l = $0 } END { print l }' <<<"$log")"
        where="$g GPUs, ODF $odf, mode $mode"
        if ((rc != 0)) || ((${#f[@]} < 11)); then
          echo "minimd_sweep: $where: exit status $rc, ${#f[@]} words in its last PERF_SUMMARY line (11 expected); its output:" >&2
          echo "$log" >&2
          exit 1
        fi
        for v in "${f[@]:5:6}"; do
          # nan: a part of the step minimd measures with --sync only
          [[ $v =~ ^[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$ || $v == nan ]] ||
            { echo "minimd_sweep: $where: '$v' in '${f[*]}' is not a number" >&2; exit 1; }
        done
        [[ ${f[1]} == "$g" && ${f[2]} == "$odf" && ${f[3]} == "$steps" && ${f[4]} == "$atoms" ]] || {
          echo "minimd_sweep: $where: PERF_SUMMARY reports ranks ${f[1]}, ODF ${f[2]}, steps ${f[3]}, atoms ${f[4]}; asked for $g, $odf, $steps, $atoms" >&2
          exit 1
        }
        echo "$kind,$s,$g,$odf,$mode,${nx}x${s}x${s},$steps,$atoms,${f[10]},${f[5]},${f[6]},${f[7]},${f[8]},${f[9]},$rep" | tee -a "$out"
      done
    done
  done
done
