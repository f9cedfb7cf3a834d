#!/usr/bin/env python3
"""colo serve's GPU benchmarks (issue 11), driven from outside as a user would:
a `colo serve` process, jobs submitted with `colo submit` at chosen times,
`colo wait` for their ends, and every figure checked against the jobs' own logs.

  serve_bench.py poisson OUT   jobs of the study's models (--mix cold: two
                               each of resnet26, resnet50, resnet152 and
                               cait_xxs24; --mix study: the 12 of issue 11)
                               submitted at Poisson-spaced times over SPAN
                               seconds, to a first-come-first-served
                               exclusive service, to the default (auto, MPS)
                               one on a fresh store (cold: it has never seen
                               the jobs), and again on that store (warm):
                               mean job completion time and makespan of each.
  serve_bench.py faults OUT    (a) 8 recommender jobs whose memory together
                               exceeds the GPU, under the default policy:
                               none may be lost; (b) the MPS server killed
                               while 4 jobs run: they are requeued and end ok.
  serve_bench.py mps-kill OUT  (issue 25) the MPS server SIGKILLed while one
                               job is its only client, and while three are,
                               under `colo run` and under `colo serve`: every
                               job must end ok after a retry, colo must name
                               the server's death, and the jobs' logs must
                               show each cut short and run again.
  serve_bench.py spread OUT    a sweep of JOBS small jobs submitted at once to
                               the default service on every GPU of the
                               machine: every GPU runs some of them.
  serve_bench.py trace-download OUT
                               JOBS resnet26 trainings with a torch window
                               each (20 steps after epoch 1) under `colo
                               serve --http-logs`; each window's trace
                               downloaded from GET /api/jobs/ID/profiles/N/
                               trace and compared, byte for byte, with the
                               file the job wrote; the service's peak RSS.

bench/serve-poisson.sh, bench/serve-faults.sh and bench/serve-spread.sh run them; see there for the
environment (COLO, BACKEND=nvml|sim). On BACKEND=sim the jobs are
bench/sim_train.py and MPS is tests/integration/fake-mps-control: the script
runs end to end, and nothing it prints about speed is a measurement.

Only the standard library; times are the wall clock (time.time()).
"""

import argparse
import atexit
import glob
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENDED_AT = re.compile(r"^epoch (\d+)/(\d+): .* ended at (\d+(?:\.\d+)?)\s*$")


def log(msg):
    print(msg, flush=True)


# ---- the jobs ---------------------------------------------------------------

# kind -> (script, arguments) for bench/train.py and bench/dlrm.py; the same
# arguments go to bench/sim_train.py on the simulated backend. Sizes: about
# 1.6 s per epoch alone on an H100 (recsys 1 s), so that a job takes about
# 20 s alone, most of it start-up (importing torch and timm, cuDNN autotuning;
# docs/results/2026-11-23-h100-mixed-gpus0), as many short jobs on a shared
# GPU box do.
def job_command(kind, backend, epochs, scale):
    def samples(n):
        return str(max(1, int(n * scale)))

    if kind == "small":
        script, args = "bench/train.py", ["--model", "resnet26", "--dataset", "cifar10",
                                           "--batch-size", "128", "--epoch-samples", samples(12800)]
    elif kind == "medium":
        script, args = "bench/train.py", ["--model", "resnet50", "--dataset", "imagenet64",
                                           "--batch-size", "128", "--epoch-samples", samples(6400)]
    elif kind == "large":
        script, args = "bench/train.py", ["--model", "resnet152", "--dataset", "imagenet",
                                           "--batch-size", "32", "--epoch-samples", samples(640)]
    elif kind == "cait":
        script, args = "bench/train.py", ["--model", "cait_xxs24_224", "--dataset", "imagenet",
                                           "--batch-size", "64", "--epoch-samples", samples(1664)]
    elif kind == "recsys":
        script, args = "bench/dlrm.py", ["--epoch-samples", samples(262144)]
    else:
        raise ValueError(kind)
    if kind == "recsys" and backend == "sim":
        args = ["--model", "dlrm", "--dataset", "criteo"] + args
    if backend == "sim":
        script = "bench/sim_train.py"
    return ["python3", script] + args + ["--epochs", str(epochs)]


def toml_string(s):
    return json.dumps(s)  # a TOML basic string is a JSON string for these characters


def write_job_file(path, name, command, repeat=1, hints=None):
    with open(path, "w") as f:
        f.write("[defaults]\nworkdir = %s\nenv = { PYTHONUNBUFFERED = \"1\" }\n\n"
                % toml_string(REPO))
        f.write("[[job]]\nname = %s\ncommand = [%s]\n" % (
            toml_string(name), ", ".join(toml_string(c) for c in command)))
        if repeat > 1:
            f.write("repeat = %d\n" % repeat)
        for key, value in (hints or {}).items():
            f.write("%s = %s\n" % (key, json.dumps(value)))
    return path


# ---- a colo serve process ---------------------------------------------------

class Service:
    """`colo serve` in the background, with its own socket, logs and output file."""

    def __init__(self, colo, out_dir, name, backend, args, db="colo.db"):
        self.colo = colo
        self.dir = os.path.join(out_dir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.socket = os.path.join(self.dir, "colo.sock")
        self.logs = os.path.join(self.dir, "logs")
        self.output = os.path.join(self.dir, "serve.log")
        self.db = os.path.join(out_dir, db)
        # COLO_SERVE_ARGS: more `colo serve` flags for every service ("--gpus 0").
        cmd = [colo, "serve", "--backend", backend, "--db", self.db, "--socket", self.socket,
               "--logs", self.logs] + args + shlex.split(os.environ.get("COLO_SERVE_ARGS", ""))
        log("$ " + " ".join(cmd))
        self.out = open(self.output, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.time() + 120  # it may wait for the GPU lock of another colo
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit("colo serve exited with %s:\n%s" % (self.proc.returncode,
                                                                      self.text()))
            if self.client(["queue", "--json"], check=False).returncode == 0:
                return
            time.sleep(0.2)
        raise SystemExit("colo serve did not answer within 120 s:\n" + self.text())

    def client(self, args, check=True):
        r = subprocess.run([self.colo] + args[:1] + ["--socket", self.socket] + args[1:],
                           capture_output=True, text=True)
        if check and r.returncode != 0:
            raise SystemExit("colo %s failed (%d): %s%s" % (" ".join(args), r.returncode,
                                                             r.stdout, r.stderr))
        return r

    def snapshot(self):
        return json.loads(self.client(["queue", "--json"]).stdout)

    def submit(self, path):
        r = self.client(["submit", "--json", path])
        return json.loads(r.stdout[r.stdout.index("{"):])["ids"]

    def wait(self, ids):
        r = self.client(["wait", "--json"] + [str(i) for i in ids], check=False)
        try:
            return json.loads(r.stdout)["jobs"]
        except (ValueError, KeyError):
            raise SystemExit("colo wait failed (%d): %s%s" % (r.returncode, r.stdout, r.stderr))

    def http(self, path):
        address = self.snapshot()["service"]["http"]
        with urllib.request.urlopen("http://%s%s" % (address, path), timeout=10) as resp:
            return json.loads(resp.read().decode())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()

    def text(self):
        self.out.flush()
        with open(self.output) as f:
            return f.read()

    def job_logs(self, job_id):
        """The job's log files, one per attempt, in attempt order."""
        # <logs>/<store>-<hash>/jobs/: this service's one store.
        files = glob.glob(os.path.join(self.logs, "*", "jobs", "%d-*.log" % job_id))

        def attempt(path):
            m = re.search(r"\.attempt(\d+)\.log$", path)
            return int(m.group(1)) if m else 1
        return sorted(files, key=attempt)


def epoch_lines(path):
    """(epoch, epochs, ended_at) of each epoch line the job printed."""
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = ENDED_AT.match(line.strip())
                if m:
                    out.append((int(m.group(1)), int(m.group(2)), float(m.group(3))))
    except OSError:
        pass
    return out


# colo refuses an MPS state directory ($COLO_HOME/mps) longer than this: MPS
# makes Unix sockets below it, and their paths are limited to 107 bytes.
MAX_MPS_STATE_DIR = 57


def prepare_environment(out_dir, backend):
    """COLO_HOME under out_dir, or under /tmp (removed at exit) where out_dir's
    path is too long for MPS's sockets. On the simulated backend: the fake MPS
    control program first on PATH."""
    home = os.path.join(out_dir, "home")
    if len(os.path.join(home, "mps")) > MAX_MPS_STATE_DIR:
        home = tempfile.mkdtemp(prefix="colo-bench-")
        atexit.register(shutil.rmtree, home, ignore_errors=True)
        log("COLO_HOME is %s: %s is too long a path for MPS's sockets" % (home, out_dir))
    os.environ["COLO_HOME"] = home
    if backend == "sim":
        bin_dir = os.path.join(out_dir, "bin")
        os.makedirs(bin_dir, exist_ok=True)
        fake = os.path.join(bin_dir, "nvidia-cuda-mps-control")
        shutil.copy(os.path.join(REPO, "tests", "integration", "fake-mps-control"), fake)
        os.chmod(fake, 0o755)
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ["PATH"]


def machine(out_dir, colo, backend):
    lines = [time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "backend: " + backend,
             "cpus: %d" % os.cpu_count()]
    for cmd in (["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                 "--format=csv,noheader"],
                ["python3", "-c", "import torch, timm; print('torch', torch.__version__, "
                 "'timm', timm.__version__)"]):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            lines.append((r.stdout or r.stderr).strip())
        except (OSError, subprocess.TimeoutExpired) as e:
            lines.append("%s: %s" % (cmd[0], e))
    with open(os.path.join(out_dir, "machine.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    log("\n".join(lines))


# ---- poisson ----------------------------------------------------------------

MIXES = {
    # issue 22: four of the study's models colo has never seen, two jobs each
    "cold": ["small", "medium", "large", "cait"] * 2,
    # issue 11: the study's small, medium and large models and the recommender
    "study": ["small"] * 4 + ["medium"] * 3 + ["large"] * 3 + ["recsys"] * 2,
}


def arrival_plan(seed, span_s, mix="study"):
    """(time, kind) of each job of the mix: a Poisson process's arrivals given
    their number in [0, span]: exponential gaps, scaled so that the first comes
    at 0 and the last at span."""
    rng = random.Random(seed)
    kinds = MIXES[mix][:]
    rng.shuffle(kinds)
    gaps = [rng.expovariate(1.0) for _ in range(len(kinds) - 1)]
    total = sum(gaps)
    times, t = [0.0], 0.0
    for g in gaps:
        t += g
        times.append(t * span_s / total)
    return list(zip(times, kinds))


def run_pass(args, name, service_args, plan, files, db):
    svc = Service(args.colo, args.out, name, args.backend, service_args, db)
    submitted = []
    try:
        start = time.time()
        for (offset, kind), path in zip(plan, files):
            delay = start + offset - time.time()
            if delay > 0:
                time.sleep(delay)
            t = time.time()
            ids = svc.submit(path)
            submitted.append({"id": ids[0], "kind": kind, "offset_s": offset, "submit_time": t})
            log("  %6.1f s  submitted %-6s -> job %d" % (t - start, kind, ids[0]))
        jobs = svc.wait([s["id"] for s in submitted])
        run_id = svc.snapshot()["service"]["run_id"]
    finally:
        svc.stop()
    by_id = {j["id"]: j for j in jobs}
    rows = []
    for s in submitted:
        j = by_id.get(s["id"], {})
        logs = svc.job_logs(s["id"])
        lines = epoch_lines(logs[-1]) if logs else []
        row = dict(s)
        row.update({
            "state": j.get("state"), "attempts": j.get("attempts"),
            "colo_jct_s": (j["ended_ms"] - j["submitted_ms"]) / 1000.0
            if j.get("ended_ms") else None,
            "colo_end": j["ended_ms"] / 1000.0 if j.get("ended_ms") else None,
            "log": logs[-1] if logs else None,
            "log_epochs": len(lines),
            "log_end": lines[-1][2] if lines else None,
            "log_complete": bool(lines) and lines[-1][0] == lines[-1][1],
        })
        row["log_jct_s"] = row["log_end"] - s["submit_time"] if row["log_end"] else None
        rows.append(row)
    first = min(s["submit_time"] for s in submitted)
    ok = [r for r in rows if r["state"] == "ok"]
    summary = {
        "pass": name, "run_id": run_id, "jobs": len(rows), "ok": len(ok),
        "mean_jct_colo_s": statistics.mean(r["colo_jct_s"] for r in ok) if ok else None,
        "mean_jct_logs_s": statistics.mean(r["log_jct_s"] for r in ok if r["log_jct_s"])
        if ok else None,
        "makespan_colo_s": max(r["colo_end"] for r in ok) - first if ok else None,
        "makespan_logs_s": max(r["log_end"] for r in ok if r["log_end"]) - first if ok else None,
        "complete_logs": sum(1 for r in rows if r["log_complete"]),
        "db": db,
        "rows": rows,
    }
    show = subprocess.run([args.colo, "show", str(run_id), "--json", "--db",
                           os.path.join(args.out, db)], capture_output=True, text=True)
    try:
        shown = json.loads(show.stdout)
        summary["normalized_throughput"] = shown.get("normalized_throughput")
        summary["normalized_throughput_estimated"] = shown.get("normalized_throughput_estimated")
    except ValueError:
        summary["normalized_throughput"] = None
    with open(os.path.join(args.out, name + ".json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(args.out, name + "-jobs.txt"), "w") as f:
        f.write("%-4s %-7s %8s %-6s %8s %10s %10s %s\n" % (
            "ID", "KIND", "SUBMIT", "STATE", "ATTEMPTS", "JCT colo", "JCT logs", "LOG"))
        for r in rows:
            f.write("%-4d %-7s %7.1fs %-6s %8s %9s %10s %s\n" % (
                r["id"], r["kind"], r["offset_s"], r["state"], r["attempts"],
                "%.1fs" % r["colo_jct_s"] if r["colo_jct_s"] is not None else "-",
                "%.1fs" % r["log_jct_s"] if r["log_jct_s"] is not None else "-",
                os.path.relpath(r["log"], args.out) if r["log"] else "-"))
    return summary


def fmt_s(v):
    return "%.1f s" % v if v is not None else "-"


def poisson(args):
    plan = arrival_plan(args.seed, args.span, args.mix)
    jobs_dir = os.path.join(args.out, "jobs")
    os.makedirs(jobs_dir, exist_ok=True)
    files = []
    for i, (offset, kind) in enumerate(plan, 1):
        files.append(write_job_file(os.path.join(jobs_dir, "%02d-%s.toml" % (i, kind)), kind,
                                    job_command(kind, args.backend, args.epochs, args.scale)))
    log("plan (seed %d, %.0f s): %s" % (args.seed, args.span, ", ".join(
        "%.1fs %s" % (t, k) for t, k in plan)))
    mps = ["--mechanism", "mps", "--policy", "auto"]
    # Each policy starts from a store of its own, so that no earlier pass
    # teaches auto the jobs (the cold case); the warm pass is auto again on
    # the store of its cold pass, which then knows every job.
    passes = [("fcfs-exclusive", ["--mechanism", "exclusive", "--policy", "fixed"],
               "fcfs-exclusive.db"),
              ("auto-cold", mps, "auto.db"),
              ("auto-warm", mps, "auto.db")]
    if args.passes:
        passes = [p for p in passes if p[0] in args.passes.split(",")]
    results = []
    for name, service_args, db in passes:
        if name != "auto-warm":  # a store left by an earlier run in this directory is not cold
            for suffix in ("", "-wal", "-shm", ".serve.lock"):
                path = os.path.join(args.out, db + suffix)
                if os.path.exists(path):
                    os.remove(path)
        log("=== %s (store %s)" % (name, db))
        pass_start = time.time()
        results.append(run_pass(args, name, service_args, plan, files, db))
        log("    done in %.0f s" % (time.time() - pass_start))
    counts = {k: MIXES[args.mix].count(k) for k in dict.fromkeys(MIXES[args.mix])}
    lines = [
        "serve-poisson: %d jobs (%s; %d epochs each, scale %g) submitted at Poisson-spaced "
        "times over %.0f s (seed %d), backend %s%s; each pass on its own store, the warm one on "
        "auto-cold's" % (len(plan), ", ".join("%d %s" % (n, k) for k, n in counts.items()),
                         args.epochs, args.scale, args.span, args.seed, args.backend,
                         " (SIMULATED: no figure is a measurement)"
                         if args.backend == "sim" else ""),
        "",
        "%-16s %8s %16s %16s %16s %16s %10s %8s" % (
            "service", "jobs ok", "mean JCT colo", "mean JCT logs", "makespan colo",
            "makespan logs", "logs done", "norm tp"),
    ]
    for r in results:
        nt = r.get("normalized_throughput")
        lines.append("%-16s %5d/%-2d %16s %16s %16s %16s %7d/%-2d %8s" % (
            r["pass"], r["ok"], r["jobs"], fmt_s(r["mean_jct_colo_s"]),
            fmt_s(r["mean_jct_logs_s"]), fmt_s(r["makespan_colo_s"]), fmt_s(r["makespan_logs_s"]),
            r["complete_logs"], r["jobs"],
            "%.2fx%s" % (nt, "*" if r.get("normalized_throughput_estimated") else "")
            if nt else "-"))
    by_name = {r["pass"]: r for r in results}
    fcfs = by_name.get("fcfs-exclusive")
    lines.append("")
    for name, jct_bound, makespan_bound in (("auto-cold", 0.5, 0.8), ("auto-warm", 0.35, None)):
        r = by_name.get(name)
        if not (fcfs and r and fcfs["mean_jct_colo_s"] and r["mean_jct_colo_s"]):
            continue
        jct = (r["mean_jct_colo_s"] / fcfs["mean_jct_colo_s"],
               r["mean_jct_logs_s"] / fcfs["mean_jct_logs_s"])
        makespan = (r["makespan_colo_s"] / fcfs["makespan_colo_s"],
                    r["makespan_logs_s"] / fcfs["makespan_logs_s"])
        verdict = "PASS" if jct[1] <= jct_bound and (
            makespan_bound is None or makespan[1] <= makespan_bound) else "FAIL"
        lines.append("%s over fcfs-exclusive: mean JCT %.2fx (colo) / %.2fx (logs), makespan "
                     "%.2fx (colo) / %.2fx (logs); wanted mean JCT <= %.2fx%s (logs): %s" % (
                         name, jct[0], jct[1], makespan[0], makespan[1], jct_bound,
                         ", makespan <= %.2fx" % makespan_bound if makespan_bound else "",
                         verdict))
    lines.append("norm tp: colo's normalized throughput of the run (summed rate over solo rate "
                 "while two or more jobs were in their steady epochs; * with solo rates estimated, "
                 "not measured alone); bench/verify-speedup.py recomputes it from the logs "
                 "(check-*.txt)")
    diffs = [r["colo_jct_s"] - r["log_jct_s"] for p in results for r in p["rows"]
             if r["colo_jct_s"] is not None and r["log_jct_s"] is not None]
    if diffs:
        lines.append(
            "check: per job, colo's JCT (submission to the process's exit, the service's "
            "clock) less the logs' (this script's submission time to the job's last epoch "
            "line): median %.2f s, min %.2f s, max %.2f s; it should be small and positive "
            "(the time from the last epoch line to the exit)" % (
                statistics.median(diffs), min(diffs), max(diffs)))
    lines.append("runs: %s" % ", ".join("%s: run %s in %s" % (r["pass"], r["run_id"], r["db"])
                                       for r in results))
    if fcfs:
        for r in results:
            if r is not fcfs:
                lines.append(check_normalized_throughput(args, fcfs, r))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write(text)
    log("")
    log(text)
    bad = [r for r in results if r["ok"] != r["jobs"] or r["complete_logs"] != r["jobs"]]
    return 1 if bad else 0


def check_normalized_throughput(args, alone, shared):
    """bench/verify-speedup.py on the jobs' own logs: the shared pass's jobs
    against the same kinds' logs in the exclusive pass (their solo rates)."""
    together = [r["log"] for r in shared["rows"] if r["log"]]
    # Patterns match by kind: a job's log is named after it ("jobs/3-small.log").
    solo = ["%s.log=%s" % (r["kind"], r["log"]) for r in alone["rows"] if r["log"]]
    out = os.path.join(args.out, "check-%s.txt" % shared["pass"])
    r = subprocess.run([sys.executable, os.path.join(REPO, "bench", "verify-speedup.py"),
                        "--json", "--solo"] + solo + ["--together"] + together,
                       capture_output=True, text=True)
    with open(out, "w") as f:
        f.write(r.stdout + r.stderr)
    try:
        nt = json.loads(r.stdout)["normalized_throughput"]
    except (ValueError, KeyError):
        return "check %s: verify-speedup.py failed (%s)" % (shared["pass"], os.path.basename(out))
    colo_nt = shared.get("normalized_throughput")
    return "check %s: normalized throughput from the logs %s, colo %s" % (
        shared["pass"], "%.2fx" % nt if nt else "-", "%.2fx" % colo_nt if colo_nt else "-")


# ---- faults -----------------------------------------------------------------

def finish(args, lines, failures):
    """Ends `lines` with PASS, or FAIL and why; writes them to OUT/summary.txt
    and prints them. The exit status: 1 on any failure."""
    lines = lines + ["", "result: %s" % ("PASS" if not failures
                                          else "FAIL: " + "; ".join(failures))]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write(text)
    log("")
    log(text)
    return 0 if not failures else 1



def colo_mps_victims(colo_home):
    """Pids of the MPS server(s) of colo's own daemons (CUDA_MPS_PIPE_DIRECTORY
    under $COLO_HOME/mps); on the simulated backend, where the fake control
    program's stand-in server (or, without one, its daemon) stands in for it."""
    prefix = os.path.join(colo_home, "mps") + os.sep
    servers, daemons = [], []
    for pid_dir in glob.glob("/proc/[0-9]*"):
        try:
            with open(os.path.join(pid_dir, "cmdline"), "rb") as f:
                argv0 = f.read().split(b"\0")[0].decode(errors="replace")
            with open(os.path.join(pid_dir, "environ"), "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if not any(e.startswith(b"CUDA_MPS_PIPE_DIRECTORY=" + prefix.encode()) for e in env):
            continue
        if os.path.basename(argv0) == "nvidia-cuda-mps-server":
            servers.append(int(os.path.basename(pid_dir)))
    if servers:
        return servers, "nvidia-cuda-mps-server"
    # The fake control program's stand-in server.
    for pid_file in glob.glob(os.path.join(prefix, "*", "pipe", "nvidia-cuda-mps-server.pid")):
        with open(pid_file) as f:
            servers.append(int(f.read().strip()))
    if servers:
        return servers, "the fake MPS server (simulated)"
    for pid_file in glob.glob(os.path.join(prefix, "*", "pipe", "nvidia-cuda-mps-control.pid")):
        with open(pid_file) as f:
            daemons.append(int(f.read().strip()))
    return daemons, "the MPS control daemon (no nvidia-cuda-mps-server found: simulated?)"


def kill_colo_mps(failures, label):
    """SIGKILLs colo's MPS server(s) (colo_mps_victims); notes a failure for
    `label` when none is found. Returns (victims, what, when it killed)."""
    victims, what = colo_mps_victims(os.environ["COLO_HOME"])
    kill_time = time.time()
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    log("killed %s: pid %s" % (what, ", ".join(map(str, victims)) or "none found"))
    if not victims:
        failures.append("%s: no MPS process of colo's found to kill" % label)
    return victims, what, kill_time


def faults(args):
    lines = ["serve-faults: backend %s%s" % (args.backend, " (SIMULATED)"
                                             if args.backend == "sim" else "")]
    failures = []
    svc = Service(args.colo, args.out, "service", args.backend,
                  ["--mechanism", "mps", "--grace", "5s", "--http", "127.0.0.1:0"])
    try:
        gpu = svc.snapshot()["gpus"][0]
        gpu_bytes = gpu["memory_total_bytes"]
        gib = float(1 << 30)
        if args.recsys_gib <= 0:
            # Each holds about its tables and 1 GiB more: 8 of them 1.5 times the GPU.
            args.recsys_gib = max(16.0, float(int(1.5 * gpu_bytes / gib / 8 + 0.999)))
        # (a) 8 recommender jobs, no memory hints; together more memory than the GPU has.
        log("=== (a) 8 recommender jobs under the default policy (%s)" %
            svc.snapshot()["service"]["policy"])
        recsys = job_command("recsys", args.backend, args.epochs, args.scale)
        recsys += ["--memory-gib", str(args.recsys_gib)]
        file_a = write_job_file(os.path.join(args.out, "recsys8.toml"), "recsys", recsys, 8)
        ids_a = svc.submit(file_a)
        jobs_a = svc.wait(ids_a)
        run_id = svc.snapshot()["service"]["run_id"]
        details = {i: svc.http("/api/jobs/%d" % i) for i in ids_a}
        lost = [j for j in jobs_a if j["state"] != "ok"]
        oom_attempts = sum(1 for d in details.values() for a in d["attempts"]
                           if a["state"] in ("oom", "requeued"))
        intervals = [(a["started_ms"], a["ended_ms"] or a["started_ms"])
                     for d in details.values() for a in d["attempts"]]
        most = max(sum(1 for s, e in intervals if s <= t < e) for t, _ in intervals)
        complete = sum(1 for i in ids_a if svc.job_logs(i) and epoch_lines(svc.job_logs(i)[-1])
                       and epoch_lines(svc.job_logs(i)[-1])[-1][0] == args.epochs)
        show = subprocess.run([args.colo, "show", str(run_id), "--json", "--db", svc.db],
                              capture_output=True, text=True)
        peaks = []
        try:
            shown = json.loads(show.stdout)
            peaks = [j.get("peak_memory_bytes") or 0 for j in shown["jobs"]
                     if j["state"] == "ok" and j["name"].startswith("recsys")]
            device_peak = shown.get("peak_memory_used_bytes")
        except (ValueError, KeyError):
            device_peak = None
        lines += [
            "",
            "(a) 8 recommender jobs (dlrm, --memory-gib %g, no memory hints) on %s (%.0f GiB), "
            "policy %s" % (args.recsys_gib, gpu["name"], gpu_bytes / gib,
                           svc.snapshot()["service"]["policy"].split(" (")[0]),
            "    lost: %d of 8 (states: %s)" % (len(lost), ", ".join(
                "%d %s" % (j["id"], j["state"]) for j in jobs_a)),
            "    out-of-memory retries: %d; at most %d jobs ran at once" % (oom_attempts, most),
            "    their peak memory summed: %.1f GiB (%s per job; the GPU has %.1f GiB); the "
            "GPU's own peak: %s" % (sum(peaks) / gib, ", ".join("%.1f" % (p / gib) for p in peaks),
                                    gpu_bytes / gib,
                                    "%.1f GiB" % (device_peak / gib) if device_peak else "-"),
            "    check from the jobs' logs: %d of 8 printed their last epoch (%d/%d)" % (
                complete, args.epochs, args.epochs),
        ]
        if lost or complete != 8:
            failures.append("(a) jobs were lost")

        # (b) the MPS server killed under 4 running jobs.
        log("=== (b) the MPS server killed under 4 running jobs")
        small = job_command("small", args.backend, args.kill_epochs, args.scale)
        # Hints (the study's H200 figures for resnet26), so that the four start
        # together rather than after a probe of the first alone.
        file_b = write_job_file(os.path.join(args.out, "small4.toml"), "small", small, 4,
                                {"gpu_memory": "2GiB", "sm_activity": 19, "gpu_util": 37})
        ids_b = svc.submit(file_b)
        deadline = time.time() + 240
        running = []
        while time.time() < deadline:
            running = [j["id"] for j in svc.snapshot()["jobs"]
                       if j["id"] in ids_b and j["state"] == "running" and (j["epoch"] or 0) >= 1]
            if len(running) == len(ids_b):
                break
            time.sleep(0.5)
        time.sleep(2)
        running = [j["id"] for j in svc.snapshot()["jobs"]
                   if j["id"] in ids_b and j["state"] == "running"]
        victims, what, kill_time = kill_colo_mps(failures, "(b)")
        jobs_b = svc.wait(ids_b)
        details_b = {i: svc.http("/api/jobs/%d" % i) for i in ids_b}
        text = svc.text()
        named = [line for line in text.splitlines() if "mechanism failed" in line]
        restarted = [line for line in text.splitlines() if "mechanism restarted" in line]
        requeued = {i: [a for a in d["attempts"] if a["state"] == "requeued"]
                    for i, d in details_b.items()}
        # From the logs alone: a first attempt cut short, then a full one begun after the kill.
        log_checks = 0
        for i in running:
            files = svc.job_logs(i)
            first = epoch_lines(files[0]) if files else []
            last = epoch_lines(files[-1]) if files else []
            if (len(files) >= 2 and len(first) < args.kill_epochs and last
                    and last[-1][0] == args.kill_epochs and last[0][2] > kill_time):
                log_checks += 1
        lines += [
            "",
            "(b) 4 small jobs (resnet26, %d epochs) under mps; killed %s (pid %s) while %d of them "
            "ran (%s), each past its first epoch" % (args.kill_epochs, what,
                                                     ", ".join(map(str, victims)), len(running),
                                                     ", ".join(map(str, running))),
            "    ended: %s" % ", ".join("%d %s after %d attempts" % (j["id"], j["state"],
                                                                     j["attempts"])
                                       for j in jobs_b),
            "    colo named it: %s" % (named[0].strip() if named else "NOT FOUND"),
            "    %s" % (restarted[0].strip() if restarted else "mechanism restart NOT FOUND"),
            "    attempts requeued (GET /api/jobs/ID): %s" % ", ".join(
                "%d: %s" % (i, "; ".join(a["reason"][:120] for a in r) or "none")
                for i, r in requeued.items()),
            "    check from the jobs' logs: %d of the %d running at the kill have a first attempt "
            "cut short and a complete attempt that began after it" % (log_checks, len(running)),
        ]
        if any(j["state"] != "ok" for j in jobs_b):
            failures.append("(b) not every job ended ok")
        if not named or not restarted:
            failures.append("(b) the failure was not named or the daemon not restarted")
        if len(running) < 2:
            failures.append("(b) fewer than 2 jobs ran when the server was killed")
        if log_checks != len(running):
            failures.append("(b) the logs do not show every job running at the kill run again")
        if any(not requeued[i] for i in running):
            failures.append("(b) a job running at the kill has no requeued attempt")
    finally:
        svc.stop()
    return finish(args, lines, failures)


# ---- mps-kill ---------------------------------------------------------------

def wait_for_epoch(log_files, count, deadline_s):
    """Waits until `count` of the log files (a function returning them) show
    an epoch line; the files found then."""
    deadline = time.time() + deadline_s
    while time.time() < deadline:
        files = log_files()
        if sum(1 for f in files if epoch_lines(f)) >= count:
            return files
        time.sleep(0.5)
    return log_files()


def kill_case(args, front_end, clients):
    """The MPS server SIGKILLed while `clients` jobs (resnet26, hinted so that
    they start together) are its clients, under `colo run` or `colo serve`.
    Returns (summary lines, failures)."""
    name = "%s-%d" % (front_end, clients)
    case_dir = os.path.join(args.out, name)
    shutil.rmtree(case_dir, ignore_errors=True)  # a fresh store and no old logs each time
    os.makedirs(case_dir)
    command = job_command("small", args.backend, args.kill_epochs, args.scale)
    hints = {"gpu_memory": "2GiB", "sm_activity": 19, "gpu_util": 37}
    job_file = write_job_file(os.path.join(case_dir, "jobs.toml"), "small", command, clients,
                              hints)
    db = os.path.join(case_dir, "colo.db")
    logs = os.path.join(case_dir, "logs")
    log("=== %s: the MPS server killed under %d client%s" % (name, clients,
                                                           "s" if clients > 1 else ""))
    svc = proc = out = None
    if front_end == "serve":
        svc = Service(args.colo, case_dir, "service", args.backend,
                      ["--mechanism", "mps", "--grace", "5s", "--http", "127.0.0.1:0"],
                      db=os.path.join(name, "colo.db"))
        ids = svc.submit(job_file)
        first_logs = lambda: [svc.job_logs(i)[0] for i in ids if svc.job_logs(i)]
    else:
        cmd = [args.colo, "run", job_file, "--backend", args.backend, "--mechanism", "mps",
               "--plain", "--grace", "5s", "--db", db, "--logs", logs, "--local"]
        log("$ " + " ".join(cmd))
        out = open(os.path.join(case_dir, "colo-run.log"), "w")
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        first_logs = lambda: sorted(f for f in glob.glob(os.path.join(logs, "*", "*", "*.log"))
                                    if ".attempt" not in f)
    failures = []
    try:
        running = wait_for_epoch(first_logs, clients, 300)
        if len(running) != clients:
            failures.append("%s: only %d of %d jobs began an epoch within 300 s" % (
                name, len(running), clients))
        victims, what, kill_time = kill_colo_mps(failures, name)
        if svc:
            ended = svc.wait(ids)
            states = {j["id"]: (j["state"], j["attempts"]) for j in ended}
            text = svc.text()
            all_logs = {i: svc.job_logs(i) for i in ids}
        else:
            code = proc.wait(timeout=900)
            out.close()
            with open(os.path.join(case_dir, "colo-run.log")) as f:
                text = f.read()
            shown = json.loads(subprocess.run([args.colo, "show", "--json", "--db", db],
                                              capture_output=True, text=True).stdout)
            states = {j["name"]: (j["state"], j["attempts"]) for j in shown["jobs"]}
            all_logs = {}
            for f in sorted(glob.glob(os.path.join(logs, "*", "*", "*.log"))):
                m = re.match(r"\d+-(.+?)(\.attempt(\d+))?\.log$", os.path.basename(f))
                if m:
                    all_logs.setdefault(m.group(1), []).append((int(m.group(3) or 1), f))
            all_logs = {k: [f for _, f in sorted(v)] for k, v in all_logs.items()}
            if code != 0:
                failures.append("%s: colo run exited %d" % (name, code))
    finally:
        if svc:
            svc.stop()
        elif proc and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
    named = [line.strip() for line in text.splitlines()
             if any("MPS server (pid %d) is gone" % v in line for v in victims)]
    requeued = [line for line in named if "requeued" in line]
    # From the logs alone: a first attempt cut short before the kill's epoch
    # count, then a complete attempt that began after the kill.
    log_checks = 0
    for files in all_logs.values():
        first = epoch_lines(files[0]) if files else []
        last = epoch_lines(files[-1]) if files else []
        if (len(files) >= 2 and len(first) < args.kill_epochs and last
                and last[-1][0] == args.kill_epochs and last[0][2] > kill_time):
            log_checks += 1
    lines = [
        "",
        "%s: colo %s, %d job%s (resnet26, %d epochs) under mps; killed %s (pid %s) once "
        "%d had finished an epoch" % (name, front_end, clients, "s" if clients > 1 else "",
                                      args.kill_epochs, what, ", ".join(map(str, victims)),
                                      len(running)),
        "    ended: %s" % ", ".join("%s %s after %d attempts" % (k, st, a)
                                    for k, (st, a) in sorted(states.items())),
        "    colo named the server's death: %s" % (named[0][:300] if named else "NOT FOUND"),
        "    requeue lines naming it: %d" % len(requeued),
        "    check from the jobs' logs: %d of %d have a first attempt cut short and a complete "
        "attempt that began after the kill" % (log_checks, clients),
    ]
    if len(states) != clients or any(st != "ok" or a < 2 for st, a in states.values()):
        failures.append("%s: not every job ended ok after a retry" % name)
    if len(requeued) < clients:
        failures.append("%s: fewer requeue lines name the server's death than jobs" % name)
    if log_checks != clients:
        failures.append("%s: the logs do not show every job cut short and run again" % name)
    return lines, failures


def mps_kill(args):
    lines = ["mps-kill: backend %s%s; the MPS server SIGKILLed under 1 and under 3 clients, "
             "under colo run and colo serve" % (args.backend, " (SIMULATED)"
                                                if args.backend == "sim" else "")]
    failures = []
    for front_end in args.front_ends.split(","):
        for clients in (1, 3):
            case_lines, case_failures = kill_case(args, front_end, clients)
            lines += case_lines
            failures += case_failures
    return finish(args, lines, failures)


# ---- spread ------------------------------------------------------------------

VISIBLE = re.compile(r"^colo gave this job: CUDA_VISIBLE_DEVICES=(\S*)\s*$")


def visible_devices(path):
    """The CUDA_VISIBLE_DEVICES the job printed it was started with, or None."""
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = VISIBLE.match(line.strip())
                if m:
                    return m.group(1)
    except OSError:
        pass
    return None


def spread(args):
    sim = args.backend == "sim"
    lines = ["serve-spread: backend %s%s" % (args.backend, " (SIMULATED)" if sim else "")]
    # Each job prints the GPU it was given before it starts: the check below
    # reads that from the job's own log, not from colo's records.
    command = ["sh", "-c", 'echo "colo gave this job: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"'
               '; exec "$@"', "job"] + job_command("small", args.backend, args.epochs, args.scale)
    path = write_job_file(os.path.join(args.out, "sweep.toml"), "resnet26", command,
                          repeat=args.jobs)
    svc = Service(args.colo, args.out, "service", args.backend,
                  ["--mechanism", "mps"] + (["--sim-devices", "2"] if sim else []))
    try:
        gpus = svc.snapshot()["gpus"]
        log("=== %d jobs on %d GPUs (%s)" % (args.jobs, len(gpus),
                                           ", ".join(g["uuid"] for g in gpus)))
        started = time.time()
        ids = svc.submit(path)
        jobs = svc.wait(ids)
        wall = time.time() - started
    finally:
        svc.stop()
    uuid_of = {g["index"]: g["uuid"] for g in gpus}
    per_gpu_colo = {g["uuid"]: 0 for g in gpus}
    per_gpu_logs = {g["uuid"]: 0 for g in gpus}
    failures, disagree = [], []
    for j in jobs:
        colo_uuid = uuid_of.get(j.get("gpu"))
        logs = svc.job_logs(j["id"])
        log_uuid = visible_devices(logs[-1]) if logs else None
        if j.get("state") != "ok":
            failures.append("job %d ended %s" % (j["id"], j.get("state")))
        if colo_uuid in per_gpu_colo:
            per_gpu_colo[colo_uuid] += 1
        if log_uuid in per_gpu_logs:
            per_gpu_logs[log_uuid] += 1
        if colo_uuid != log_uuid:
            disagree.append("job %d: colo says %s, its log %s" % (j["id"], colo_uuid, log_uuid))
    lines.append("%d jobs (resnet26, %d epochs) submitted at once; all ended in %.0f s; %d ok"
                 % (len(jobs), args.epochs, wall, sum(1 for j in jobs if j.get("state") == "ok")))
    lines.append("%-44s %8s %14s" % ("GPU", "colo", "jobs' logs"))
    for g in gpus:
        lines.append("%-44s %8d %14d" % ("gpu%d %s" % (g["index"], g["uuid"]),
                                         per_gpu_colo[g["uuid"]], per_gpu_logs[g["uuid"]]))
    if len(gpus) < 2:
        failures.append("this machine has %d GPU: the benchmark needs two or more" % len(gpus))
    idle = [u for u, n in per_gpu_logs.items() if n == 0]
    if idle:
        failures.append("no job ran on %s (by the jobs' logs)" % ", ".join(idle))
    failures += disagree
    lines += ["FAIL: " + f for f in failures] or ["PASS: every GPU ran jobs of the sweep, and "
                                                  "colo and the jobs' logs agree on each job's GPU"]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write(text)
    log(text)
    return 0 if not failures else 1


# ---- trace-download ---------------------------------------------------------

# On the simulated backend a job stands in for a profiled training: it writes
# a window's summary and a Chrome trace of made-up kernels, as colo's Python
# client would (nothing in it was measured).
STANDIN_WINDOW = r"""
import json, os
d = os.environ["COLO_PROFILE_DIR"]
os.makedirs(d, exist_ok=True)
events = [{"name": "sim_kernel_%d" % (i % 7), "cat": "kernel", "ph": "X", "ts": i, "dur": 1}
          for i in range(200000)]
with open(os.path.join(d, "torch-trace-1.json"), "w") as f:
    json.dump({"traceEvents": events}, f)
with open(os.path.join(d, "torch-summary-1.json"), "w") as f:
    json.dump({"window": 1, "trigger": "job file", "started": 1, "ended": 2, "steps": 20,
               "closed_by": "steps",
               "trace": "torch-trace-1.json", "top": []}, f)
"""


def peak_rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def trace_download(args):
    """Profiled jobs under `colo serve --http-logs`; each window's trace downloaded
    through GET /api/jobs/ID/profiles/N/trace (the dashboard's link) and checked
    against the file the job wrote: the same bytes, a Chrome trace with kernels."""
    sim = args.backend == "sim"
    lines = ["serve trace-download: backend %s%s; profile = %s" % (
        args.backend, " (SIMULATED: the traces are stand-ins the jobs write)" if sim else "",
        args.profile)]
    command = (["python3", "-c", STANDIN_WINDOW] if sim
               else job_command("small", args.backend, args.epochs, args.scale))
    path = os.path.join(args.out, "profiled.toml")
    with open(path, "w") as f:
        f.write("[defaults]\nworkdir = %s\nenv = { PYTHONUNBUFFERED = \"1\" }\n" % toml_string(REPO))
        f.write("profile = %s\n\n" % args.profile)
        f.write("[[job]]\nname = \"resnet26\"\ncommand = [%s]\nrepeat = %d\n" % (
            ", ".join(toml_string(c) for c in command), args.jobs))
    # A fresh store each time (a results directory run into again keeps its
    # last one): the jobs start cold, as a first user's would.
    for old in glob.glob(os.path.join(args.out, "colo.db*")):
        os.remove(old)
    shutil.rmtree(os.path.join(args.out, "service"), ignore_errors=True)
    svc = Service(args.colo, args.out, "service", args.backend,
                  ["--mechanism", "mps", "--http", "127.0.0.1:0", "--http-logs"])
    failures = []
    try:
        jobs = svc.wait(svc.submit(path))
        before = peak_rss_mb(svc.proc.pid)
        address = svc.snapshot()["service"]["http"]
        largest = 0
        lines.append("%-4s %-6s %-10s %12s %10s %8s  %s" % (
            "job", "window", "closed by", "bytes", "seconds", "kernels", "the job's own file"))
        for j in jobs:
            if j.get("state") != "ok":
                failures.append("job %d ended %s" % (j["id"], j.get("state")))
            windows = svc.http("/api/jobs/%d" % j["id"]).get("profiles", [])
            if not windows:
                failures.append("job %d: no profiling window" % j["id"])
            for w in windows:
                # The file as the job wrote it, found in the service's layout.
                files = glob.glob(os.path.join(svc.logs, "*", "profiles", str(j["id"]),
                                               "torch-trace-%d.json" % w["window"]))
                if len(files) != 1 or not w.get("trace_url"):
                    failures.append("job %d window %d: trace file %s, link %s" % (
                        j["id"], w["window"], files, w.get("trace_url")))
                    continue
                started = time.time()
                with urllib.request.urlopen("http://%s%s" % (address, w["trace_url"]),
                                            timeout=120) as resp:
                    got = resp.read()
                seconds = time.time() - started
                with open(files[0], "rb") as f:
                    own = f.read()
                largest = max(largest, len(own))
                kernels = sum(1 for e in json.loads(got).get("traceEvents", [])
                              if isinstance(e, dict) and e.get("cat") == "kernel")
                same = hashlib.sha256(got).hexdigest() == hashlib.sha256(own).hexdigest()
                lines.append("%-4d %-6d %-10s %12d %10.2f %8d  %s" % (
                    j["id"], w["window"], w.get("closed_by") or "-", len(got), seconds, kernels,
                    "the same bytes (SHA-256)" if same else "DIFFERENT"))
                if not same:
                    failures.append("job %d window %d: the download differs from the job's file"
                                    % (j["id"], w["window"]))
                # A window the job's end closed may have held no GPU work.
                if kernels == 0 and w.get("closed_by") != "job end":
                    failures.append("job %d window %d: no kernel in the trace" % (j["id"],
                                                                                   w["window"]))
        after = peak_rss_mb(svc.proc.pid)
        lines.append("colo serve's peak RSS (VmHWM): %.1f MB before the downloads, %.1f MB "
                     "after; the largest trace %.1f MB" % (before, after, largest / 2**20))
        # Said only of traces large enough to tell (the service's own
        # allocations move its peak by a few MB).
        if largest >= 32 * 2**20 and after - before > largest / 2**20 / 2:
            failures.append("the service's peak RSS grew by more than half a trace: it was "
                            "not streamed")
    finally:
        svc.stop()
    # Traces are large: the summaries stay, the traces go.
    for trace in glob.glob(os.path.join(svc.logs, "*", "profiles", "*", "torch-trace-*.json")):
        os.remove(trace)
    if not failures:
        lines.append("every window's trace downloaded whole from the service, byte for byte the "
                     "file its job wrote")
    return finish(args, lines, failures)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("poisson", "faults", "spread", "mps-kill", "trace-download"):
        p = sub.add_parser(name)
        p.add_argument("out", help="results directory (created)")
        p.add_argument("--colo", default=os.path.join(REPO, "build-release", "colo"))
        p.add_argument("--backend", choices=["nvml", "sim"], default="nvml")
        p.add_argument("--scale", type=float, default=1.0, help="samples per epoch, scaled")
        if name == "poisson":
            p.add_argument("--mix", choices=sorted(MIXES), default="cold")
            p.add_argument("--passes", default="",
                           help="comma-separated subset of fcfs-exclusive,auto-cold,auto-warm")
            p.add_argument("--span", type=float, default=120.0,
                           help="seconds over which the 12 jobs are submitted")
            p.add_argument("--seed", type=int, default=11)
            p.add_argument("--epochs", type=int, default=2)
        elif name == "spread":
            p.add_argument("--jobs", type=int, default=14)
            p.add_argument("--epochs", type=int, default=4)
        elif name == "trace-download":
            p.add_argument("--jobs", type=int, default=2)
            p.add_argument("--epochs", type=int, default=3)
            p.add_argument("--profile", default='{ tool = "torch", after_epoch = 1, steps = 20 }',
                           help="the job file's profile (after_epoch = 3: a window still open "
                           "when the job ends)")
        elif name == "mps-kill":
            p.add_argument("--kill-epochs", type=int, default=12,
                           help="epochs of the jobs the MPS server dies under")
            p.add_argument("--front-ends", default="run,serve",
                           help="comma-separated subset of run,serve")
        else:
            p.add_argument("--epochs", type=int, default=3, help="of each recommender job")
            p.add_argument("--recsys-gib", type=float, default=0.0,
                           help="dlrm --memory-gib, its tables (it holds about 1 GiB more); "
                           "0: enough that 8 jobs need 1.5 times the GPU (16 on an H100 80GB)")
            p.add_argument("--kill-epochs", type=int, default=16,
                           help="epochs of the jobs the MPS server dies under")
    args = parser.parse_args(argv)
    args.out = os.path.abspath(args.out)
    args.colo = os.path.abspath(args.colo)
    if not os.access(args.colo, os.X_OK):
        parser.error("no colo binary at %s (build it, or set COLO)" % args.colo)
    os.makedirs(args.out, exist_ok=True)
    prepare_environment(args.out, args.backend)
    machine(args.out, args.colo, args.backend)
    started = time.time()
    code = {"poisson": poisson, "faults": faults, "spread": spread,
            "mps-kill": mps_kill, "trace-download": trace_download}[args.command](args)
    log("%s took %.0f s" % (args.command, time.time() - started))
    return code


if __name__ == "__main__":
    sys.exit(main())
