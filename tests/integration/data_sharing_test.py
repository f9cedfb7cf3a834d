"""End-to-end tests of shared data loading: the colo binary's loader
(`colo data serve`, and `colo run` with [data.NAME] tables) and real consumer
processes using python/colo_data.py with CPU torch.

Run by ctest with Debian's /usr/bin/python3 (python3-torch); exits 77 (ctest:
skipped) only when torch is missing. $COLO_BINARY names the colo binary.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(HERE, "..", "..", "python")
COLO = os.environ.get("COLO_BINARY", os.path.join(HERE, "..", "..", "build", "colo"))
N = 300  # samples in the test dataset (1000 in the exactly-once test)

# A consumer process: reads `epochs` epochs with `batch` samples per batch,
# checks that every epoch holds every sample exactly once and that every
# image is the one its id names (also after holding it for `hold` seconds),
# and prints one JSON line per epoch and one at the end. An optional fifth
# argument "E:F:PATH" pauses it once it has read a fraction F of epoch E
# (printing {"paused": ...} first), holding its batch, until the file PATH
# exists (at most 120 s): the test says when, not a wall-clock guess.
CONSUMER = textwrap.dedent("""
    import json, os, sys, time
    sys.path.insert(0, %(python_dir)r)
    import colo_data, torch
    socket_name, batch, epochs, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    pause = sys.argv[5].split(":", 2) if len(sys.argv) > 5 else None
    if pause:
        pause = [int(pause[0]), float(pause[1]), pause[2]]
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)

    def expected(ids):
        # The test dataset's sample i has planes of values (i*7+k*50) %% 256, k = 0, 1, 2.
        planes = torch.stack([(ids * 7 + k * 50) %% 256 for k in range(3)], 1).float()
        return ((planes / 255.0).view(-1, 3, 1, 1) - mean) / std

    def check(images, ids, when):
        want = expected(ids).expand_as(images)
        if not torch.allclose(images, want, atol=1e-4):
            print(json.dumps({"overwritten": when}), flush=True)
            sys.exit(4)

    loader = colo_data.Loader(batch_size=batch, device="cpu",
                              socket_name=None if socket_name == "-" else socket_name,
                              return_ids=True)
    print(json.dumps({"joined": loader.info["start"] %% loader.dataset_size}), flush=True)
    try:
        for epoch in range(epochs):
            seen = []
            for images, labels, ids in loader:
                assert images.shape[0] == ids.shape[0] <= batch
                assert torch.equal(labels, ids %% 10)
                check(images, ids, "at once")
                if hold:
                    time.sleep(hold)
                    check(images, ids, "after holding it")
                seen += ids.tolist()
                if pause and epoch == pause[0] and len(seen) >= pause[1] * loader.dataset_size:
                    print(json.dumps({"paused": len(seen)}), flush=True)
                    until = time.monotonic() + 120
                    while not os.path.exists(pause[2]) and time.monotonic() < until:
                        time.sleep(0.02)
                    pause = None
            if sorted(seen) != list(range(loader.dataset_size)):
                print(json.dumps({"epoch": epoch, "not_exactly_once": len(seen)}), flush=True)
                sys.exit(5)
            print(json.dumps({"epoch": epoch, "ok": True}), flush=True)
    except colo_data.Detached as e:
        print(json.dumps({"detached": str(e)}), flush=True)
        sys.exit(3)
    print(json.dumps({"done": loader.stats()}), flush=True)
""")


def write_cifar(directory, n=N):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "data_batch_1.bin"), "wb") as f:
        for i in range(n):
            f.write(bytes([i % 10]))
            for k in range(3):
                f.write(bytes([(i * 7 + k * 50) % 256]) * 1024)


def can_connect(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect("\0" + name)
        return True
    except OSError:
        return False
    finally:
        s.close()


def shm_names(prefix):
    return sorted(n for n in os.listdir("/dev/shm") if n.startswith(prefix))


def wait_for(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


class DataSharingTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="colo-data-test-")
        self.dir = self.tmp.name
        self.cifar = os.path.join(self.dir, "cifar")
        write_cifar(self.cifar)
        self.consumer = os.path.join(self.dir, "consumer.py")
        with open(self.consumer, "w") as f:
            f.write(CONSUMER % {"python_dir": PYTHON_DIR})
        self.procs = []
        self.seen = {}  # pid -> lines read by wait_line
        # GPU locks of this test only (other tests use the same simulated GPUs).
        self.env = dict(os.environ, COLO_HOME=os.path.join(self.dir, "home"),
                        COLO_LOCK_DIR=os.path.join(self.dir, "locks"))

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            for pipe in (p.stdout, p.stderr):
                if pipe:
                    pipe.close()
        self.tmp.cleanup()

    def start_loader(self, name, *args, dataset=None):
        socket_name = "colo-test-%d-%s" % (os.getpid(), name)
        stats = os.path.join(self.dir, name + ".stats.json")
        log_path = os.path.join(self.dir, name + ".log")
        with open(log_path, "w") as log:
            p = subprocess.Popen(
                [COLO, "data", "serve", dataset or self.cifar, "--name", name, "--socket", socket_name,
                 "--size", "32", "--no-augment", "--threads", "2", "--chunk", "8",
                 "--state-dir", os.path.join(self.dir, "home"), "--stats", stats] + list(args),
                stdout=log, stderr=subprocess.STDOUT, env=self.env)
        self.procs.append(p)
        wait_for(lambda: can_connect(socket_name) or p.poll() is not None, 20, "the loader")
        self.assertIsNone(p.poll(), self.read(log_path))
        return p, socket_name, stats

    def read(self, path):
        with open(path) as f:
            return f.read()

    def stop_loader(self, p, stats):
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(20), 0)
        with open(stats) as f:
            return json.load(f)

    def start_consumer(self, socket_name, batch, epochs, hold=0.0, pause=None):
        p = subprocess.Popen([sys.executable, self.consumer, socket_name, str(batch), str(epochs),
                              str(hold)] + ([pause] if pause else []),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    def wait_line(self, p, key, timeout=120):
        """Reads the consumer's lines until one has `key` (kept for finish())."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            self.seen.setdefault(p.pid, []).append(line)
            if key in json.loads(line):
                return
        self.fail("consumer %d printed no %r line: %s" % (p.pid, key, self.seen.get(p.pid)))

    def finish(self, p, timeout=120):
        out, err = p.communicate(timeout=timeout)
        text = "".join(self.seen.get(p.pid, [])) + out
        lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        return p.returncode, lines, err

    def test_three_consumers_joining_at_different_times_see_every_sample_once_per_epoch(self):
        big = os.path.join(self.dir, "cifar-1000")
        write_cifar(big, 1000)
        loader, name, stats = self.start_loader("once", "--ring", "2200KiB", dataset=big)
        # b joins while a pauses 40% into its second epoch, c while b pauses 10% into its
        # first: the ring (176 samples) then holds none of the next epoch, so both start in
        # the middle of one. Each pause lasts until the next consumer has joined.
        go_a, go_b = os.path.join(self.dir, "go-a"), os.path.join(self.dir, "go-b")
        a = self.start_consumer(name, 7, 6, hold=0.002, pause="1:0.4:" + go_a)
        self.wait_line(a, "paused")
        b = self.start_consumer(name, 16, 4, hold=0.002, pause="0:0.1:" + go_b)
        self.wait_line(b, "joined")
        open(go_a, "w").close()
        self.wait_line(b, "paused")
        c = self.start_consumer(name, 33, 3, hold=0.002)
        self.wait_line(c, "joined")
        open(go_b, "w").close()
        joined = []
        for p, epochs in ((a, 6), (b, 4), (c, 3)):
            code, lines, err = self.finish(p)
            self.assertEqual(code, 0, "%s\n%s" % (lines, err))
            self.assertEqual(sum(1 for l in lines if l.get("ok")), epochs)
            joined.append(lines[0]["joined"])
        self.assertTrue(all(j != 0 for j in joined[1:]),
                        "b and c should have joined in the middle of an epoch: %s" % joined)
        s = self.stop_loader(loader, stats)
        self.assertEqual([c["batch_size"] for c in s["consumers"]], [7, 16, 33])
        self.assertEqual([c["epochs"] for c in s["consumers"]], [6, 4, 3])
        # Shared: each stream position is decoded once, however many consumers read it; the
        # loader decodes no further than the furthest consumer plus what the ring holds.
        furthest = max(c["start"] + c["samples"] for c in s["consumers"])
        self.assertLessEqual(s["samples_decoded"], furthest + s["slots"] * s["chunk"])
        self.assertLess(furthest, sum(c["samples"] for c in s["consumers"]))

    def test_a_slow_consumer_is_detached_and_never_sees_overwritten_data(self):
        loader, name, stats = self.start_loader("slow", "--ring", "1500KiB", "--lag-timeout", "1s")
        slow = self.start_consumer(name, 8, 3, hold=0.25)
        self.wait_line(slow, "joined")
        fast = self.start_consumer(name, 8, 6)
        code, lines, err = self.finish(slow)
        self.assertEqual(code, 3, "%s\n%s\nfast: %s\nloader: %s" % (
            lines, err, self.finish(fast), self.read(os.path.join(self.dir, "slow.log"))))  # detached, content checked every batch
        message = lines[-1]["detached"]
        self.assertIn("detached by the shared data loader", message)
        self.assertIn("lag_timeout 1.0s", message)
        code, lines, err = self.finish(fast)
        self.assertEqual(code, 0, "%s\n%s" % (lines, err))
        self.assertEqual(sum(1 for l in lines if l.get("ok")), 6)
        s = self.stop_loader(loader, stats)
        self.assertIn("detached", s["consumers"][0]["detached"])
        self.assertGreaterEqual(s["consumers"][0]["held_back_ms"], 1000)
        self.assertEqual(s["consumers"][1]["detached"], "")

    def test_a_killed_consumers_slots_are_reclaimed(self):
        # A long lag_timeout: only noticing the death can free the ring for the others.
        loader, name, stats = self.start_loader("killed", "--ring", "1500KiB",
                                                "--lag-timeout", "10m")
        victim = self.start_consumer(name, 8, 100, hold=0.05)
        self.wait_line(victim, "joined")
        other = self.start_consumer(name, 8, 5)
        self.wait_line(other, "joined")
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        code, lines, err = self.finish(other, timeout=60)
        self.assertEqual(code, 0, "%s\n%s" % (lines, err))
        self.assertEqual(sum(1 for l in lines if l.get("ok")), 5)  # 5 epochs >> the ring
        s = self.stop_loader(loader, stats)
        self.assertGreaterEqual(s["consumers"][0]["left_ms"], 0)
        self.assertEqual(s["consumers"][0]["detached"], "")

    def two_readers(self, b_epochs):
        """A job file: jobs a (batch 8, 2 epochs) and b (batch 20) reading one cifar loader."""
        jobs = os.path.join(self.dir, "jobs.toml")
        with open(jobs, "w") as f:
            f.write(textwrap.dedent("""
                [data.cifar]
                path = "%s"
                size = 32
                augment = false
                ring = "2MiB"
                chunk = 8

                [[job]]
                name = "a"
                command = ["%s", "%s", "-", "8", "2", "0"]
                dataset = "cifar"

                [[job]]
                name = "b"
                command = ["%s", "%s", "-", "20", "%d", "0"]
                dataset = "cifar"
            """ % (self.cifar, sys.executable, self.consumer, sys.executable, self.consumer,
                   b_epochs)))
        return jobs

    def test_colo_run_feeds_its_jobs_and_colo_show_reports_the_loader(self):
        jobs = self.two_readers(b_epochs=1)
        db = os.path.join(self.dir, "colo.db")
        run = subprocess.run([COLO, "run", jobs, "--backend", "sim", "--plain", "--db", db],
                             capture_output=True, text=True, env=self.env, timeout=120)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("data loader 'cifar'", run.stdout)
        show = subprocess.run([COLO, "show", "--db", db], capture_output=True, text=True,
                              env=self.env)
        self.assertIn("data loaders:", show.stdout)
        self.assertIn("cifar: %s (cifar10, 300 samples)" % self.cifar, show.stdout)
        shown = json.loads(subprocess.run([COLO, "show", "--db", db, "--json"], capture_output=True,
                                          text=True, env=self.env).stdout)
        [loader] = shown["data_loaders"]
        self.assertGreater(loader["cpu_ms"], 0)
        consumers = {c["job"]: c for c in loader["consumers"]}
        self.assertEqual(sorted(consumers), ["a", "b"])
        jobs_by_name = {j["name"]: j["id"] for j in shown["jobs"]}
        for name, epochs in (("a", 2), ("b", 1)):
            self.assertEqual(consumers[name]["job_id"], jobs_by_name[name])
            self.assertEqual(consumers[name]["epochs"], epochs)
            self.assertEqual(consumers[name]["samples"], epochs * N)
        self.assertEqual(shm_names("colo-data-%d-" % shown["run"]["colo_pid"]), [])

    def test_colo_serve_feeds_submitted_jobs_through_one_loader(self):
        jobs = self.two_readers(b_epochs=3)
        db = os.path.join(self.dir, "colo.db")
        sock = os.path.join(self.dir, "s.sock")
        serve = subprocess.Popen([COLO, "serve", "--backend", "sim", "--db", db, "--socket", sock,
                                  "--policy", "fixed"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 env=self.env)
        self.procs.append(serve)
        wait_for(lambda: subprocess.run([COLO, "queue", "--socket", sock], capture_output=True,
                                        env=self.env).returncode == 0, 30, "colo serve")
        submitted = subprocess.run([COLO, "submit", "--json", "--socket", sock, jobs],
                                   capture_output=True, text=True, env=self.env)
        self.assertEqual(submitted.returncode, 0, submitted.stdout + submitted.stderr)
        ids = json.loads(submitted.stdout)["ids"]
        waited = subprocess.run([COLO, "wait", "--socket", sock] + [str(i) for i in ids],
                                capture_output=True, text=True, env=self.env, timeout=120)
        logs = {}
        for i, name in zip(ids, ("a", "b")):
            logs[name] = subprocess.run([COLO, "logs", "--socket", sock, str(i)],
                                        capture_output=True, text=True, env=self.env).stdout
        serve.send_signal(signal.SIGTERM)
        out, _ = serve.communicate(timeout=60)
        self.assertEqual(waited.returncode, 0, waited.stdout + logs["a"] + logs["b"] + out)
        # Each job saw every sample exactly once in each of its epochs.
        for name, epochs in (("a", 2), ("b", 3)):
            lines = [json.loads(l) for l in logs[name].splitlines() if l.startswith("{")]
            self.assertEqual(sum(1 for l in lines if l.get("ok")), epochs, logs[name])
        self.assertEqual(out.count("data loader 'cifar.u%d.0'" % os.geteuid()), 2, out)
        shown = json.loads(subprocess.run([COLO, "show", "--db", db, "--json", "1"],
                                          capture_output=True, text=True, env=self.env).stdout)
        [loader] = shown["data_loaders"]
        consumers = {c["job"]: c for c in loader["consumers"]}
        self.assertEqual(sorted(consumers), ["a", "b"], loader)
        for name, epochs in (("a", 2), ("b", 3)):
            self.assertEqual(consumers[name]["samples"], epochs * N)
        self.assertEqual(shm_names("colo-data-%d-" % serve.pid), [])

    def test_dev_shm_is_clean_after_sigkill_of_colo_and_after_the_next_start(self):
        jobs = os.path.join(self.dir, "jobs.toml")
        with open(jobs, "w") as f:
            f.write(textwrap.dedent("""
                [data.cifar]
                path = "%s"
                size = 32
                ring = "4MiB"

                [[job]]
                name = "sleeper"
                command = ["sleep", "%%s"]
                dataset = "cifar"
            """ % self.cifar))
        template = self.read(jobs)

        def run_colo(seconds):
            with open(jobs, "w") as f:
                f.write(template % seconds)
            p = subprocess.Popen([COLO, "run", jobs, "--backend", "sim", "--plain", "--db",
                                  os.path.join(self.dir, "colo.db")],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 env=self.env)
            self.procs.append(p)
            return p

        # 1. SIGKILL of colo: its loader notices, removes its ring and exits.
        colo = run_colo(60)
        prefix = "colo-data-%d-" % colo.pid
        wait_for(lambda: shm_names(prefix), 20, "the loader's shared memory")
        colo.send_signal(signal.SIGKILL)
        colo.wait()
        wait_for(lambda: not shm_names(prefix), 10, "/dev/shm to be clean after SIGKILL of colo")
        records = os.path.join(self.dir, "home", "data")
        wait_for(lambda: not os.listdir(records), 10, "the ownership record to go")

        # 2. SIGKILL of the loader and of colo: the ring stays until the next start.
        colo = run_colo(60)
        prefix = "colo-data-%d-" % colo.pid
        wait_for(lambda: shm_names(prefix), 20, "the loader's shared memory")
        [record] = os.listdir(records)
        with open(os.path.join(records, record)) as f:
            loader_pid = json.load(f)["loader_pid"]
        os.kill(loader_pid, signal.SIGKILL)
        colo.send_signal(signal.SIGKILL)
        colo.wait()
        time.sleep(0.3)
        self.assertEqual(len(shm_names(prefix)), 1, "a killed loader cannot clean up")
        nxt = run_colo(0)
        out, _ = nxt.communicate(timeout=60)
        self.assertEqual(nxt.returncode, 0, out)
        self.assertIn("removed shared memory /%s" % shm_names(prefix)[0] if shm_names(prefix)
                      else "removed shared memory /" + prefix, out)
        self.assertEqual(shm_names(prefix), [])
        self.assertEqual(shm_names("colo-data-%d-" % nxt.pid), [], "the next run cleans up too")
        self.assertEqual(os.listdir(records), [])


if __name__ == "__main__":
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: torch is not installed (Debian: python3-torch)")
        sys.exit(77)
    unittest.main()
