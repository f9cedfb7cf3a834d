"""Tests of bench/check-learned.py on hand-made logs and CSVs (run with
python3 -m unittest discover -s python -p 'test_*.py')."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "bench", "check-learned.py")
HEADER = "id,name,state,lr,loss_last,loss_best\n"


class CheckLearned(unittest.TestCase):
    """Two logs of bench/train.py, lr 0.1 (losses 2.5, 2.1, 2.2) and lr 0.01
    (2.4, 2.3, 2.35)."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.logs = []
        for lr, losses in (("0.1", [2.5, 2.1, 2.2]), ("0.01", [2.4, 2.3, 2.35])):
            path = os.path.join(self.dir.name, "lr-%s.log" % lr)
            with open(path, "w") as f:
                f.write("train.py: started at 1.0\n")
                f.write("train.py: arguments: --model resnet26 --lr %s\n" % lr)
                for i, loss in enumerate(losses, 1):
                    f.write("epoch %d/3: 1.0s, 100 img/s, loss %.4f, 100 samples, ended at %d.5\n"
                            % (i, loss, i))
            self.logs.append(path)

    def tearDown(self):
        self.dir.cleanup()

    def check(self, rows, *flags):
        csv_path = os.path.join(self.dir.name, "show.csv")
        with open(csv_path, "w") as f:
            f.write(HEADER + rows)
        return subprocess.run([sys.executable, SCRIPT, "--param", "lr", "--csv", csv_path, *flags]
                              + self.logs, capture_output=True, text=True)

    def test_colo_agreeing_with_the_logs_passes_sorted(self):
        got = self.check("1,lr#1,ok,0.1,2.2000001,2.1\n2,lr#2,ok,0.01,2.35,2.3\n", "--sorted")
        self.assertEqual(got.returncode, 0, got.stdout)
        self.assertIn("PASS", got.stdout)

    def test_a_wrong_best_fails_and_names_the_job(self):
        got = self.check("1,lr#1,ok,0.1,2.2,2.2\n2,lr#2,ok,0.01,2.35,2.3\n")
        self.assertEqual(got.returncode, 1)
        self.assertIn("lr=0.1", got.stdout)

    def test_rows_out_of_loss_order_fail_when_sorted_is_claimed(self):
        got = self.check("2,lr#2,ok,0.01,2.35,2.3\n1,lr#1,ok,0.1,2.2,2.1\n", "--sorted")
        self.assertEqual(got.returncode, 1)
        self.assertIn("not sorted", got.stdout)

    def test_a_row_without_a_log_fails(self):
        got = self.check("1,lr#1,ok,0.1,2.2,2.1\n2,lr#2,ok,0.01,2.35,2.3\n3,lr#3,ok,0.5,1,1\n")
        self.assertEqual(got.returncode, 1)
        self.assertIn("no log", got.stdout)


if __name__ == "__main__":
    unittest.main()
