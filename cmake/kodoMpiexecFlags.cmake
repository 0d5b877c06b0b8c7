# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# kodo_mpiexec_default_flags(MPIEXEC OUT): OUT is the list of flags kodo's test launches
# give MPIEXEC, chosen by the MPI it belongs to (what `MPIEXEC --version` says):
#   Open MPI (4: "OpenRTE", 5: "Open MPI"): --oversubscribe (the tests run more ranks
#     than small machines have cores, which Open MPI refuses without it);
#   anything else (MPICH's and Intel MPI's Hydra, Slurm's srun, ...): none (MPICH's
#     mpiexec refuses --oversubscribe, and runs more ranks than cores anyway).
# scripts/lib/env.sh (kodo_mpiexec_flags) follows the same rule.
function(kodo_mpiexec_default_flags mpiexec out)
  set(flags "")
  if(mpiexec)
    execute_process(COMMAND ${mpiexec} --version RESULT_VARIABLE rc OUTPUT_VARIABLE text
                    ERROR_VARIABLE text TIMEOUT 20)
    if(text MATCHES "Open MPI|OpenRTE")
      set(flags --oversubscribe)
    endif()
  endif()
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()
