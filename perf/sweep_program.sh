# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# shellcheck shell=bash
# Sourced by the sweep scripts (perf/*_sweep.sh): where the program a sweep runs is.
# `cmake --install` writes the install's bin/ into the installed copy's installed_bin
# (cmake/kodoInstallTools.cmake); in the repository it stays empty.
installed_bin=

# sweep_program SWEEP WHAT PROGRAM: sets `program` to PROGRAM's path: a path as given; a
# bare name from the kodo install's bin/, else from PATH. Exits (status 2) naming SWEEP
# and WHAT (e.g. JACOBI3D) when there is no such executable.
sweep_program() {
  program=$3
  if [[ $program != */* ]]; then
    if [[ -n $installed_bin && -x $installed_bin/$program ]]; then
      program=$installed_bin/$program
    elif ! program=$(command -v "$3"); then
      echo "$1: $2 '$3' is neither in this install's bin/ nor on PATH: give its path" >&2
      exit 2
    fi
  fi
  if [[ ! -f $program || ! -x $program ]]; then
    echo "$1: $2 '$program' is not an executable file" >&2
    exit 2
  fi
}
