#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""perf/plot_scaling.py's arithmetic, without matplotlib: repeats of a configuration
become median, lowest and highest; efficiency and the ideal follow the sweep's kind;
the file header's commit and machine reach the footer.

    plot_scaling_test.py PATH/TO/plot_scaling.py
"""
import importlib.util
import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
spec = importlib.util.spec_from_file_location("plot_scaling", sys.argv.pop(1))
plot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot)

SWEEP = """# command: perf/scaling_sweep.sh jacobi3d out.csv strong 64 "1 2" "1" "device"
# machine: test-machine
# commit: abc1234 (a note)
kind,n,gpus,odf,mode,grid,iterations,avg_iteration_us,checksum,residual
strong,64,1,1,device,64x64x64,10,100.0,0x1,1
strong,64,2,1,device,64x64x64,10,60.0,0x1,1
strong,64,2,1,device,64x64x64,10,50.0,0x1,1
strong,64,2,1,device,64x64x64,10,80.0,0x1,1
"""


class PlotScaling(unittest.TestCase):
    def test_repeats_give_median_and_range(self):
        self.assertEqual(plot.repeats({2: [60.0, 50.0, 80.0], 1: [100.0]}),
                         [(1, 100.0, 100.0, 100.0), (2, 60.0, 50.0, 80.0)])
        self.assertEqual(plot.repeats({4: [1.0, 3.0]}), [(4, 2.0, 1.0, 3.0)])

    def test_efficiency_and_ideal(self):
        # Strong: half the time on twice the GPUs is 100%; the same time is 50%.
        self.assertAlmostEqual(plot.efficiency(50.0, 2, (1, 100.0), "strong", "time"), 100.0)
        self.assertAlmostEqual(plot.efficiency(100.0, 2, (1, 100.0), "strong", "time"), 50.0)
        # Weak: the same time is 100%.
        self.assertAlmostEqual(plot.efficiency(100.0, 4, (1, 100.0), "weak", "time"), 100.0)
        self.assertAlmostEqual(plot.efficiency(125.0, 4, (1, 100.0), "weak", "time"), 80.0)
        # Rates: each GPU's share.
        self.assertAlmostEqual(plot.efficiency(3.0, 4, (2, 2.0), "strong", "rate"), 75.0)
        self.assertAlmostEqual(plot.ideal(4, (1, 100.0), "strong", "time"), 25.0)
        self.assertAlmostEqual(plot.ideal(4, (1, 100.0), "weak", "time"), 100.0)
        self.assertAlmostEqual(plot.ideal(4, (2, 2.0), "weak", "rate"), 4.0)

    def test_rows_carry_their_file_commit_and_machine(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "strong_64.csv")
            with open(path, "w") as f:
                f.write(SWEEP)
            rows = plot.read_rows([path])
        self.assertEqual(len(rows), 4)
        self.assertEqual({(r["sweep"], r["commit"], r["machine"], r["file"]) for r in rows},
                         {(plot.JACOBI, "abc1234", "test-machine", "strong_64.csv")})
        self.assertEqual(plot.provenance({("strong_64.csv", "abc1234", "test-machine")}),
                         "commit abc1234: strong_64.csv (test-machine)")

    def test_other_files_are_refused(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "other.csv")
            with open(path, "w") as f:
                f.write("a,b\n1,2\n")
            with self.assertRaisesRegex(ValueError, "neither a scaling_sweep.sh"):
                plot.read_rows([path])


if __name__ == "__main__":
    unittest.main()
