#!/usr/bin/env python3
"""Issue 32's GPU benchmark: fair share between two users of one `colo serve`.

Two Unix users send Poisson streams of jobs to one service on one GPU:

  user A (this script's user): a sweep of 24 resnet50 trainings (learning
      rates), submitted one by one at Poisson-spaced times over SPAN seconds;
  user B (a user this script creates with useradd, with a home directory of
      their own under the work directory, and removes at the end): 6 single
      jobs of other models (2 each of resnet26, resnet152 and cait_xxs24), at
      Poisson-spaced times over the middle of the same span.

Passes, each on a fresh store (the cold case), with the same arrivals:

  calibrate   each model once, alone (`--mechanism exclusive`): its solo rate,
              which bench/check-fairness.py reads from the job's log
  fcfs        the default service (auto over MPS) with --queue-order fcfs
  fair-share  the default service (fair share is the default order)

Both sharing passes run with `--max-per-gpu MAX` (3), so that jobs queue and
the order decides who goes next. While a pass runs, the script asks
`colo queue --json` every second for each user's usage (solo-equivalent GPU
time, owners.NAME.total_ms): colo's own shares over the contended period
(while both users have jobs queued or running). bench/check-fairness.py
computes the same shares from the jobs' own logs (their epoch lines' samples
and end times, over the solo rates of the calibrate pass's logs) and this
script's submission clock, and Jain's fairness index of each pass.

  serve_fairness.py OUT [--passes calibrate,fcfs,fair-share] [--backend sim]

Everything the other user reads (the job scripts, the socket, colo's state
and log directories) lies under a fresh directory in /tmp (mode 0755) that
this script copies into OUT at the end: a result directory under /root would
keep that user out. User B needs a writable home as any real user has: with
`nobody`'s /nonexistent, CUDA cannot keep its kernel cache, and every job of
B's first epoch took 25 s longer on an H200. Needs root and useradd. On the simulated
backend the jobs are bench/sim_train.py and nothing measured is a measurement.
"""

import argparse
import grp
import json
import os
import pwd
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_bench  # noqa: E402
from serve_bench import Service, job_command, log, write_job_file  # noqa: E402

REPO = serve_bench.REPO
A_KIND = "medium"  # resnet50 on ImageNet64 data
B_KINDS = ["small", "large", "cait"] * 2
KINDS = [A_KIND] + sorted(set(B_KINDS))


def poisson_times(rng, n, start, span):
    """n arrival times over [start, start + span]: exponential gaps, scaled so
    that the first comes at start and the last at start + span."""
    gaps = [rng.expovariate(1.0) for _ in range(n - 1)]
    total = sum(gaps) or 1.0
    times, t = [start], 0.0
    for g in gaps:
        t += g
        times.append(start + t * span / total)
    return times


def arrivals(seed, span):
    """(time, user, kind, name) of every job, in time order."""
    rng = random.Random(seed)
    plan = [(t, "A", A_KIND, "sweep-lr%02d" % i)
            for i, t in enumerate(poisson_times(rng, 24, 0.0, span))]
    kinds = B_KINDS[:]
    rng.shuffle(kinds)
    plan += [(t, "B", k, "%s-%d" % (k, i))
             for i, (t, k) in enumerate(zip(poisson_times(rng, 6, span * 0.15, span * 0.7), kinds))]
    return sorted(plan)


def code_dir(base):
    """The job scripts and the Python client, copied where the other user can read them."""
    code = os.path.join(base, "code")
    os.makedirs(os.path.join(code, "bench"))
    for f in ("train.py", "workload_end.py", "dlrm.py", "sim_train.py"):
        src = os.path.join(REPO, "bench", f)
        if os.path.exists(src):
            shutil.copy(src, os.path.join(code, "bench", f))
    shutil.copytree(os.path.join(REPO, "python"), os.path.join(code, "python"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    for root, dirs, files in os.walk(code):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    return code


class Poller(threading.Thread):
    """`colo queue --json` once a second: each user's jobs and usage."""

    def __init__(self, svc):
        super().__init__(daemon=True)
        self.svc, self.samples, self.stop_flag = svc, [], threading.Event()

    def run(self):
        while not self.stop_flag.is_set():
            r = self.svc.client(["queue", "--json"], check=False)
            t = time.time()
            try:
                owners = json.loads(r.stdout).get("owners", {})
                self.samples.append({"t": t, "owners": owners})
            except ValueError:
                pass
            self.stop_flag.wait(1.0)


def submit_as(svc, path, user_env, who):
    """`colo submit --json PATH` as `who` (None: this script's user); the new job's id."""
    cmd = [svc.colo, "submit", "--socket", svc.socket, "--json", path]
    kwargs = {}
    if who:
        kwargs = {"user": who.pw_uid, "group": who.pw_gid, "env": user_env}
    r = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if r.returncode != 0:
        raise SystemExit("colo submit %s failed (%d): %s%s" % (path, r.returncode, r.stdout,
                                                              r.stderr))
    return json.loads(r.stdout[r.stdout.index("{"):])["ids"][0]


def run_pass(args, base, name, service_args, plan, files, other, other_env):
    db = os.path.join(base, name + ".db")
    svc = Service(args.colo, base, name, args.backend, service_args, db)
    poller = Poller(svc)
    submitted, jobs, usage, interrupted = [], [], "", False
    try:
        poller.start()
        start = time.time()
        for (offset, user, kind, job), path in zip(plan, files):
            delay = start + offset - time.time()
            if delay > 0:
                time.sleep(delay)
            t = time.time()
            job_id = submit_as(svc, path, other_env, other if user == "B" else None)
            submitted.append({"id": job_id, "user": user, "kind": kind, "name": job,
                              "offset_s": offset, "submit_time": t})
            log("  %6.1f s  %s submitted %-12s -> job %d" % (t - start, user, job, job_id))
        jobs = svc.wait([s["id"] for s in submitted])
        usage = svc.client(["usage", "--json"], check=False).stdout
    except KeyboardInterrupt:  # the time guard (timeout -s INT): keep what the pass saw
        interrupted = True
    finally:
        poller.stop_flag.set()
        poller.join(timeout=10)
        svc.stop()
    by_id = {j["id"]: j for j in jobs}
    for s in submitted:
        j = by_id.get(s["id"], {})
        logs = svc.job_logs(s["id"])
        s.update({"state": j.get("state"), "attempts": j.get("attempts"),
                  "owner": j.get("owner"),
                  "colo_started_ms": j.get("started_ms"), "colo_ended_ms": j.get("ended_ms"),
                  "log": os.path.relpath(logs[-1], base) if logs else None})
    result = {"pass": name, "service_args": service_args, "jobs": submitted,
              "usage_polls": poller.samples, "interrupted": interrupted}
    try:
        result["colo_usage"] = json.loads(usage)
    except ValueError:
        result["colo_usage"] = None
    with open(os.path.join(base, name + ".json"), "w") as f:
        json.dump(result, f, indent=1)
    if interrupted:
        raise KeyboardInterrupt("interrupted during the %s pass" % name)
    bad = [s for s in submitted if s["state"] != "ok"]
    log("    %s: %d of %d jobs ok%s" % (name, len(submitted) - len(bad), len(submitted),
                                        "; not ok: " + ", ".join("%d %s" % (s["id"], s["state"])
                                                                 for s in bad) if bad else ""))
    return result


def run_passes(args, base, passes, plan, files, other, other_env, job_file):
    """Runs the passes named in args.passes; a KeyboardInterrupt (the time
    guard) ends them, each pass seen so far kept."""
    failed = False
    for name in args.passes.split(","):
        log("=== %s" % name)
        pass_start = time.time()
        if name == "calibrate":
            cal = [(0.0, "A", k, "solo-" + k) for k in KINDS]
            cal_files = [job_file("solo-" + k, k) for k in KINDS]
            r = run_pass(args, base, name, passes[name], cal, cal_files, None, None)
        else:
            r = run_pass(args, base, name, passes[name], plan, files, other, other_env)
        failed |= any(j["state"] != "ok" for j in r["jobs"])
        log("    done in %.0f s" % (time.time() - pass_start))
    return failed


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--colo", default=os.path.join(REPO, "build-release", "colo"))
    p.add_argument("--backend", choices=["nvml", "sim"], default="nvml")
    p.add_argument("--passes", default="calibrate,fcfs,fair-share")
    p.add_argument("--span", type=float, default=30.0, help="seconds over which jobs arrive")
    p.add_argument("--seed", type=int, default=32)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--scale", type=float, default=1.0, help="samples per epoch, scaled")
    p.add_argument("--max-per-gpu", type=int, default=3)
    args = p.parse_args(argv)
    if os.geteuid() != 0 or not shutil.which("useradd"):
        p.error("needs root and useradd: user B is made for the run, and submits as themself")
    args.out = os.path.abspath(args.out)
    args.colo = os.path.abspath(args.colo)
    os.makedirs(args.out, exist_ok=True)
    base = tempfile.mkdtemp(prefix="colo-fair-")
    os.chmod(base, 0o755)
    started = time.time()
    user_b = "colofair%d" % (os.getpid() % 100000)
    home = os.path.join(base, "home-b")
    made = subprocess.run(["useradd", "--create-home", "--home-dir", home, "--user-group",
                           user_b], capture_output=True, text=True)
    if made.returncode != 0:
        raise SystemExit("useradd %s failed: %s" % (user_b, made.stderr))
    try:
        other = pwd.getpwnam(user_b)
        other_group = grp.getgrgid(other.pw_gid).gr_name
        serve_bench.prepare_environment(base, args.backend)  # COLO_HOME under base
        os.makedirs(os.environ["COLO_HOME"], exist_ok=True)
        os.chmod(os.environ["COLO_HOME"], 0o711)
        serve_bench.machine(args.out, args.colo, args.backend)
        code = code_dir(base)
        os.environ["COLO_PYTHON_DIR"] = os.path.join(code, "python")
        other_env = dict(os.environ, HOME=home, USER=other.pw_name, LOGNAME=other.pw_name)

        plan = arrivals(args.seed, args.span)
        jobs_dir = os.path.join(base, "jobs")
        os.makedirs(jobs_dir)
        os.chmod(jobs_dir, 0o755)

        def job_file(name, kind, extra=()):
            command = job_command(kind, args.backend, args.epochs, args.scale) + list(extra)
            path = write_job_file(os.path.join(jobs_dir, name + ".toml"), name, command)
            with open(path) as f:  # the scripts from the copy, which user B can read
                text = f.read().replace("workdir = %s" % json.dumps(REPO),
                                        "workdir = %s" % json.dumps(code))
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o644)
            return path

        files = []
        for i, (_, user, kind, name) in enumerate(plan):
            lr = ["--lr", "%g" % (0.02 * (1 + i % 24))] if user == "A" else []
            files.append(job_file("%02d-%s-%s" % (i, user, name), kind, lr))
        log("plan (seed %d, %.0f s): %s" % (args.seed, args.span, ", ".join(
            "%.1fs %s %s" % (t, u, k) for t, u, k, _ in plan)))
        with open(os.path.join(base, "plan.json"), "w") as f:
            json.dump({"seed": args.seed, "span_s": args.span, "epochs": args.epochs,
                       "scale": args.scale, "max_per_gpu": args.max_per_gpu,
                       "users": {"A": pwd.getpwuid(os.getuid()).pw_name, "B": other.pw_name},
                       "plan": plan}, f, indent=1)

        sharing = ["--mechanism", "mps", "--policy", "auto", "--max-per-gpu",
                   str(args.max_per_gpu), "--socket-group", other_group]
        passes = {
            "calibrate": ["--mechanism", "exclusive", "--policy", "fixed"],
            "fcfs": sharing + ["--queue-order", "fcfs"],
            "fair-share": sharing + ["--queue-order", "fair-share"],
        }
        failed = False
        try:
            failed = run_passes(args, base, passes, plan, files, other, other_env, job_file)
        except KeyboardInterrupt as e:
            log("stopped: %s" % (e or "interrupted"))
            failed = True
    finally:
        for entry in os.listdir(base):
            if entry in ("home", "home-b", "bin"):
                continue
            src, dst = os.path.join(base, entry), os.path.join(args.out, entry)
            if os.path.isdir(src):
                shutil.copytree(src, dst, dirs_exist_ok=True, symlinks=True,
                                ignore=shutil.ignore_patterns("*.sock", "__pycache__"))
            else:
                shutil.copy(src, dst)
        shutil.rmtree(base, ignore_errors=True)
        subprocess.run(["userdel", user_b], capture_output=True)
    log("took %.0f s" % (time.time() - started))
    check = subprocess.run([sys.executable, os.path.join(REPO, "bench", "check-fairness.py"),
                            args.out], capture_output=True, text=True)
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write(check.stdout + check.stderr)
    log(check.stdout + check.stderr)
    return 1 if failed or check.returncode != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
