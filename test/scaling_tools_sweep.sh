#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The scaling tools without MPI, GPUs or matplotlib, against stand-ins:
# - perf/scaling_sweep.sh and perf/minimd_sweep.sh run each configuration REPEATS times
#   (default 3), interleaved (repeat r of every configuration before r+1), one row per run
#   with the repeat last and the older columns as they were; a bad REPEATS runs nothing;
#   perf/balance_sweep.sh takes REPEATS from the environment too;
# - a bare program name is taken from the install's bin/ (installed_bin, as cmake
#   --install writes it), else from PATH, else refused;
# - scripts/plot runs the system python3 where it imports matplotlib 3.7 or later (3.10
#   counts as later) and makes (once) and uses the cached venv otherwise.
#   test/scaling_tools_sweep.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
fail() {
  echo "scaling_tools_sweep: $*" >&2
  exit 1
}
mkdir -p "$fake/bin" "$fake/inst/bin" "$fake/inst/share/kodo/scaling"

# The launcher: "launch RANKS PROGRAM ARGS..." runs PROGRAM with FAKE_RANKS=RANKS.
cat >"$fake/bin/launch" <<'EOF'
#!/usr/bin/env bash
ranks=$1
shift
FAKE_RANKS=$ranks exec "$@"
EOF
# jacobi3d's report: the time encodes ranks and ODF (ranks * 1000 + ODF, + 0.5 for the
# baseline); each run is logged.
cat >"$fake/bin/jacobi3d" <<'EOF'
#!/usr/bin/env bash
odf=1 extra=
while [[ $# -gt 0 ]]; do
  case $1 in
    --odf) odf=$2; shift ;;
    --baseline) extra=.5 ;;
  esac
  shift
done
echo "jacobi3d ranks=$FAKE_RANKS odf=$odf" >>"$FAKE_LOG"
echo "kodo 0.2.0 (commit fake)"
echo "average iteration time: $((FAKE_RANKS * 1000 + odf))$extra us"
echo "checksum: 0x00c0ffee"
echo "residual: 1.25e-03 (after the last iteration)"
EOF
# minimd's PERF_SUMMARY: ranks odf steps natoms t_total t_force t_neigh t_comm t_other rate
cat >"$fake/bin/minimd" <<'EOF'
#!/usr/bin/env bash
nx=0 ny=0 nz=0 steps=0 odf=1
while [[ $# -gt 0 ]]; do
  case $1 in
    -nx) nx=$2; shift ;;
    -ny) ny=$2; shift ;;
    -nz) nz=$2; shift ;;
    -n) steps=$2; shift ;;
    --odf) odf=$2; shift ;;
  esac
  shift
done
echo "minimd ranks=$FAKE_RANKS odf=$odf" >>"$FAKE_LOG"
echo "PERF_SUMMARY $FAKE_RANKS $odf $steps $((4 * nx * ny * nz)) 0.5 0.3 0.1 0.05 0.05 $((FAKE_RANKS * 100 + odf)).0e+06"
EOF
chmod +x "$fake/bin/"*
export FAKE_LOG=$fake/runs.log

rows() { grep -v '^#' "$1" | tail -n +2; }
# expected "GPUS" "ODFS" "MODES" REPEATS [SKIP_BASELINE_ODFS]: "gpus,odf,mode,repeat" of
# each run in the order an interleaved sweep makes them.
expected() {
  local rep g mode odf
  for rep in $(seq "$4"); do
    for g in $1; do
      for mode in $3; do
        for odf in $2; do
          [[ $mode == baseline && $odf != 1 ]] && continue
          echo "$g,$odf,$mode,$rep"
        done
      done
    done
  done
}
# interleaved SWEEP CSV FIELDS "GPUS" "ODFS" "MODES" REPEATS: the CSV's runs (FIELDS: the
# columns gpus,odf,mode,repeat) are those of an interleaved sweep, in its order.
interleaved() {
  local got want
  got=$(rows "$2" | cut -d, -f"$3")
  want=$(expected "$4" "$5" "$6" "$7")
  [[ $got == "$want" ]] || fail "$1's runs (gpus,odf,mode,repeat), got:
$got
expected (interleaved):
$want"
}

# Jacobi3D, two repeats, interleaved, the repeat last.
: >"$FAKE_LOG"
REPEATS=2 LAUNCH=$fake/bin/launch WARMUP=1 bash "$root/perf/scaling_sweep.sh" "$fake/bin/jacobi3d" \
  "$fake/jacobi.csv" strong 32 "1 2" "1 4" "device baseline" 5 >/dev/null
header=$(grep -v '^#' "$fake/jacobi.csv" | head -1)
[[ $header == "kind,n,gpus,odf,mode,grid,iterations,avg_iteration_us,checksum,residual,repeat" ]] ||
  fail "scaling_sweep.sh's columns: $header"
grep -qx '# command: REPEATS=2 .*' "$fake/jacobi.csv" || fail "the header's command lacks REPEATS=2: $(head -1 "$fake/jacobi.csv")"
interleaved scaling_sweep.sh "$fake/jacobi.csv" 3,4,5,11 "1 2" "1 4" "device baseline" 2
[[ $(wc -l <"$FAKE_LOG") == 12 ]] || fail "12 runs expected, the program ran $(wc -l <"$FAKE_LOG") times"
# Each row holds its own run's report: the time the program gave for its ranks and ODF.
while IFS=, read -r kind n g odf mode grid iters avg sum res rep; do
  want_avg=$((g * 1000 + odf))
  [[ $mode == baseline ]] && want_avg+=.5
  [[ $kind,$n,$grid,$iters,$avg,$sum,$res == "strong,32,32x32x32,5,$want_avg,0x00c0ffee,1.25e-03" ]] ||
    fail "row of repeat $rep, $g GPUs, ODF $odf, $mode: $kind,$n,$grid,$iters,$avg,$sum,$res"
done < <(rows "$fake/jacobi.csv")

# REPEATS defaults to 3; a weak sweep's grid grows along x.
LAUNCH=$fake/bin/launch bash "$root/perf/scaling_sweep.sh" "$fake/bin/jacobi3d" "$fake/default.csv" \
  weak 16 "2" "2" "host" 3 >/dev/null
got=$(rows "$fake/default.csv" | cut -d, -f3,4,5,6,11 | tr '\n' ' ')
[[ $got == "2,2,host,32x16x16,1 2,2,host,32x16x16,2 2,2,host,32x16x16,3 " ]] ||
  fail "without REPEATS, 3 repeats expected: $got"

# A REPEATS that is not a positive integer is refused before any run.
for bad in 0 two -1 ""; do
  : >"$FAKE_LOG"
  if out=$(REPEATS=$bad LAUNCH=$fake/bin/launch bash "$root/perf/scaling_sweep.sh" "$fake/bin/jacobi3d" \
             "$fake/bad.csv" strong 16 "1" "1" "device" 2>&1); then
    [[ -z $bad ]] || fail "REPEATS='$bad' accepted: $out"
  else
    [[ $out == *"REPEATS must be a positive integer, not '$bad'"* ]] || fail "REPEATS='$bad': $out"
    [[ ! -s $FAKE_LOG ]] || fail "REPEATS='$bad' ran the program"
  fi
done
for bad in 0 x; do
  if out=$(REPEATS=$bad LAUNCH=$fake/bin/launch bash "$root/perf/minimd_sweep.sh" "$fake/bin/minimd" \
             "$fake/bad.csv" strong 4 "1" "1" "device" 2>&1); then
    fail "minimd_sweep.sh took REPEATS='$bad': $out"
  fi
  [[ $out == *"REPEATS must be a positive integer, not '$bad'"* ]] || fail "minimd_sweep.sh, REPEATS='$bad': $out"
done

# MiniMD, two repeats, interleaved, the repeat last.
REPEATS=2 LAUNCH=$fake/bin/launch bash "$root/perf/minimd_sweep.sh" "$fake/bin/minimd" \
  "$fake/minimd.csv" strong 4 "1 2" "1 8" "device host" 10 >/dev/null
header=$(grep -v '^#' "$fake/minimd.csv" | head -1)
[[ $header == "kind,s,gpus,odf,mode,cells,steps,atoms,atom_steps_per_s,t_total,t_force,t_neigh,t_comm,t_other,repeat" ]] ||
  fail "minimd_sweep.sh's columns: $header"
interleaved minimd_sweep.sh "$fake/minimd.csv" 3,4,5,15 "1 2" "1 8" "device host" 2
got=$(rows "$fake/minimd.csv" | sed -n 6p)
[[ $got == "strong,4,2,8,device,4x4x4,10,256,208.0e+06,0.5,0.3,0.1,0.05,0.05,1" ]] || fail "minimd_sweep.sh's 6th row: $got"

# The balance sweep takes the environment's REPEATS where its argument is left out.
REPEATS=2 VARIANTS="none even" LAUNCH=$fake/bin/launch bash "$root/perf/balance_sweep.sh" \
  "$fake/bin/jacobi3d" "$fake/balance.csv" 16 2 "4" 2 >/dev/null
got=$(rows "$fake/balance.csv" | cut -d, -f3,4,5 | tr '\n' ' ')
[[ $got == "4,none,1 4,even,1 4,none,2 4,even,2 " ]] || fail "balance_sweep.sh with REPEATS=2: $got"

# A bare name: from the install's bin/ where the installed copy names one (cmake --install
# writes installed_bin; here sed does), else from PATH, else an error.
cp "$root/perf/scaling_sweep.sh" "$root/perf/sweep_program.sh" "$fake/inst/share/kodo/scaling/"
cp "$fake/bin/jacobi3d" "$fake/inst/bin/"
sed -i "s|^installed_bin=\$|installed_bin='$fake/inst/bin'|" "$fake/inst/share/kodo/scaling/sweep_program.sh"
grep -qx "installed_bin='$fake/inst/bin'" "$fake/inst/share/kodo/scaling/sweep_program.sh" ||
  fail "perf/sweep_program.sh has no line 'installed_bin=' for the install to fill"
: >"$FAKE_LOG"
REPEATS=1 LAUNCH="bash $fake/bin/launch" bash "$fake/inst/share/kodo/scaling/scaling_sweep.sh" jacobi3d \
  "$fake/installed.csv" strong 16 "1" "2" "device" 2 >/dev/null
[[ $(rows "$fake/installed.csv" | cut -d, -f3,4,8) == "1,2,1002" ]] || fail "installed sweep: $(cat "$fake/installed.csv")"
REPEATS=1 PATH=$fake/bin:$PATH LAUNCH=launch bash "$root/perf/scaling_sweep.sh" jacobi3d \
  "$fake/onpath.csv" strong 16 "2" "1" "device" 2 >/dev/null
[[ $(rows "$fake/onpath.csv" | cut -d, -f3,4,8) == "2,1,2001" ]] || fail "sweep, jacobi3d on PATH: $(cat "$fake/onpath.csv")"
if out=$(REPEATS=1 LAUNCH=$fake/bin/launch bash "$root/perf/scaling_sweep.sh" no_such_program_kodo \
           "$fake/none.csv" strong 16 "1" "1" "device" 2>&1); then
  fail "a program found nowhere was accepted: $out"
fi
[[ $out == *"'no_such_program_kodo' is neither in this install's bin/ nor on PATH"* ]] || fail "no program: $out"

# scripts/plot: python3 is a stand-in that runs the real python3 for the matplotlib check
# (with a stand-in matplotlib of the version asked for on PYTHONPATH), makes a stand-in
# venv for -m venv, and logs everything else (running the plotter).
real_python=$(command -v python3 || true)
if [[ -z $real_python ]]; then
  echo "scaling_tools_sweep: no python3: scripts/plot's choice of Python not checked"
else
  mkdir -p "$fake/py"
  cat >"$fake/py/python3" <<EOF
#!/usr/bin/env bash
case \$1 in
  -c) exec "$real_python" "\$@" ;;
  -m) echo "make venv \$3" >>"\$FAKE_LOG"
      mkdir -p "\$3/bin"
      printf '#!/bin/sh\necho "venv pip \$*" >>"\$FAKE_LOG"\n' >"\$3/bin/pip"
      printf '#!/bin/sh\necho "venv python \$*" >>"\$FAKE_LOG"\n' >"\$3/bin/python"
      chmod +x "\$3/bin/pip" "\$3/bin/python" ;;
  *) echo "system python3 \$*" >>"\$FAKE_LOG" ;;
esac
EOF
  chmod +x "$fake/py/python3"
  plot() {  # plot MATPLOTLIB_VERSION: scripts/plot's log
    mkdir -p "$fake/mpl/$1/matplotlib"
    echo "__version__ = '$1'" >"$fake/mpl/$1/matplotlib/__init__.py"
    : >"$FAKE_LOG"
    PATH=$fake/py:$PATH PYTHONPATH=$fake/mpl/$1 KODO_CACHE=$fake/cache bash "$root/scripts/plot" "$fake/out" a.csv b.csv
    cat "$FAKE_LOG"
  }
  plotter="$root/scripts/../perf/plot_scaling.py"
  for version in 3.7.0 3.10.1 4.0; do
    got=$(plot "$version" 2>&1)
    [[ $got == "system python3 $plotter $fake/out a.csv b.csv" ]] || fail "matplotlib $version: $got"
  done
  [[ ! -e $fake/cache/plot-venv ]] || fail "a venv was made although python3 has matplotlib"
  got=$(plot 3.6.3 2>&1)
  [[ $got == *"no matplotlib 3.7 or later for python3"*"make venv $fake/cache/plot-venv"*"venv pip install --quiet --disable-pip-version-check matplotlib>=3.7"*"venv python $plotter $fake/out a.csv b.csv" ]] ||
    fail "matplotlib 3.6.3: expected a venv made and used: $got"
  [[ -f $fake/cache/plot-venv/.ready ]] || fail "the venv is not marked ready"
  got=$(plot 3.6.3 2>&1)
  [[ $got == "venv python $plotter $fake/out a.csv b.csv" ]] || fail "the cached venv is not reused: $got"
fi
echo "scaling tools (sweeps, plot): ok"
