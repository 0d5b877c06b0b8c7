#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The scaling tools from an install, without the source tree: the build's component
# `programs` installed into WORK/prefix puts the sweeps, the plotter and the launch
# templates, executable, in DATADIR/kodo/scaling/, each script's installed_bin naming the
# install's BINDIR. From there the sweep finds the installed jacobi3d by its bare name
# (before a broken jacobi3d on PATH) and runs it REPEATS times, interleaved; copies of
# the templates (what sbatch and bsub run) hand the installed jacobi3d to srun / jsrun;
# `plot` runs the plot_scaling.py beside it, which reads the sweep's CSV.
#   test/scaling_tools_install.sh CMAKE BUILD WORK DATADIR BINDIR NUMPROC_FLAG MPIEXEC [FLAGS...]
set -euo pipefail
[[ $# -ge 7 ]] || { sed -n '2,11p' "$0" >&2; exit 2; }
cmake=$1 build=$2 work=$3 datadir=$4 bindir=$5 numproc=$6
shift 6
fail() {
  echo "scaling_tools_install: $*" >&2
  exit 1
}
rm -rf "$work"
mkdir -p "$work/decoy" "$work/launchers" "$work/spool" "$work/elsewhere" "$work/py"
prefix=$work/prefix
"$cmake" --install "$build" --prefix "$prefix" --component programs >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "cmake --install --component programs failed"; }
[[ $datadir == /* ]] || datadir=$prefix/$datadir
[[ $bindir == /* ]] || bindir=$prefix/$bindir
tools=$datadir/kodo/scaling
for file in scaling_sweep.sh minimd_sweep.sh jacobi_sweep.sh balance_sweep.sh \
            minimd_balance_sweep.sh sweep_program.sh plot_scaling.py plot slurm.sbatch lsf.bsub; do
  [[ -f $tools/$file && -x $tools/$file ]] || fail "the install lacks an executable $tools/$file"
done
for file in sweep_program.sh slurm.sbatch lsf.bsub; do
  line=$(grep '^installed_bin=' "$tools/$file")
  [[ $line == "installed_bin='$bindir'" ]] || fail "$tools/$file: '$line', expected installed_bin='$bindir'"
done
[[ -x $bindir/jacobi3d ]] || fail "the install lacks $bindir/jacobi3d"

# A jacobi3d on PATH that must not be taken: the install's own comes first.
printf '#!/bin/sh\necho "the jacobi3d on PATH ran" >&2\nexit 1\n' >"$work/decoy/jacobi3d"
chmod +x "$work/decoy/jacobi3d"
cd "$work/elsewhere"
csv=$work/sweep.csv
PATH=$work/decoy:$PATH REPEATS=2 LAUNCH="$* $numproc" WARMUP=1 \
  "$tools/scaling_sweep.sh" jacobi3d "$csv" strong 16 "1" "1 2" "device" 3 >/dev/null
got=$(grep -v '^#' "$csv" | tail -n +2 | cut -d, -f3,4,5,11 | tr '\n' ' ')
[[ $got == "1,1,device,1 1,2,device,1 1,1,device,2 1,2,device,2 " ]] ||
  fail "the installed sweep's runs (gpus,odf,mode,repeat): $got"
sums=$(grep -v '^#' "$csv" | tail -n +2 | cut -d, -f9 | sort -u | wc -l)
[[ $sums == 1 ]] || fail "the installed jacobi3d's checksums differ: $(cat "$csv")"

# The templates as a batch system runs them: copies elsewhere, with stand-in launchers.
for launcher in srun jsrun; do
  printf '#!/bin/sh\necho "%s $*"\n' "$launcher" >"$work/launchers/$launcher"
  chmod +x "$work/launchers/$launcher"
done
cp "$tools/slurm.sbatch" "$tools/lsf.bsub" "$work/spool/"
printf 'host1\nhost2\n' >"$work/hosts"
out=$(PATH=$work/launchers:$work/decoy:$PATH bash "$work/spool/slurm.sbatch" -x 32 --odf 2)
[[ $out == "srun "*" $bindir/jacobi3d -x 32 --odf 2" ]] || fail "installed slurm.sbatch: $out"
out=$(PATH=$work/launchers:$work/decoy:$PATH LSB_DJOB_HOSTFILE=$work/hosts bash "$work/spool/lsf.bsub" -x 32)
[[ $out == "jsrun "*" $bindir/jacobi3d -x 32" ]] || fail "installed lsf.bsub: $out"

# plot: a python3 that has matplotlib (a stand-in that logs what it runs) gets the
# plot_scaling.py beside it.
real_python=$(command -v python3 || true)
cat >"$work/py/python3" <<'EOF'
#!/bin/sh
[ "$1" = -c ] && exit 0
echo "python3 $*"
EOF
chmod +x "$work/py/python3"
out=$(PATH=$work/py:$PATH KODO_CACHE=$work/cache "$tools/plot" "$work/plots" "$csv")
[[ $out == "python3 $tools/plot_scaling.py $work/plots $csv" ]] || fail "installed plot ran: $out"
if [[ -n $real_python ]]; then
  "$real_python" -B - "$tools/plot_scaling.py" "$csv" <<'EOF' || fail "the installed plot_scaling.py does not read the installed sweep's CSV"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("plot_scaling", sys.argv[1])
plot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot)
rows = plot.read_rows([sys.argv[2]])
assert sorted((r["odf"], r["repeat"]) for r in rows) == [("1", "1"), ("1", "2"), ("2", "1"), ("2", "2")], rows
EOF
fi
echo "scaling tools installed: ok"
