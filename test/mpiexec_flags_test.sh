#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The launcher flags follow the MPI: stand-in launchers print what Open MPI 4 and 5,
# MPICH, Intel MPI and srun print for --version; the tests' CMake
# (cmake/kodoMpiexecFlags.cmake) and the scripts (scripts/lib/env.sh) must give
# --oversubscribe to Open MPI only. KODO_MPIEXEC_FLAGS, set, wins in the scripts.
#   test/mpiexec_flags_test.sh CMAKE
set -euo pipefail
cmake=${1:?usage: mpiexec_flags_test.sh CMAKE}
root=$(cd "$(dirname "$0")/.." && pwd)
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
# shellcheck source=../scripts/lib/env.sh
source "$root/scripts/lib/env.sh"

# case NAME EXPECTED VERSION_TEXT [EXIT]: a launcher NAME printing VERSION_TEXT (exiting
# EXIT) gets EXPECTED from both.
check() {
  local name=$1 expected=$2 text=$3 rc=${4:-0}
  printf '#!/bin/sh\ncat <<"TEXT"\n%s\nTEXT\nexit %s\n' "$text" "$rc" >"$fake/$name"
  chmod +x "$fake/$name"
  local got
  got=$("$cmake" -DMPIEXEC="$fake/$name" -P "$root/test/mpiexec_flags.cmake" 2>&1)
  [[ $got == "flags: [$expected]" ]] || { echo "CMake, $name: expected [$expected], got: $got"; exit 1; }
  got=$(kodo_mpiexec_flags_for "$("$fake/$name" --version 2>&1 || true)")
  [[ $got == "$expected" ]] || { echo "env.sh, $name: expected [$expected], got [$got]"; exit 1; }
}
check openmpi4 --oversubscribe $'mpiexec (OpenRTE) 4.1.6\n\nReport bugs to http://www.open-mpi.org/community/help/'
check openmpi5 --oversubscribe $'mpiexec (Open MPI) 5.0.7\n\nReport bugs to https://www.open-mpi.org/community/help/'
check mpich "" $'HYDRA build details:\n    Version:                                 4.2.0\n    Release Date:                            Fri Feb  9 2024'
check intelmpi "" 'Intel(R) MPI Library for Linux* OS, Version 2021.11 Build 20231005 (id: 74c4a23)'
check srun "" 'slurm 23.11.4'
check broken "" 'mpiexec: error while loading shared libraries' 127
got=$("$cmake" -DMPIEXEC="$fake/absent" -P "$root/test/mpiexec_flags.cmake" 2>&1)
[[ $got == "flags: []" ]] || { echo "CMake, a launcher that is not there: got: $got"; exit 1; }

# Set (even empty), KODO_MPIEXEC_FLAGS is the flags, without asking the launcher.
[[ $(KODO_MPIEXEC_FLAGS="--bind-to none" kodo_mpiexec_flags) == "--bind-to none" ]] ||
  { echo "env.sh: KODO_MPIEXEC_FLAGS was not used"; exit 1; }
[[ -z $(KODO_MPIEXEC_FLAGS="" kodo_mpiexec_flags) ]] ||
  { echo "env.sh: an empty KODO_MPIEXEC_FLAGS was not used"; exit 1; }
echo "mpiexec flags: ok"
