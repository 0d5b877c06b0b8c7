#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The folders of src/kodo form a stack: core < backends < comm < tasking. A file may
# include headers of its own folder and of folders below it, never above (includes are
# rooted: <kodo/FOLDER/...>). Prints each violation and exits 1 if there is any.
set -euo pipefail
src=${1:?usage: check_layers.sh SRC_DIR (the folder holding core, backends, comm, tasking)}
level() {
  case $1 in
    core) echo 0 ;; backends) echo 1 ;; comm) echo 2 ;; tasking) echo 3 ;; *) echo -1 ;;
  esac
}
bad=0 files=0
while IFS= read -r file; do
  files=$((files + 1))
  rel=${file#"$src"/}
  folder=${rel%%/*}
  if grep -q '^#include "' "$file"; then
    echo "check_layers: $rel includes by a relative path: write <kodo/FOLDER/NAME.hpp>"
    bad=1
  fi
  mine=$(level "$folder")
  [[ $mine -ge 0 ]] || continue
  while IFS= read -r inc; do
    other=${inc%%/*}
    theirs=$(level "$other")
    if ((theirs > mine)); then
      echo "check_layers: $rel ($folder) includes $inc ($other), a folder above it"
      bad=1
    fi
  done < <(sed -n 's/^#include <kodo\/\(.*\)>/\1/p' "$file")
done < <(find "$src" -name '*.hpp' -o -name '*.cpp')
echo "check_layers: $files files, folders form a stack: $([[ $bad == 0 ]] && echo yes || echo no)"
exit "$bad"
