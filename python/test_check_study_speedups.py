"""Tests of bench/check-study-speedups.py on a hand-made store (run with
python3 -m unittest discover -s python -p 'test_*.py')."""

import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "bench", "check-study-speedups.py")


class CheckStudySpeedups(unittest.TestCase):
    """A store with the few tables the check reads: one job alone at 100
    samples/s, then two together at 80/s each (1.6x) for 6 epochs, and two
    together for only 2 epochs (no figure)."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.store = os.path.join(self.dir.name, "colo.db")
        db = sqlite3.connect(self.store)
        db.executescript(
            "CREATE TABLE jobs (id INTEGER PRIMARY KEY, run_id INTEGER, name TEXT);"
            "CREATE TABLE job_events (id INTEGER PRIMARY KEY, job_id INTEGER, time_ms INTEGER,"
            " kind TEXT, epoch INTEGER, samples INTEGER);"
            "CREATE TABLE experiment_cases (id INTEGER PRIMARY KEY, experiment_id INTEGER,"
            " name TEXT, mechanism TEXT, degree INTEGER, run_id INTEGER, status TEXT);")
        job = 0
        # (run, case, mechanism, jobs, epoch seconds, epochs)
        for run, case, mechanism, n, epoch_s, epochs in [
                (1, "toy/exclusive/x1", "exclusive", 1, 10, 4),
                (2, "toy/mps/x2", "mps", 2, 12.5, 6),
                (3, "toy/naive/x2", "naive", 2, 12.5, 2)]:
            db.execute("INSERT INTO experiment_cases (experiment_id, name, mechanism, degree, "
                       "run_id, status) VALUES (1, ?, ?, ?, ?, 'ok')", (case, mechanism, n, run))
            for k in range(n):
                job += 1
                db.execute("INSERT INTO jobs VALUES (?, ?, ?)", (job, run, "toy#%d" % (k + 1)))
                db.execute("INSERT INTO job_events (job_id, time_ms, kind) VALUES (?, ?, "
                           "'start')", (job, run * 1_000_000))
                for e in range(1, epochs + 1):
                    db.execute("INSERT INTO job_events (job_id, time_ms, kind, epoch, samples) "
                               "VALUES (?, ?, 'epoch_end', ?, 1000)",
                               (job, run * 1_000_000 + int(e * epoch_s * 1000) + k * 100, e))
        db.commit()
        db.close()

    def tearDown(self):
        self.dir.cleanup()

    def check(self, *args):
        out = subprocess.run([sys.executable, SCRIPT, self.store, *args], capture_output=True,
                             text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        return {line.split()[1]: line for line in out.stdout.splitlines()[1:]}

    def test_each_case_against_its_experiments_job_alone(self):
        lines = self.check()
        self.assertEqual(set(lines), {"toy/mps/x2", "toy/naive/x2"})
        self.assertIn("1.60x", lines["toy/mps/x2"])
        self.assertIn("none: the jobs did not run together long enough", lines["toy/naive/x2"])

    def test_pairs_and_colo_figures_from_a_cases_csv(self):
        csv_path = os.path.join(self.dir.name, "cases.csv")
        with open(csv_path, "w") as f:
            f.write("case,run_id,speedup_vs_one_job\ntoy/mps/x2,2,1.5\n")
        self.assertRegex(self.check(csv_path)["toy/mps/x2"], r"1\.50x +1\.60x")
        out = subprocess.run([sys.executable, SCRIPT, self.store, "--pair", "1", "2"],
                             capture_output=True, text=True)
        self.assertIn("run 2 against run 1", out.stdout)
        self.assertIn("1.60x", out.stdout)


if __name__ == "__main__":
    unittest.main()
