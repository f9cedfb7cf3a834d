"""Tests of bench/verify-speedup.py on hand-written logs (run with
python3 -m unittest discover -s python -p 'test_*.py')."""

import contextlib
import importlib.util
import io
import json
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location(
    "verify_speedup", os.path.join(HERE, "..", "bench", "verify-speedup.py"))
verify = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(verify)


def log_text(first_end, epoch_s, epochs, samples=1000, noise=""):
    """Epoch lines as bench/train.py prints them: epoch 1 ends at first_end."""
    lines = ["train.py: resnet26 ...", noise]
    for e in range(1, epochs + 1):
        end = first_end + (e - 1) * epoch_s
        lines.append("epoch %d/%d: %.1fs, 100 img/s, loss 2.30, %d samples, ended at %.3f"
                     % (e, epochs, epoch_s, samples, end))
    return "\n".join(lines) + "\n"


class VerifySpeedup(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_main(self, *argv):
        out = io.StringIO()
        err = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = verify.main(list(argv))
        return code, out.getvalue(), err.getvalue()

    def test_speedup_counts_only_the_window_in_which_all_ran(self):
        solo = self.write("solo.log", log_text(1000.0, 2.0, 5))  # 500 samples/s
        # Two jobs, 1 s apart, each as fast as alone: W = [1011, 1018].
        a = self.write("a.log", log_text(1010.0, 2.0, 5))
        b = self.write("b.log", log_text(1011.0, 2.0, 5))
        code, out, _ = self.run_main("--json", "--solo", solo, "--together", a, b)
        self.assertEqual(code, 0)
        result = json.loads(out)
        self.assertAlmostEqual(result["window_s"], 7.0)
        self.assertAlmostEqual(result["speedup"], 2.0)
        self.assertAlmostEqual(result["samples_per_s"], 1000.0)
        for job in result["jobs"]:
            self.assertAlmostEqual(job["slowdown"], 1.0)

    def test_solo_logs_apply_by_pattern_and_per_gpu(self):
        fast = self.write("solo-fast_1.log", log_text(0.0, 1.0, 5))   # 1000/s
        slow = self.write("solo-slow_1.log", log_text(0.0, 4.0, 5))   # 250/s
        a = self.write("001-fast_1.log", log_text(10.0, 2.0, 6))      # 500/s: 0.5
        b = self.write("002-slow_1.log", log_text(10.0, 4.0, 6))      # 250/s: 1.0
        code, out, _ = self.run_main("--json", "--solo", "fast_=" + fast, "slow_=" + slow,
                                     "--together", a, b)
        self.assertEqual(code, 0, out)
        self.assertAlmostEqual(json.loads(out)["speedup"], 1.5)
        code, out, _ = self.run_main("--json", "--gpus", "2", "--solo", "fast_=" + fast,
                                     "slow_=" + slow, "--together", a, b)
        self.assertAlmostEqual(json.loads(out)["speedup"], 0.75)

    def test_too_short_together_gives_no_figure(self):
        solo = self.write("solo.log", log_text(0.0, 2.0, 3))
        a = self.write("a.log", log_text(10.0, 2.0, 3))
        b = self.write("b.log", log_text(11.0, 2.0, 3))  # W = 3 s < 2 x 2 s
        code, out, _ = self.run_main("--solo", solo, "--together", a, b)
        self.assertEqual(code, 0)  # no speed-up, but a normalized throughput
        self.assertIn("did not run together long enough", out)
        self.assertIn("normalized throughput 2.00x per GPU (over 3.0 s)", out)

    def test_jobs_never_side_by_side_give_neither_figure(self):
        solo = self.write("solo.log", log_text(0.0, 2.0, 3))
        a = self.write("a.log", log_text(10.0, 2.0, 3))   # steady 10..14 s
        b = self.write("b.log", log_text(20.0, 2.0, 3))   # steady 20..24 s
        code, out, _ = self.run_main("--solo", solo, "--together", a, b)
        self.assertEqual(code, 3)
        self.assertIn("never were in their steady epochs at the same time", out)
        self.assertIn("no normalized throughput", out)

    def test_bad_input_says_what_is_wrong(self):
        solo = self.write("solo.log", log_text(0.0, 2.0, 3))
        empty = self.write("empty.log", "no epochs here\n")
        code, _, err = self.run_main("--solo", solo, "--together", empty)
        self.assertEqual(code, 2)
        self.assertIn("empty.log: 0 epoch lines", err)
        a = self.write("a_1.log", log_text(10.0, 2.0, 4))
        code, _, err = self.run_main("--solo", "other_=" + solo, "--together", a)
        self.assertEqual(code, 2)
        self.assertIn("no --solo log applies", err)
        code, _, err = self.run_main("--regex", "epoch (\\d+)", "--solo", solo, "--together", a)
        self.assertEqual(code, 2)
        self.assertIn("named groups", err)

    def test_another_format_through_regex(self):
        text = "".join("E%d %d %.1f\n" % (e, 100, 50.0 + e) for e in range(1, 6))
        solo = self.write("s.log", text)
        a = self.write("a.log", text)
        code, out, _ = self.run_main(
            "--json", "--regex", r"E(?P<epoch>\d+) (?P<samples>\d+) (?P<time>[\d.]+)",
            "--solo", solo, "--together", a)
        self.assertEqual(code, 0)
        self.assertAlmostEqual(json.loads(out)["speedup"], 1.0)


if __name__ == "__main__":
    unittest.main()
