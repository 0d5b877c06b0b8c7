#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Every source file, build file and script of the repository says, in its first five
# lines, who holds its copyright and its licence (SPDX tags; the licence is LICENSE's).
# Prints each file that does not and exits 1 if there is any.
set -euo pipefail
root=${1:?usage: check_spdx.sh REPOSITORY_ROOT}
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files --cached --others --exclude-standard)
else  # a source tree without git: all but build output
  files=$(find . -path ./build -prune -o -path ./.git -prune -o -type f -print | sed 's|^\./||')
fi
licence='SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception'
bad=0 checked=0
while IFS= read -r file; do
  [[ -f $file ]] || continue  # deleted, not yet committed
  checked=$((checked + 1))
  top=$(head -n 5 "$file")
  if [[ $top != *"$licence"* || $top != *"SPDX-FileCopyrightText: "* ]]; then
    echo "check_spdx: $file has no SPDX header: its first lines must hold"
    echo "  SPDX-FileCopyrightText: <year> The kodo developers"
    echo "  $licence"
    bad=1
  fi
done < <(grep -E '(\.(cpp|hpp|cu|cmake|sh|py|sbatch|bsub)|CMakeLists\.txt|\.cmake\.in)$|^scripts/[a-z]+$|^\.ci/run$' <<<"$files" || true)
echo "check_spdx: $checked files checked"
exit "$bad"
