#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Plots of scaling sweeps, one PNG per sweep kind and size:

- Jacobi3D (perf/scaling_sweep.sh CSVs): time per iteration against the number of GPUs,
  one line per mode and ODF; writes OUT_DIR/<kind>_<n>.png (e.g. strong_768.png).
- MiniMD (perf/minimd_sweep.sh CSVs): atom-steps/s against the number of GPUs, and the
  parallel efficiency (atom-steps/s per GPU relative to the line's smallest GPU count),
  one line per mode and ODF; repeated points (several files) are drawn at their median;
  writes OUT_DIR/minimd_<kind>_<s>.png (e.g. minimd_strong_64.png).

    perf/plot_scaling.py OUT_DIR SWEEP.csv [SWEEP.csv ...]

Each file is recognised by its columns; files of both kinds may be mixed. Prints the paths.
"""
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

JACOBI, MINIMD = "jacobi3d", "minimd"


def read_rows(paths):
    """All rows of all files, each with the machine its file's header names and the
    sweep it comes from (JACOBI or MINIMD, from the file's columns)."""
    rows = []
    for path in paths:
        machine = ""
        with open(path) as f:
            lines = []
            for line in f:
                if line.startswith("# machine:"):
                    machine = line.split(":", 1)[1].strip()
                elif not line.startswith("#"):
                    lines.append(line)
        reader = csv.DictReader(lines)
        columns = reader.fieldnames or []
        if "atom_steps_per_s" in columns:
            sweep = MINIMD
        elif "avg_iteration_us" in columns:
            sweep = JACOBI
        else:
            raise ValueError(f"{path}: neither a scaling_sweep.sh nor a minimd_sweep.sh CSV "
                             f"(columns: {', '.join(columns) or 'none'})")
        for row in reader:
            row["machine"] = machine
            row["sweep"] = sweep
            rows.append(row)
    return rows


# Line style by the mode's base, marker by its variant (fusion, graphs, overlap).
STYLES = {"device": "-", "host": "--", "device-sync": ":", "baseline": "-."}
MARKERS = {"": "o", "A": "<", "B": "v", "C": "P", "graphs": "^", "A+graphs": ">",
           "B+graphs": "x", "C+graphs": "D", "overlap": "*"}


def odf_colours(lines):
    """Colour by ODF (lines are keyed by (mode, odf)), so many lines stay apart."""
    odfs = sorted({odf for _, odf in lines})
    return {odf: plt.cm.viridis(i / max(1, len(odfs) - 1)) for i, odf in enumerate(odfs)}


def gpu_axis(ax, lines):
    gpus = sorted({p[0] for pts in lines.values() for p in pts})
    ax.set_xscale("log", base=2)
    ax.set_xticks(gpus, [str(g) for g in gpus])
    ax.set_xlabel("GPUs")
    ax.grid(True, which="both", alpha=0.3)


def machines_note(machines):
    named = sorted(m for m in machines if m)
    return f" ({', '.join(named)})" if named else ""


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(path)


def plot_jacobi(rows, out_dir):
    sweeps = defaultdict(lambda: defaultdict(list))  # (kind, n) -> (mode, odf) -> points
    machines = defaultdict(set)  # (kind, n) -> machines
    for r in rows:
        machines[(r["kind"], int(r["n"]))].add(r["machine"])
        sweeps[(r["kind"], int(r["n"]))][(r["mode"], int(r["odf"]))].append(
            (int(r["gpus"]), float(r["avg_iteration_us"])))
    for (kind, n), lines in sorted(sweeps.items()):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        colours = odf_colours(lines)
        for (mode, odf), points in sorted(lines.items()):
            points.sort()
            base, _, variant = mode.partition("+")
            baseline = base == "baseline"
            ax.plot([p[0] for p in points], [p[1] for p in points],
                    marker="s" if baseline else MARKERS.get(variant, "o"),
                    linestyle=STYLES.get(base, "-"), color="black" if baseline else colours[odf],
                    label=f"{mode}, ODF {odf}")
        times = [p[1] for pts in lines.values() for p in pts]
        if max(times) > 10 * min(times):
            ax.set_yscale("log")
        gpu_axis(ax, lines)
        ax.set_ylabel("time per iteration (us)")
        per = " per GPU" if kind == "weak" else " in total"
        ax.set_title(f"Jacobi3D {kind} scaling, {n}^3{per}" + machines_note(machines[(kind, n)]))
        ax.legend(fontsize="small", ncol=2)
        save(fig, out_dir / f"{kind}_{n}.png")


def plot_minimd(rows, out_dir):
    # (kind, s) -> (mode, odf) -> gpus -> atom-steps/s of every run
    sweeps = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    machines = defaultdict(set)
    for r in rows:
        key = (r["kind"], int(r["s"]))
        machines[key].add(r["machine"])
        sweeps[key][(r["mode"], int(r["odf"]))][int(r["gpus"])].append(float(r["atom_steps_per_s"]))
    for (kind, s), runs in sorted(sweeps.items()):
        lines = {line: sorted((g, statistics.median(v)) for g, v in by_gpus.items())
                 for line, by_gpus in runs.items()}
        fig, (rate_ax, eff_ax) = plt.subplots(1, 2, figsize=(12, 4.5))
        colours = odf_colours(lines)
        for (mode, odf), points in sorted(lines.items()):
            style = dict(marker="o", linestyle=STYLES.get(mode, "-"), color=colours[odf],
                         label=f"{mode}, ODF {odf}")
            gpus = [p[0] for p in points]
            rate_ax.plot(gpus, [p[1] for p in points], **style)
            g0, rate0 = points[0]
            eff_ax.plot(gpus, [100 * (r / g) / (rate0 / g0) for g, r in points], **style)
        for ax in (rate_ax, eff_ax):
            gpu_axis(ax, lines)
        rate_ax.set_yscale("log")
        rate_ax.set_ylabel("atom-steps/s")
        eff_ax.set_ylabel("efficiency (%): atom-steps/s per GPU\nrelative to the fewest GPUs")
        eff_ax.axhline(100, color="grey", linewidth=0.8)
        eff_ax.set_ylim(bottom=0)
        atoms = 4 * s**3
        per = " per GPU" if kind == "weak" else " in total"
        rate_ax.legend(fontsize="small", ncol=2)
        fig.suptitle(f"MiniMD {kind} scaling, {s}^3 cells ({atoms:,} atoms){per}"
                     + machines_note(machines[(kind, s)]))
        save(fig, out_dir / f"minimd_{kind}_{s}.png")


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    out_dir = Path(argv[1])
    try:
        rows = read_rows(argv[2:])
    except (OSError, ValueError, KeyError) as e:
        sys.stderr.write(f"plot_scaling: {e}\n")
        return 2
    out_dir.mkdir(parents=True, exist_ok=True)
    plot_jacobi([r for r in rows if r["sweep"] == JACOBI], out_dir)
    plot_minimd([r for r in rows if r["sweep"] == MINIMD], out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
