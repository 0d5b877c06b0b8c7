#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Plots of scaling sweeps, one PNG per sweep kind and size, each with two panels: the
measure against the number of GPUs, with the ideal scaling of the best configuration on
the fewest GPUs, and the parallel efficiency of every point against that same best
configuration (the lowest time, or highest rate, of all modes and ODFs on the fewest
GPUs), so that a slow ODF reads low efficiency rather than good scaling of itself.

- Jacobi3D (perf/scaling_sweep.sh CSVs): time per iteration, one line per mode and ODF;
  writes OUT_DIR/<kind>_<n>.png (e.g. strong_768.png). Strong scaling's ideal time falls
  as 1/GPUs; weak scaling's stays flat.
- MiniMD (perf/minimd_sweep.sh CSVs): atom-steps/s, one line per mode and ODF; writes
  OUT_DIR/minimd_<kind>_<s>.png (e.g. minimd_strong_64.png). The ideal rate grows with
  the GPUs.

A configuration measured more than once (several rows: the sweeps' repeats, or several
files) is drawn at the median of its runs with a bar from the fastest to the slowest; a
CSV without a repeat column counts each row as one run. The legend sits outside the
panels; the footer says how many runs each point has and names the commit, file and
machine of the data.

    perf/plot_scaling.py OUT_DIR SWEEP.csv [SWEEP.csv ...]

Each file is recognised by its columns; files of both kinds may be mixed. Prints the paths.
"""
import csv
import statistics
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

JACOBI, MINIMD = "jacobi3d", "minimd"


def read_rows(paths):
    """All rows of all files, each with the sweep it comes from (JACOBI or MINIMD, from
    the file's columns) and the file's name, machine and commit (from its header)."""
    rows = []
    for path in paths:
        machine = commit = ""
        with open(path) as f:
            lines = []
            for line in f:
                if line.startswith("# machine:"):
                    machine = line.split(":", 1)[1].strip()
                elif line.startswith("# commit:"):
                    words = line.split(":", 1)[1].split()
                    commit = words[0] if words else ""
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
            row.update(machine=machine, commit=commit, file=Path(path).name, sweep=sweep)
            if row.get("repeat") is None:  # older sweeps: one run per row
                row["repeat"] = "1"
            rows.append(row)
    return rows


def repeats(runs):
    """{gpus: [value of each run]} -> [(gpus, median, lowest, highest)], by GPUs."""
    return [(g, statistics.median(v), min(v), max(v)) for g, v in sorted(runs.items()) if v]


def summarize(lines):
    """{line: {gpus: [value of each run]}} -> {line: [(gpus, median, lowest, highest)]}."""
    return {line: repeats(runs) for line, runs in lines.items()}


def best_on_fewest(points, measure):
    """The reference of every efficiency: (line, (gpus, median)) of the best configuration
    on the fewest GPUs of `points` ({line: [(gpus, median, lowest, highest)]}), by its
    median: the lowest time or the highest rate, over all modes and ODFs."""
    fewest = min(p[0] for pts in points.values() for p in pts)
    candidates = sorted((p[1], line) for line, pts in points.items() for p in pts
                        if p[0] == fewest)
    value, line = candidates[0] if measure == "time" else candidates[-1]
    return line, (fewest, value)


def efficiencies(pts, reference, kind, measure):
    """[(gpus, median, lowest, highest)] of one line -> [(gpus, efficiency of the median,
    lowest efficiency, highest efficiency)], each against `reference` (a (gpus, value)
    pair: best_on_fewest's)."""
    result = []
    for g, med, lo, hi in pts:
        eff = [efficiency(v, g, reference, kind, measure) for v in (med, lo, hi)]
        result.append((g, eff[0], min(eff), max(eff)))
    return result


def runs_note(lines):
    """What each point is: "median of 3 runs", "median of 2 to 3 runs", "one run"."""
    counts = sorted({len(v) for runs in lines.values() for v in runs.values() if v})
    if counts == [1]:
        return "points: one run each"
    runs = f"{counts[0]} to {counts[-1]}" if len(counts) > 1 else str(counts[0])
    return f"points: median of {runs} runs, bars from the lowest to the highest"


def efficiency(value, gpus, reference, kind, measure):
    """Parallel efficiency (%) of `value` on `gpus` GPUs against `reference`, a
    (gpus, value) pair. measure "time" (per iteration: the work of a strong sweep is
    fixed, a weak sweep's grows with the GPUs) or "rate" (work per second: each GPU's
    share should stay the same)."""
    g0, v0 = reference
    if measure == "rate":
        return 100.0 * (value / gpus) / (v0 / g0)
    return 100.0 * v0 / value * (g0 / gpus if kind == "strong" else 1.0)


def ideal(gpus, reference, kind, measure):
    """What `reference`, a (gpus, value) pair, would become on `gpus` GPUs with perfect
    scaling (efficiency 100%)."""
    g0, v0 = reference
    if measure == "rate":
        return v0 * gpus / g0
    return v0 * g0 / gpus if kind == "strong" else v0


# Line style by the mode's base, marker by its variant (fusion, graphs, overlap).
STYLES = {"device": "-", "host": "--", "device-sync": ":", "baseline": "-."}
MARKERS = {"": "o", "A": "<", "B": "v", "C": "P", "graphs": "^", "A+graphs": ">",
           "B+graphs": "x", "C+graphs": "D", "overlap": "*"}


def provenance(sources):
    """The footer: each commit with its files and their machines."""
    by_commit = defaultdict(list)
    for file, commit, machine in sorted(sources):
        by_commit[commit or "unknown"].append(f"{file} ({machine or 'machine unknown'})")
    text = "; ".join(f"commit {c}: {', '.join(files)}" for c, files in sorted(by_commit.items()))
    return "\n".join(textwrap.wrap(text, 150))


def machines_note(sources):
    named = sorted({m for _, _, m in sources if m})
    return f" ({', '.join(named)})" if named else ""


def plot_sweep(plt, lines, kind, measure, ylabel, title, sources, path):
    """One figure: `lines` maps (mode, odf) to {gpus: [value of each run]}."""
    points = summarize(lines)
    gpus = sorted({p[0] for pts in points.values() for p in pts})
    (best_mode, best_odf), reference = best_on_fewest(points, measure)
    odfs = sorted({odf for _, odf in points})
    colours = {odf: plt.cm.viridis(i / max(1, len(odfs) - 1)) for i, odf in enumerate(odfs)}
    fig, (value_ax, eff_ax) = plt.subplots(1, 2, figsize=(12, 4.6), layout="constrained")
    highest = []  # the top of each efficiency bar
    for (mode, odf), pts in sorted(points.items()):
        base, _, variant = mode.partition("+")
        baseline = base == "baseline"
        style = dict(marker="s" if baseline else MARKERS.get(variant, "o"),
                     linestyle=STYLES.get(base, "-"),
                     color="black" if baseline else colours[odf], label=f"{mode}, ODF {odf}")
        xs = [p[0] for p in pts]
        bars = any(p[2] < p[3] for p in pts)
        value_ax.errorbar(xs, [p[1] for p in pts], capsize=3 if bars else 0,
                          yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]]
                          if bars else None, **style)
        eff = efficiencies(pts, reference, kind, measure)
        highest += [e[3] for e in eff]
        eff_ax.errorbar(xs, [e[1] for e in eff], capsize=3 if bars else 0,
                        yerr=[[e[1] - e[2] for e in eff], [e[3] - e[1] for e in eff]]
                        if bars else None, **style)
    # The ideal: the best configuration on the fewest GPUs, scaled perfectly.
    few = f"{gpus[0]} GPU{'s' if gpus[0] > 1 else ''}"
    value_ax.plot(gpus, [ideal(g, reference, kind, measure) for g in gpus],
                  color="grey", linestyle=(0, (4, 3)), linewidth=1.2, zorder=3,
                  label=f"ideal scaling of the best on {few}")
    eff_ax.axhline(100, color="grey", linestyle=(0, (4, 3)), linewidth=1.2, zorder=3)
    values = [v for pts in points.values() for p in pts for v in p[1:]]
    values += [ideal(g, reference, kind, measure) for g in gpus]
    # Log scales where the ideal is a straight line (strong scaling, rates) or values spread.
    if measure == "rate" or kind == "strong" or max(values) > 10 * min(values):
        value_ax.set_yscale("log")
    for ax in (value_ax, eff_ax):
        ax.set_xscale("log", base=2)
        ax.set_xticks(gpus, [str(g) for g in gpus])
        ax.set_xlabel("GPUs")
        ax.grid(True, which="both", alpha=0.3)
    value_ax.set_ylabel(ylabel)
    eff_ax.set_ylabel(f"parallel efficiency (%), against the best\non {few}: "
                      f"{best_mode}, ODF {best_odf}")
    eff_ax.set_ylim(0, max([110.0] + [1.08 * e for e in highest]))
    handles, labels = value_ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize="small",
               title="mode, ODF", title_fontsize="small")
    fig.suptitle(title + machines_note(sources))
    fig.supxlabel(runs_note(lines) + "\n" + provenance(sources), fontsize=7, color="dimgrey")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(path)


def plot_jacobi(plt, rows, out_dir):
    sweeps = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    sources = defaultdict(set)  # (kind, n) -> (file, commit, machine)
    for r in rows:
        key = (r["kind"], int(r["n"]))
        sources[key].add((r["file"], r["commit"], r["machine"]))
        sweeps[key][(r["mode"], int(r["odf"]))][int(r["gpus"])].append(
            float(r["avg_iteration_us"]))
    for (kind, n), lines in sorted(sweeps.items()):
        per = " per GPU" if kind == "weak" else " in total"
        plot_sweep(plt, lines, kind, "time", "time per iteration (us)",
                   f"Jacobi3D {kind} scaling, {n}^3{per}", sources[(kind, n)],
                   out_dir / f"{kind}_{n}.png")


def plot_minimd(plt, rows, out_dir):
    sweeps = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    sources = defaultdict(set)
    for r in rows:
        key = (r["kind"], int(r["s"]))
        sources[key].add((r["file"], r["commit"], r["machine"]))
        sweeps[key][(r["mode"], int(r["odf"]))][int(r["gpus"])].append(
            float(r["atom_steps_per_s"]))
    for (kind, s), lines in sorted(sweeps.items()):
        per = " per GPU" if kind == "weak" else " in total"
        plot_sweep(plt, lines, kind, "rate", "atom-steps/s",
                   f"MiniMD {kind} scaling, {s}^3 cells ({4 * s**3:,} atoms){per}",
                   sources[(kind, s)], out_dir / f"minimd_{kind}_{s}.png")


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
    import matplotlib  # here, so that the functions above import without it (tests)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        plot_jacobi(plt, [r for r in rows if r["sweep"] == JACOBI], out_dir)
        plot_minimd(plt, [r for r in rows if r["sweep"] == MINIMD], out_dir)
    except (ValueError, KeyError, TypeError) as e:  # a row with a field missing or malformed
        sys.stderr.write(f"plot_scaling: {e}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
