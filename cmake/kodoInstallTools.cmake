# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The scaling-study tools, installed with the programs (component `programs`, with
# KODO_ENABLE_APPS) into share/kodo/scaling/: the sweep scripts (perf/*_sweep.sh), the
# plotter (perf/plot_scaling.py, and scripts/plot as `plot`, which runs it with a
# matplotlib) and the Slurm and LSF templates (scripts/launch/). The line
# `installed_bin=` of the sweeps' perf/sweep_program.sh and of the templates is written, in the installed copy, with the install's bin/ (under the
# prefix and DESTDIR of that install): given a bare program name (jacobi3d, minimd), the
# sweeps and templates take it from there, and from PATH where it is not there.
# Included from kodoInstall.cmake (GNUInstallDirs is included); nothing without the apps.
if(NOT KODO_ENABLE_APPS)
  return()
endif()
set(kodo_scaling_dir ${CMAKE_INSTALL_DATADIR}/kodo/scaling)
get_filename_component(kodo_scaling_root ${CMAKE_CURRENT_LIST_DIR} DIRECTORY)
set(kodo_scaling_bin_scripts sweep_program.sh slurm.sbatch lsf.bsub)
install(PROGRAMS ${kodo_scaling_root}/perf/scaling_sweep.sh
                 ${kodo_scaling_root}/perf/minimd_sweep.sh
                 ${kodo_scaling_root}/perf/jacobi_sweep.sh
                 ${kodo_scaling_root}/perf/balance_sweep.sh
                 ${kodo_scaling_root}/perf/minimd_balance_sweep.sh
                 ${kodo_scaling_root}/perf/sweep_program.sh
                 ${kodo_scaling_root}/perf/plot_scaling.py
                 ${kodo_scaling_root}/scripts/launch/slurm.sbatch
                 ${kodo_scaling_root}/scripts/launch/lsf.bsub
                 ${kodo_scaling_root}/scripts/plot
        DESTINATION ${kodo_scaling_dir} COMPONENT programs)
# Run by cmake --install, after the copies above: the @...@ are this configuration's, the
# ${...} the install's. A script without its one `installed_bin=` line (empty, or written
# by an earlier install) fails the install.
string(CONFIGURE [=[
set(kodo_dir "@kodo_scaling_dir@")
set(kodo_bin "@CMAKE_INSTALL_BINDIR@")
if(NOT IS_ABSOLUTE "${kodo_dir}")
  set(kodo_dir "${CMAKE_INSTALL_PREFIX}/${kodo_dir}")
endif()
if(NOT IS_ABSOLUTE "${kodo_bin}")
  set(kodo_bin "${CMAKE_INSTALL_PREFIX}/${kodo_bin}")
endif()
string(REPLACE "'" "'\\''" kodo_bin_quoted "${kodo_bin}")
foreach(kodo_script @kodo_scaling_bin_scripts@)
  set(kodo_file "$ENV{DESTDIR}${kodo_dir}/${kodo_script}")
  file(READ "${kodo_file}" kodo_text)
  string(REGEX MATCHALL "\ninstalled_bin=('[^\n]*')?\n" kodo_lines "${kodo_text}")
  list(LENGTH kodo_lines kodo_count)
  if(NOT kodo_count EQUAL 1)
    message(FATAL_ERROR "${kodo_file}: ${kodo_count} lines 'installed_bin=', 1 expected")
  endif()
  string(REPLACE "${kodo_lines}" "\ninstalled_bin='${kodo_bin_quoted}'\n" kodo_text
         "${kodo_text}")
  file(WRITE "${kodo_file}" "${kodo_text}")
endforeach()
]=] kodo_scaling_fixup @ONLY)
install(CODE "${kodo_scaling_fixup}" COMPONENT programs)
