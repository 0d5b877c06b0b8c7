#!/usr/bin/env python3
"""Plots of scaling sweeps (perf/scaling_sweep.sh CSVs): time per iteration against the
number of GPUs, one line per mode and ODF, one PNG per sweep kind and size.

    perf/plot_scaling.py OUT_DIR SWEEP.csv [SWEEP.csv ...]

Writes OUT_DIR/<kind>_<n>.png (e.g. strong_768.png) and prints the paths.
"""
import csv
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_rows(paths):
    """All rows of all files, each with the machine its file's header names."""
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
        for row in csv.DictReader(lines):
            row["machine"] = machine
            rows.append(row)
    return rows


# Line style by the mode's base, marker by its variant (fusion, graphs, overlap).
STYLES = {"device": "-", "host": "--", "device-sync": ":", "baseline": "-."}
MARKERS = {"": "o", "A": "<", "B": "v", "C": "P", "graphs": "^", "A+graphs": ">",
           "B+graphs": "x", "C+graphs": "D", "overlap": "*"}


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    out_dir = Path(argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = read_rows(argv[2:])
    sweeps = defaultdict(lambda: defaultdict(list))  # (kind, n) -> (mode, odf) -> points
    machines = defaultdict(set)  # (kind, n) -> machines
    for r in rows:
        machines[(r["kind"], int(r["n"]))].add(r["machine"])
        sweeps[(r["kind"], int(r["n"]))][(r["mode"], int(r["odf"]))].append(
            (int(r["gpus"]), float(r["avg_iteration_us"])))
    for (kind, n), lines in sorted(sweeps.items()):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        # Colour by ODF, line style by mode, so many lines stay apart.
        odfs = sorted({odf for _, odf in lines})
        colours = {odf: plt.cm.viridis(i / max(1, len(odfs) - 1)) for i, odf in enumerate(odfs)}
        for (mode, odf), points in sorted(lines.items()):
            points.sort()
            base, _, variant = mode.partition("+")
            baseline = base == "baseline"
            ax.plot([p[0] for p in points], [p[1] for p in points],
                    marker="s" if baseline else MARKERS.get(variant, "o"),
                    linestyle=STYLES.get(base, "-"), color="black" if baseline else colours[odf],
                    label=f"{mode}, ODF {odf}")
        gpus = sorted({p[0] for pts in lines.values() for p in pts})
        times = [p[1] for pts in lines.values() for p in pts]
        if max(times) > 10 * min(times):
            ax.set_yscale("log")
        ax.set_xscale("log", base=2)
        ax.set_xticks(gpus, [str(g) for g in gpus])
        ax.set_xlabel("GPUs")
        ax.set_ylabel("time per iteration (us)")
        per = " per GPU" if kind == "weak" else " in total"
        named = sorted(m for m in machines[(kind, n)] if m)
        ax.set_title(f"Jacobi3D {kind} scaling, {n}^3{per}" + (f" ({', '.join(named)})" if named else ""))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small", ncol=2)
        path = out_dir / f"{kind}_{n}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
