"""Tests of colo_progress (run: python3 -m unittest discover -s python)."""

import importlib.util
import io
import json
import os
import sys
import tempfile
import threading
import time
import types
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import colo_progress  # noqa: E402


def read_events(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


class ProgressTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "progress.jsonl")

    def tearDown(self):
        self.dir.cleanup()

    def test_in_a_gang_only_rank_0_reports_and_counts_the_global_batch(self):
        with mock.patch.dict(os.environ, {"COLO_PROGRESS_FILE": self.path, "RANK": "1",
                                          "WORLD_SIZE": "2"}):
            other = colo_progress.Progress()
            self.assertFalse(other.enabled)
            other.epoch_end(1, samples=64)
        with mock.patch.dict(os.environ, {"COLO_PROGRESS_FILE": self.path, "RANK": "0",
                                          "WORLD_SIZE": "2"}):
            first = colo_progress.Progress()
            first.epoch_end(1, samples=64)
            first.step(3, samples=8)
            first.close()
            given = colo_progress.Progress(global_samples=True)
            given.step(4, samples=16)
            given.close()
        events = read_events(self.path)
        self.assertEqual([e.get("samples") for e in events], [128, 16, 16])

    def test_events_follow_the_line_format(self):
        p = colo_progress.Progress(self.path)
        before = time.time()
        p.start()
        p.epoch_start(1)
        p.step(10, samples=128, loss=2.5)
        p.epoch_end(1, samples=50000, loss=0.31, acc=0.9)
        p.metric(max_memory_reserved_mib=1234.5)
        p.end(acc=0.91)
        p.close()
        events = read_events(self.path)
        self.assertEqual(
            [e["event"] for e in events],
            ["start", "epoch_start", "step", "epoch_end", "metric", "end"],
        )
        for e in events:
            self.assertGreaterEqual(e["time"], before)
            self.assertLessEqual(e["time"], time.time())
        self.assertEqual(events[1], {"event": "epoch_start", "time": events[1]["time"], "epoch": 1})
        self.assertEqual(events[2]["step"], 10)
        self.assertEqual(events[2]["samples"], 128)
        self.assertEqual(events[3]["epoch"], 1)
        self.assertEqual(events[3]["samples"], 50000)
        self.assertEqual(events[3]["metrics"], {"loss": 0.31, "acc": 0.9})
        self.assertEqual(events[4]["metrics"], {"max_memory_reserved_mib": 1234.5})
        self.assertNotIn("metrics", events[0])
        self.assertNotIn("samples", events[1])

    def test_log_writes_training_metrics_at_a_step_or_an_epoch(self):
        p = colo_progress.Progress(self.path)
        p.log(step=7, loss=1.25, acc=0.5)
        p.log(epoch=2, val_loss=0.75)
        p.log(loss="nan?")  # not a number: nothing to report
        p.close()
        events = read_events(self.path)
        self.assertEqual(events[0]["event"], "step")
        self.assertEqual(events[0]["step"], 7)
        self.assertNotIn("samples", events[0])
        self.assertEqual(events[0]["metrics"], {"loss": 1.25, "acc": 0.5})
        self.assertEqual(events[1]["event"], "metric")
        self.assertEqual(events[1]["epoch"], 2)
        self.assertEqual(events[1]["metrics"], {"val_loss": 0.75})
        self.assertEqual(len(events), 3)
        self.assertNotIn("metrics", events[2])

    def test_a_value_that_is_not_finite_is_written_by_name(self):
        p = colo_progress.Progress(self.path)
        p.log(step=1, loss=float("nan"), grad=float("inf"), low=float("-inf"))
        p.close()
        events = read_events(self.path)
        self.assertEqual(events[0]["metrics"], {"loss": "nan", "grad": "inf", "low": "-inf"})

    def test_each_event_is_flushed_immediately(self):
        p = colo_progress.Progress(self.path)
        p.epoch_end(3, samples=10)
        # Without close(): another reader already sees the complete line.
        with open(self.path, encoding="utf-8") as f:
            text = f.read()
        self.assertTrue(text.endswith("\n"))
        self.assertEqual(json.loads(text)["epoch"], 3)
        p.close()

    def test_appends_to_an_existing_file(self):
        with open(self.path, "w", encoding="utf-8") as f:
            f.write('{"event":"start","time":1.0}\n')
        p = colo_progress.Progress(self.path)
        p.epoch_end(1)
        p.close()
        self.assertEqual([e["event"] for e in read_events(self.path)], ["start", "epoch_end"])

    def test_non_numeric_metrics_are_dropped_and_non_finite_ones_kept_as_strings(self):
        # JSON has no NaN: a diverged loss is kept as "nan" / "inf" / "-inf", so that
        # colo can rank the job as diverged instead of showing its last finite value.
        p = colo_progress.Progress(self.path)
        p.epoch_end(1, samples="many", loss=float("nan"), gn=float("inf"),
                    lo=float("-inf"), name="resnet", lr=0.1, ok=True)
        p.close()
        (event,) = read_events(self.path)
        self.assertEqual(event["metrics"],
                         {"loss": "nan", "gn": "inf", "lo": "-inf", "lr": 0.1, "ok": 1.0})
        self.assertNotIn("samples", event)

    def test_objects_with_item_are_converted(self):
        class Scalar:
            def item(self):
                return 1.5

        p = colo_progress.Progress(self.path)
        p.metric(loss=Scalar())
        p.close()
        self.assertEqual(read_events(self.path)[0]["metrics"], {"loss": 1.5})

    def test_reads_the_environment_variable(self):
        with mock.patch.dict(os.environ, {colo_progress.ENV_VAR: self.path}):
            p = colo_progress.Progress()
        self.assertTrue(p.enabled)
        p.epoch_end(2)
        p.close()
        self.assertEqual(read_events(self.path)[0]["epoch"], 2)

    def test_without_the_variable_everything_is_a_no_op(self):
        env = {k: v for k, v in os.environ.items() if k != colo_progress.ENV_VAR}
        with mock.patch.dict(os.environ, env, clear=True):
            p = colo_progress.Progress()
        self.assertFalse(p.enabled)
        p.epoch_start(1)
        p.epoch_end(1, samples=5, loss=1.0)
        p.end()
        p.close()
        self.assertEqual(os.listdir(self.dir.name), [])

    def test_io_errors_warn_once_and_never_raise(self):
        bad = os.path.join(self.dir.name, "missing-dir", "progress.jsonl")
        p = colo_progress.Progress(bad)
        stderr = io.StringIO()
        with mock.patch.object(sys, "stderr", stderr):
            p.epoch_end(1, loss=1.0)
            p.epoch_end(2, loss=1.0)
            p.end()
        self.assertEqual(stderr.getvalue().count("colo_progress: cannot write"), 1)
        self.assertIn(bad, stderr.getvalue())
        self.assertFalse(p.enabled)

    def test_write_errors_after_opening_warn_once(self):
        p = colo_progress.Progress(self.path)
        p.epoch_end(1)
        p._file.close()  # the file becomes unusable (e.g. disk full, closed)
        stderr = io.StringIO()
        with mock.patch.object(sys, "stderr", stderr):
            p.epoch_end(2)
            p.epoch_end(3)
        self.assertEqual(stderr.getvalue().count("colo_progress:"), 1)
        self.assertEqual(len(read_events(self.path)), 1)

    def test_concurrent_writers_produce_whole_lines(self):
        p = colo_progress.Progress(self.path)

        def report(start):
            for i in range(200):
                p.step(start + i, samples=1, loss=0.5)

        threads = [threading.Thread(target=report, args=(k * 1000,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        p.close()
        events = read_events(self.path)
        self.assertEqual(len(events), 800)
        self.assertEqual(len({e["step"] for e in events}), 800)


class ModuleFunctionsTest(unittest.TestCase):
    def test_module_functions_use_a_default_instance(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.jsonl")
            with mock.patch.dict(os.environ, {colo_progress.ENV_VAR: path}), mock.patch.object(
                colo_progress, "_default", None
            ):
                colo_progress.epoch_start(1)
                colo_progress.step(5, samples=32, loss=1.0)
                colo_progress.epoch_end(1, samples=64, loss=0.5)
                colo_progress.metric(x=1)
                colo_progress.end(acc=0.5)
                colo_progress._instance().close()
            events = read_events(path)
        self.assertEqual(
            [e["event"] for e in events], ["epoch_start", "step", "epoch_end", "metric", "end"]
        )
        self.assertEqual(events[2]["samples"], 64)


class CheckpointTest(unittest.TestCase):
    def test_sigterm_after_should_checkpoint_sets_the_flag_instead_of_killing(self):
        import signal

        previous = signal.getsignal(signal.SIGTERM)
        try:
            self.assertFalse(colo_progress.should_checkpoint())
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.monotonic() + 10
            while not colo_progress.should_checkpoint() and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertTrue(colo_progress.should_checkpoint())
        finally:
            signal.signal(signal.SIGTERM, previous)
            colo_progress._term.clear()
            colo_progress._term_installed = False

    def test_checkpoint_dir_is_colos_or_none(self):
        with mock.patch.dict(os.environ, {"COLO_CHECKPOINT_DIR": "/ckpt/7"}):
            self.assertEqual(colo_progress.checkpoint_dir(), "/ckpt/7")
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertIsNone(colo_progress.checkpoint_dir())


if __name__ == "__main__":
    unittest.main()


class ProfilingTest(unittest.TestCase):
    """Windows themselves need torch (tests/integration/colo_profile_test.cc);
    here, what must hold without it."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "progress.jsonl")
        self.profile_dir = os.path.join(self.dir.name, "profile")
        os.mkdir(self.profile_dir)

    def tearDown(self):
        self.dir.cleanup()

    def test_a_request_is_taken_once_and_a_failure_never_reaches_training(self):
        with open(os.path.join(self.profile_dir, "request.json"), "w") as f:
            json.dump({"tool": "torch", "steps": 2}, f)
        stderr = io.StringIO()
        with mock.patch.dict(os.environ, {"COLO_PROFILE_DIR": self.profile_dir}), \
                mock.patch.dict(sys.modules, {"torch": None}), mock.patch("sys.stderr", stderr):
            progress = colo_progress.Progress(self.path)
            for i in range(1, 5):
                progress.step(i, samples=8, loss=1.0)  # torch cannot be imported: no raise
        self.assertEqual(sorted(os.listdir(self.profile_dir)), ["request-1.taken.json"])
        self.assertIn("profiling stopped", stderr.getvalue())
        self.assertEqual([e["event"] for e in read_events(self.path)], ["step"] * 4)

    def _fake_torch(self):
        class Profile:
            def __init__(self, activities):
                pass

            def start(self):
                pass

        return types.SimpleNamespace(
            profiler=types.SimpleNamespace(
                profile=Profile, ProfilerActivity=types.SimpleNamespace(CPU="cpu", CUDA="cuda")),
            cuda=types.SimpleNamespace(is_available=lambda: False))

    def test_a_steps_window_closes_at_an_epoch_end_only_after_a_whole_epoch_without_steps(self):
        closed = []
        env = {"COLO_PROFILE_DIR": self.profile_dir}
        with mock.patch.dict(sys.modules, {"torch": self._fake_torch()}), \
                mock.patch.object(colo_progress._Profiler, "_close",
                                  lambda profiler, now, by: (closed.append(by),
                                                             setattr(profiler, "_window", None))):
            # Asked for 3 steps, taken at a step just before its epoch ends:
            # that epoch's end does not close it; its steps do.
            with open(os.path.join(self.profile_dir, "request.json"), "w") as f:
                json.dump({"tool": "torch", "steps": 3}, f)
            with mock.patch.dict(os.environ, env):
                progress = colo_progress.Progress(self.path)
            progress.step(1, samples=8)
            progress.epoch_end(1, samples=8)
            self.assertEqual(closed, [])
            for i in range(2, 5):
                progress.step(i, samples=8)
            self.assertEqual(closed, ["steps"])
            # From the job file, after epoch 1, 20 steps, in a job that reports
            # only epochs: closed at the next epoch's end.
            with mock.patch.dict(os.environ, dict(env, COLO_PROFILE="torch",
                                                  COLO_PROFILE_AFTER_EPOCH="1",
                                                  COLO_PROFILE_STEPS="20")):
                epochs_only = colo_progress.Progress(self.path)
            epochs_only.epoch_end(1, samples=8)
            epochs_only.epoch_end(2, samples=8)
            self.assertEqual(closed, ["steps", "epoch end"])

    def _torch_with_hooks(self, hooks):
        """A fake torch whose profiler writes an empty trace and whose global
        module forward pre-hooks are kept in `hooks` (name -> hook)."""
        class Profile:
            def __init__(self, activities):
                pass

            def start(self):
                pass

            def stop(self):
                pass

            def export_chrome_trace(self, path):
                with open(path, "w") as f:
                    json.dump({"traceEvents": []}, f)

            def key_averages(self):
                return []

        class Handle:
            def __init__(self, key):
                self.key = key

            def remove(self):
                hooks.pop(self.key, None)

        def register(hook):
            key = len(hooks) + 1
            hooks[key] = hook
            return Handle(key)

        torch = self._fake_torch()
        torch.profiler.profile = Profile
        torch.nn = types.SimpleNamespace(modules=types.SimpleNamespace(
            module=types.SimpleNamespace(register_module_forward_pre_hook=register)))
        return torch

    def test_a_steps_window_without_a_step_closes_after_a_bounded_time(self):
        # A script that reports no steps: the window closes after its steps
        # at the job's median step time where known, else after 5 s, at a
        # module's forward (the training thread) - not an epoch later.
        cases = [
            # name, seconds between the steps it reported before, the bound
            ("no step ever reported", None, 5.0),
            ("steps of 0.1 s before, then none", 0.1, 1.0),
        ]
        for name, step_s, bound in cases:
            with self.subTest(name):
                hooks, clock = {}, [1000.0]
                fake_time = types.SimpleNamespace(time=lambda: clock[0])
                env = {"COLO_PROFILE_DIR": self.profile_dir, "COLO_PROFILE": "torch",
                       "COLO_PROFILE_AFTER_EPOCH": "1", "COLO_PROFILE_STEPS": "10"}
                with mock.patch.dict(sys.modules, {"torch": self._torch_with_hooks(hooks)}), \
                        mock.patch.object(colo_progress, "time", fake_time), \
                        mock.patch.dict(os.environ, env):
                    progress = colo_progress.Progress(self.path)
                    if step_s is not None:
                        for i in range(1, 8):
                            clock[0] += step_s
                            progress.step(i)
                    clock[0] += 1
                    progress.epoch_end(1, samples=64)  # the window opens
                    self.assertEqual(len(hooks), 1)
                    hook = next(iter(hooks.values()))
                    clock[0] += bound * 0.9
                    hook(None, ())  # a forward before the bound: still open
                    self.assertIsNotNone(progress._profiler._window)
                    clock[0] += bound * 0.2
                    hook(None, ())
                    self.assertIsNone(progress._profiler._window)
                    self.assertEqual(hooks, {})  # unhooked
                    with open(os.path.join(self.profile_dir, "torch-summary-1.json")) as f:
                        summary = json.load(f)
                    self.assertEqual(summary["closed_by"], "no step")
                    self.assertAlmostEqual(summary["no_step_bound_s"], bound)
                    self.assertLess(summary["ended"] - summary["started"], bound * 1.2)
                for leftover in os.listdir(self.profile_dir):
                    os.remove(os.path.join(self.profile_dir, leftover))

    def test_the_rate_after_a_window_closed_inside_an_epoch_counts_whole_epochs(self):
        # A job counted by its epoch ends: the epoch its window closed in has
        # samples from before the window; the rate after runs from that
        # epoch's end to the next one's (100 samples in 10 s), not 100
        # samples over the 4.5 s since the window closed.
        hooks, clock = {}, [1000.0]
        fake_time = types.SimpleNamespace(time=lambda: clock[0])
        env = {"COLO_PROFILE_DIR": self.profile_dir, "COLO_PROFILE": "torch",
               "COLO_PROFILE_AFTER_EPOCH": "1", "COLO_PROFILE_STEPS": "10"}
        with mock.patch.dict(sys.modules, {"torch": self._torch_with_hooks(hooks)}), \
                mock.patch.object(colo_progress, "time", fake_time), \
                mock.patch.dict(os.environ, env):
            progress = colo_progress.Progress(self.path)
            progress.epoch_end(1, samples=100)
            clock[0] += 5.5
            next(iter(hooks.values()))(None, ())  # closed after 5 s without a step
            clock[0] += 4.5
            progress.epoch_end(2, samples=100)
            clock[0] += 10
            progress.epoch_end(3, samples=100)
        with open(os.path.join(self.profile_dir, "torch-summary-1.json")) as f:
            summary = json.load(f)
        self.assertAlmostEqual(summary["rate_after"], 10.0)

    def _torch_window_without_steps(self, forward_s):
        """A `steps = 10` window opened at epoch 1's end of a job that never
        reports a step; a small model trains, each forward and backward
        `forward_s` on a fake clock, until the window closes (100 at most).
        Returns how many passes began, and the window's summary."""
        import torch

        clock = [1000.0]
        fake_time = types.SimpleNamespace(time=lambda: clock[0])
        env = {"COLO_PROFILE_DIR": self.profile_dir, "COLO_PROFILE": "torch",
               "COLO_PROFILE_AFTER_EPOCH": "1", "COLO_PROFILE_STEPS": "10"}
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        with mock.patch.object(colo_progress, "time", fake_time), mock.patch.dict(os.environ, env):
            progress = colo_progress.Progress(self.path)
            progress.epoch_end(1, samples=64)
            forwards = 0
            while progress._profiler._window is not None and forwards < 100:
                clock[0] += forward_s
                model(torch.randn(4, 8)).sum().backward()
                forwards += 1
        with open(os.path.join(self.profile_dir, "torch-summary-1.json")) as f:
            return forwards, json.load(f)

    @unittest.skipUnless(importlib.util.find_spec("torch"), "needs torch (python3-torch)")
    def test_with_torch_a_window_without_a_step_closes_at_a_forward_past_its_bound(self):
        forwards, summary = self._torch_window_without_steps(0.5)
        self.assertEqual(forwards, 10)  # 5 s: the bound without a known step time
        self.assertEqual(summary["closed_by"], "no step")
        self.assertTrue(any(op["name"] == "aten::addmm" for op in summary["top"]))

    @unittest.skipUnless(importlib.util.find_spec("torch"), "needs torch (python3-torch)")
    def test_with_torch_a_job_that_never_reported_a_step_closes_after_its_steps_in_forwards(self):
        # Issue 58 on an H100: 0.8 s of a fast model's window (the time bound
        # alone) wrote 39 MB in 7.2 s. A job that never reported a step has its model's
        # forward passes (the first module seen, not its submodules) counted
        # as its steps: 10 steps, 10 forward passes and their backwards.
        forwards, summary = self._torch_window_without_steps(0.01)
        self.assertEqual(forwards, 11)  # closed as the 11th began
        self.assertEqual(summary["closed_by"], "forwards")
        self.assertEqual(summary["forwards"], 10)
        self.assertLess(summary["ended"] - summary["started"], 0.2)

    def test_a_windows_rate_counts_each_sample_once_as_the_epoch_rate_does(self):
        # A job whose steps carry samples and whose epoch ends repeat their
        # sum: the epoch end adds nothing, before the window or inside it.
        hooks, clock = {}, [1000.0]
        fake_time = types.SimpleNamespace(time=lambda: clock[0])
        with open(os.path.join(self.profile_dir, "request.json"), "w") as f:
            json.dump({"tool": "torch", "steps": 6}, f)
        with mock.patch.dict(sys.modules, {"torch": self._torch_with_hooks(hooks)}), \
                mock.patch.object(colo_progress, "time", fake_time), \
                mock.patch.dict(os.environ, {"COLO_PROFILE_DIR": self.profile_dir}):
            progress = colo_progress.Progress(self.path)
            progress._profiler._next_look = clock[0] + 0.25  # the request is seen at step 3
            step = 0
            for epoch in range(1, 4):
                for _ in range(4):  # 4 steps of 32 samples every 0.1 s: 320 samples/s
                    clock[0] += 0.1
                    step += 1
                    progress.step(step, samples=32)
                progress.epoch_end(epoch, samples=128)
        with open(os.path.join(self.profile_dir, "torch-summary-1.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["steps"], 6)
        self.assertEqual(summary["samples"], 6 * 32)
        self.assertAlmostEqual(summary["rate_in"], 320.0, delta=320.0 * 0.05)
        self.assertAlmostEqual(summary["rate_before"], 320.0, delta=320.0 * 0.05)

    def test_a_window_that_breaks_stops_its_profiler(self):
        # A profiler left running when the interpreter exits can crash the
        # job: one whose window failed is stopped, not left open.
        class Profile:
            stopped = False

            def stop(self):
                Profile.stopped = True

        stderr = io.StringIO()
        with mock.patch.dict(os.environ, {"COLO_PROFILE_DIR": self.profile_dir}), \
                mock.patch("sys.stderr", stderr):
            progress = colo_progress.Progress(self.path)
            progress._profiler._window = {"profile": Profile()}  # no counts: it fails
            progress.step(1, samples=8)
        self.assertTrue(Profile.stopped)
        self.assertIsNone(progress._profiler._window)
        self.assertIn("profiling stopped", stderr.getvalue())

    def test_without_a_profile_directory_nothing_is_looked_for(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            progress = colo_progress.Progress(self.path)
            progress.step(1, samples=8)
        self.assertTrue(progress._profiler._broken)
