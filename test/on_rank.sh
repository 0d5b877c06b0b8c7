#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# on_rank.sh RANK VAR=VALUE PROGRAM [ARGS...]: runs PROGRAM with VAR=VALUE on rank RANK of
# the job only (the launcher's rank variable: Open MPI's, PMIx's or PMI's), as it is on
# the others elsewhere. For tests of settings that one rank does not share.
set -euo pipefail
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:?no rank variable from the launcher}}}
wanted=$1 setting=$2
shift 2
if [[ $rank == "$wanted" ]]; then export "${setting?}"; fi
exec "$@"
