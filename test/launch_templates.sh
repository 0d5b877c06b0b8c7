#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The launch templates hand the program and its arguments to srun / jsrun with one
# rank and one GPU per task: checked with stand-in launchers that print what they get.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
for launcher in srun jsrun; do
  printf '#!/bin/sh\necho "%s $*"\n' "$launcher" >"$fake/$launcher"
  chmod +x "$fake/$launcher"
done
printf 'host1\nhost2\nhost2\n' >"$fake/hosts"

out=$(PATH="$fake:$PATH" KODO_PROGRAM=jacobi3d GPUS_PER_NODE=4 bash "$root/scripts/launch/slurm.sbatch" -x 96 --odf 8)
for want in "--ntasks-per-node=4" "--gpus-per-task=1" "--kill-on-bad-exit=1" "jacobi3d -x 96 --odf 8"; do
  [[ $out == *"$want"* ]] || { echo "slurm.sbatch: missing '$want' in: $out"; exit 1; }
done
out=$(PATH="$fake:$PATH" LSB_DJOB_HOSTFILE="$fake/hosts" KODO_PROGRAM=jacobi3d bash "$root/scripts/launch/lsf.bsub" -x 96 --odf 8)
for want in "--nrs 12" "--gpu_per_rs 1" "--tasks_per_rs 1" "jacobi3d -x 96 --odf 8"; do
  [[ $out == *"$want"* ]] || { echo "lsf.bsub: missing '$want' in: $out"; exit 1; }
done
echo "launch templates: ok"
