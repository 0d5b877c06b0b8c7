#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""perf/plot_scaling.py's reduction of repeated sweeps: each configuration's runs become
median, lowest and highest; every efficiency is taken against the best configuration (all
modes and ODFs) on the fewest GPUs, not against a line's own first point; a CSV without
the repeat column reads as one run per row. Where matplotlib imports, the plots are drawn
too (PNG files); without it that part is skipped.

    scaling_tools_test.py PATH/TO/plot_scaling.py
"""
import importlib.util
import os
import sys
import tempfile
import unittest
from unittest import mock

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
spec = importlib.util.spec_from_file_location("plot_scaling", sys.argv.pop(1))
plot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot)

HEADER = """# command: REPEATS=3 perf/scaling_sweep.sh jacobi3d out.csv strong 64 "1 2" "1 8" "device"
# machine: test-machine
# commit: abc1234
"""
# ODF 1 is the best on one GPU (100 us); ODF 8 is 4x slower there but halves its time on
# two GPUs: against its own first point it would read 100%, against the best 25%.
REPEATED = HEADER + """kind,n,gpus,odf,mode,grid,iterations,avg_iteration_us,checksum,residual,repeat
strong,64,1,1,device,64x64x64,10,100.0,0x1,1,1
strong,64,1,8,device,64x64x64,10,400.0,0x1,1,1
strong,64,2,1,device,64x64x64,10,60.0,0x1,1,1
strong,64,2,8,device,64x64x64,10,200.0,0x1,1,1
strong,64,1,1,device,64x64x64,10,90.0,0x1,1,2
strong,64,1,8,device,64x64x64,10,420.0,0x1,1,2
strong,64,2,1,device,64x64x64,10,50.0,0x1,1,2
strong,64,2,8,device,64x64x64,10,190.0,0x1,1,2
strong,64,1,1,device,64x64x64,10,110.0,0x1,1,3
strong,64,1,8,device,64x64x64,10,380.0,0x1,1,3
strong,64,2,1,device,64x64x64,10,80.0,0x1,1,3
strong,64,2,8,device,64x64x64,10,210.0,0x1,1,3
"""
# The same sweep as an older scaling_sweep.sh wrote it: no repeat column, one run.
OLD = HEADER + """kind,n,gpus,odf,mode,grid,iterations,avg_iteration_us,checksum,residual
strong,64,1,1,device,64x64x64,10,100.0,0x1,1
strong,64,1,8,device,64x64x64,10,400.0,0x1,1
strong,64,2,1,device,64x64x64,10,60.0,0x1,1
strong,64,2,8,device,64x64x64,10,200.0,0x1,1
"""


def write(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def jacobi_lines(rows):
    """What plot_jacobi groups: (mode, odf) -> {gpus: [time of each run]}."""
    lines = {}
    for r in rows:
        lines.setdefault((r["mode"], int(r["odf"])), {}).setdefault(int(r["gpus"]), []).append(
            float(r["avg_iteration_us"]))
    return lines


class Reduction(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.repeated = write(self.dir.name, "strong_64.csv", REPEATED)
        self.old = write(self.dir.name, "strong_64_old.csv", OLD)

    def tearDown(self):
        self.dir.cleanup()

    def test_repeats_become_median_lowest_highest(self):
        rows = plot.read_rows([self.repeated])
        self.assertEqual(sorted({r["repeat"] for r in rows}), ["1", "2", "3"])
        points = plot.summarize(jacobi_lines(rows))
        self.assertEqual(points[("device", 1)], [(1, 100.0, 90.0, 110.0), (2, 60.0, 50.0, 80.0)])
        self.assertEqual(points[("device", 8)],
                         [(1, 400.0, 380.0, 420.0), (2, 200.0, 190.0, 210.0)])
        self.assertEqual(plot.runs_note(jacobi_lines(rows)),
                         "points: median of 3 runs, bars from the lowest to the highest")

    def test_old_csv_without_repeat_is_one_run_per_row(self):
        rows = plot.read_rows([self.old])
        self.assertEqual(len(rows), 4)
        self.assertEqual({r["repeat"] for r in rows}, {"1"})
        points = plot.summarize(jacobi_lines(rows))
        self.assertEqual(points[("device", 8)], [(1, 400.0, 400.0, 400.0), (2, 200.0, 200.0, 200.0)])
        self.assertEqual(plot.runs_note(jacobi_lines(rows)), "points: one run each")
        # Old and new files together: each old row is one more run of its configuration.
        both = plot.summarize(jacobi_lines(plot.read_rows([self.repeated, self.old])))
        self.assertEqual(both[("device", 1)][0], (1, 100.0, 90.0, 110.0))
        self.assertEqual(plot.runs_note(jacobi_lines(plot.read_rows([self.repeated, self.old]))),
                         "points: median of 4 runs, bars from the lowest to the highest")

    def test_efficiency_is_against_the_best_on_the_fewest_gpus(self):
        points = plot.summarize(jacobi_lines(plot.read_rows([self.repeated])))
        line, reference = plot.best_on_fewest(points, "time")
        self.assertEqual((line, reference), (("device", 1), (1, 100.0)))
        slow = plot.efficiencies(points[("device", 8)], reference, "strong", "time")
        # 100 us * 1 GPU / (400 us * 1 GPU) = 25%; on 2 GPUs 100 / (200 * 2) = 25% as well,
        # not the 100% ODF 8 scores against its own first point.
        self.assertAlmostEqual(slow[0][1], 25.0)
        self.assertAlmostEqual(slow[1][1], 25.0)
        # The bars: the fastest run (190 us) is the highest efficiency, the slowest the lowest.
        self.assertAlmostEqual(slow[1][2], 100.0 * 100.0 / (210.0 * 2))
        self.assertAlmostEqual(slow[1][3], 100.0 * 100.0 / (190.0 * 2))
        best = plot.efficiencies(points[("device", 1)], reference, "strong", "time")
        self.assertAlmostEqual(best[0][1], 100.0)
        self.assertAlmostEqual(best[1][1], 100.0 * 100.0 / (60.0 * 2))
        self.assertLess(best[0][2], 100.0)  # its own slower runs: below 100%
        self.assertGreater(best[0][3], 100.0)

    def test_best_is_on_the_fewest_gpus_only(self):
        # A configuration measured only on more GPUs is never the reference, however fast.
        points = {("device", 1): [(2, 100.0, 100.0, 100.0), (4, 60.0, 60.0, 60.0)],
                  ("host", 1): [(2, 150.0, 150.0, 150.0)],
                  ("device", 4): [(4, 10.0, 10.0, 10.0)]}
        self.assertEqual(plot.best_on_fewest(points, "time"), (("device", 1), (2, 100.0)))
        # Weak scaling: the same time on more GPUs is 100%.
        eff = plot.efficiencies(points[("host", 1)], (2, 100.0), "weak", "time")
        self.assertAlmostEqual(eff[0][1], 100.0 * 100.0 / 150.0)

    def test_rates_take_the_highest(self):
        rates = {("device", 1): [(1, 2.0e9, 1.9e9, 2.1e9), (2, 3.0e9, 3.0e9, 3.0e9)],
                 ("device", 8): [(1, 1.0e9, 1.0e9, 1.0e9), (2, 1.8e9, 1.8e9, 1.8e9)]}
        line, reference = plot.best_on_fewest(rates, "rate")
        self.assertEqual((line, reference), (("device", 1), (1, 2.0e9)))
        eff = plot.efficiencies(rates[("device", 8)], reference, "strong", "rate")
        self.assertAlmostEqual(eff[0][1], 50.0)
        self.assertAlmostEqual(eff[1][1], 45.0)  # 1.8e9 / 2 GPUs against 2.0e9 / 1

    @unittest.skipUnless(importlib.util.find_spec("matplotlib"), "matplotlib does not import")
    def test_plots(self):
        out = os.path.join(self.dir.name, "plots")
        minimd = write(self.dir.name, "minimd.csv", HEADER + "\n".join([
            "kind,s,gpus,odf,mode,cells,steps,atoms,atom_steps_per_s,t_total,t_force,t_neigh,"
            "t_comm,t_other,repeat",
            "strong,8,1,1,device,8x8x8,10,2048,2.0e+09,1,1,1,1,1,1",
            "strong,8,2,1,device,8x8x8,10,2048,3.5e+09,1,1,1,1,1,1",
            "strong,8,1,1,device,8x8x8,10,2048,2.2e+09,1,1,1,1,1,2",
            "strong,8,2,1,device,8x8x8,10,2048,3.7e+09,1,1,1,1,1,2", ""]))
        import matplotlib.figure

        # What each figure's efficiency panel shows, taken as it is saved.
        panels = {}
        save = matplotlib.figure.Figure.savefig

        def capture(fig, path, *args, **kwargs):
            eff = fig.axes[1]
            panels[os.path.basename(str(path))] = (
                eff.get_ylabel(),
                {c.get_label(): list(c.lines[0].get_ydata()) for c in eff.containers})
            return save(fig, path, *args, **kwargs)

        with mock.patch.object(matplotlib.figure.Figure, "savefig", capture):
            self.assertEqual(plot.main(["plot_scaling.py", out, self.repeated, self.old, minimd]), 0)
        for name in ("strong_64.png", "minimd_strong_8.png"):
            with open(os.path.join(out, name), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", name)
        label, lines = panels["strong_64.png"]
        self.assertIn("against the best\non 1 GPU: device, ODF 1", label)
        for got, want in zip(lines["device, ODF 8"], [25.0, 25.0]):
            self.assertAlmostEqual(got, want)
        for got, want in zip(lines["device, ODF 1"], [100.0, 100.0 * 100.0 / (2 * 60.0)]):
            self.assertAlmostEqual(got, want)
        label, lines = panels["minimd_strong_8.png"]
        self.assertIn("against the best\non 1 GPU: device, ODF 1", label)
        for got, want in zip(lines["device, ODF 1"], [100.0, 100.0 * 3.6 / 2 / 2.1]):
            self.assertAlmostEqual(got, want)


if __name__ == "__main__":
    unittest.main(verbosity=2)
