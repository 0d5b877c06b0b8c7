#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The launch templates hand the program and its arguments to srun / jsrun with one
# rank and one GPU per task: checked with stand-in launchers that print what they get.
# The program is KODO_PROGRAM, else the installed jacobi3d (KODO_PREFIX/bin, then PATH);
# none found is an error naming what to set.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
mkdir -p "$fake/launchers" "$fake/prefix/bin" "$fake/onpath" "$fake/empty"
for launcher in srun jsrun; do
  printf '#!/bin/sh\necho "%s $*"\n' "$launcher" >"$fake/launchers/$launcher"
  chmod +x "$fake/launchers/$launcher"
done
for program in "$fake/prefix/bin/jacobi3d" "$fake/onpath/jacobi3d" "$fake/my_program"; do
  printf '#!/bin/sh\nexit 0\n' >"$program"
  chmod +x "$program"
done
printf 'host1\nhost2\nhost2\n' >"$fake/hosts"
cd "$fake/empty"  # no build/system here: the last default is absent

# slurm ENV... / lsf ENV...: the template's output, run with ENV and the stand-ins (and
# the directory $onpath on PATH too, where set).
onpath=
slurm() { env PATH="$fake/launchers:${onpath:+$onpath:}$PATH" GPUS_PER_NODE=4 "$@" bash "$root/scripts/launch/slurm.sbatch" -x 96 --odf 8; }
lsf() { env PATH="$fake/launchers:${onpath:+$onpath:}$PATH" LSB_DJOB_HOSTFILE="$fake/hosts" "$@" bash "$root/scripts/launch/lsf.bsub" -x 96 --odf 8; }
expect() {  # expect WHAT OUTPUT WANTED...
  local what=$1 out=$2
  shift 2
  for want in "$@"; do
    [[ $out == *"$want"* ]] || { echo "$what: missing '$want' in: $out"; exit 1; }
  done
}

out=$(slurm KODO_PROGRAM="$fake/my_program")
expect "slurm.sbatch" "$out" "--ntasks-per-node=4" "--gpus-per-task=1" "--kill-on-bad-exit=1" \
  "$fake/my_program -x 96 --odf 8"
out=$(lsf KODO_PROGRAM="$fake/my_program")
expect "lsf.bsub" "$out" "--nrs 12" "--gpu_per_rs 1" "--tasks_per_rs 1" "$fake/my_program -x 96 --odf 8"

# The installed program by default: KODO_PREFIX's first, then the one on PATH.
for template in slurm lsf; do
  onpath=$fake/onpath
  out=$($template KODO_PREFIX="$fake/prefix")
  expect "$template, KODO_PREFIX" "$out" "$fake/prefix/bin/jacobi3d -x 96 --odf 8"
  out=$($template)
  onpath=
  expect "$template, PATH" "$out" "$fake/onpath/jacobi3d -x 96 --odf 8"
  if out=$($template 2>&1); then
    echo "$template without a program: exit 0, expected an error: $out"
    exit 1
  fi
  expect "$template without a program" "$out" "set KODO_PROGRAM, or KODO_PREFIX"
  if out=$($template KODO_PREFIX="$fake/empty" 2>&1); then
    echo "$template with a KODO_PREFIX without jacobi3d: exit 0: $out"
    exit 1
  fi
  expect "$template, KODO_PREFIX without jacobi3d" "$out" "no program '$fake/empty/bin/jacobi3d'"
done
echo "launch templates: ok"
