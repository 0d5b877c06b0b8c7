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
    rows, machines = [], set()
    for path in paths:
        with open(path) as f:
            lines = []
            for line in f:
                if line.startswith("# machine:"):
                    machines.add(line.split(":", 1)[1].strip())
                elif not line.startswith("#"):
                    lines.append(line)
        rows.extend(csv.DictReader(lines))
    return rows, machines


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    out_dir = Path(argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    rows, machines = read_rows(argv[2:])
    sweeps = defaultdict(lambda: defaultdict(list))  # (kind, n) -> (mode, odf) -> points
    for r in rows:
        sweeps[(r["kind"], int(r["n"]))][(r["mode"], int(r["odf"]))].append(
            (int(r["gpus"]), float(r["avg_iteration_us"])))
    for (kind, n), lines in sorted(sweeps.items()):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        # Colour by ODF, line style by mode, so many lines stay apart.
        odfs = sorted({odf for _, odf in lines})
        colours = {odf: plt.cm.viridis(i / max(1, len(odfs) - 1)) for i, odf in enumerate(odfs)}
        styles = {"device": "-", "host": "--", "device-sync": ":", "baseline": "-."}
        for (mode, odf), points in sorted(lines.items()):
            points.sort()
            baseline = mode == "baseline"
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="s" if baseline else "o",
                    linestyle=styles.get(mode, "-"), color="black" if baseline else colours[odf],
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
        ax.set_title(f"Jacobi3D {kind} scaling, {n}^3{per}" + (f" ({', '.join(sorted(machines))})" if machines else ""))
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
