#!/usr/bin/env python3
"""Peaceful sharing under MPS (issue 31): one job's fatal GPU fault must not
cost its neighbours, a stalled job is found and run again, and a gang whose
rank crashed is run again whole without failing on a recovering MPS server.

Usage (bench/faults.sh wraps it; the settings below are environment knobs):

    bench/faults.sh all RESULTS_DIR              # one GPU: neighbour-assert, then stall
    bench/faults.sh neighbour-assert RESULTS_DIR # or: faults.py neighbour-assert DIR --repeats 5
    bench/faults.sh stall RESULTS_DIR
    bench/faults.sh gang-rank-exit RESULTS_DIR   # two GPUs (kind nvidia-h100-x2)

    # without a GPU (the logic only; Debian's CPU torch and a stand-in timm):
    BACKEND=sim PYTHON=/usr/bin/python3 bench/faults.sh all /tmp/faults

The cases, each under RESULTS_DIR/<case>/ with its job file, colo's stdout and
stderr, the jobs' logs (colo run --logs there), the store (--db there), the MPS
daemon's logs, `colo show --json`, and summary.txt (bench/check-faults.py's
PASS/FAIL lines, which recompute every figure from the jobs' own logs):

  neighbour-assert  REPEATS times (5), each colo run on a fresh store and
                    COLO_HOME: (a) baseline, 3 healthy resnet26 jobs
                    (--checkpoint-every-epoch) under `colo run --mechanism mps`;
                    (b) fault, the same 3 plus a 4th whose labels go out of
                    range in epoch BAD_EPOCH (3): a CUDA device-side assert in
                    an MPS client. The healthy jobs must end ok with every
                    epoch trained and no failure counted against them, the
                    fault case's makespan within MAKESPAN_RATIO (1.5) of the
                    baseline's, and the faulty job must end failed with the
                    assertion as its reason after a last attempt outside the
                    shared MPS server.
  stall             one resnet26 job that stops reporting after epoch
                    STALL_AFTER (2) of STALL_EPOCHS (8), holding its GPU
                    memory, once; no stall_timeout: colo's own bound (about 3x
                    its epoch time plus a floor, STALL_FLOOR_S=60 for the
                    check) must find it and run it again.
  gang-rank-exit    a 2-rank torchrun DDP job (gpus = 2) whose rank 1 ends
                    with os._exit(1) in epoch EXIT_EPOCH (2), once; the gang
                    must be run again whole and end ok.
  all               neighbour-assert then stall, with the total time; stops
                    repeating neighbour-assert early (and says so) when the
                    next repeat and the stall case would not fit TIME_BUDGET_S.

Environment (defaults for BACKEND=nvml; sim's in brackets):
  COLO=build-release/colo (else build/colo)   BACKEND=nvml|sim
  PYTHON=python3 (sim: the first of python3, /usr/bin/python3 with torch)
  DEVICE=cuda [cpu]   MODEL=resnet26   BATCH=128 [32]
  EPOCHS=12 [6]   EPOCH_SAMPLES=12800 (about 1.6-2 s an epoch on an H100) [1024]
  REPEATS=5   BAD_EPOCH=3   MAKESPAN_RATIO=1.5   POLICY=auto (or fixed: --max-per-gpu 4)
  STALL_EPOCHS=8 [5]   STALL_AFTER=2   STALL_FLOOR_S=60   STALL_CASE_TIMEOUT_S=300
  GANG_MODEL=resnet26   GANG_EPOCHS=5 [4]   EXIT_EPOCH=2
  LAUNCHER="$PYTHON -m torch.distributed.run --standalone" [$PYTHON bench/launch_ranks.py]
  GPUS=0 (the one-GPU cases on a machine with several: colo run --gpus)
  CASE_TIMEOUT_S=300 (per colo run)   TIME_BUDGET_S=540 (all)
  ASSERT_PATTERN=Assertion [cpu device: "out of bounds", torch's CPU IndexError]
  TIMM_STANDIN=auto (sim: a tiny stand-in timm on the jobs' PYTHONPATH; 1 always, 0 never)

Exit status: 0 when every check passed, 1 otherwise, 2 on bad usage.
Only the standard library; times are the wall clock.
"""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ENDED_AT = re.compile(r"^epoch (\d+)/(\d+): .* ended at (\d+(?:\.\d+)?)\s*$")
T0 = time.time()

# colo refuses an MPS state directory ($COLO_HOME/mps) longer than this (MPS
# makes Unix sockets below it; bench/serve_bench.py prepare_environment).
MAX_MPS_STATE_DIR = 57

# A stand-in for timm on the CPU (BACKEND=sim), as bench/gang-ddp.sh's CPU mode
# takes one: a small convolutional network, so that train.py's own code
# (faults, checkpoints, DDP) runs for real with Debian's CPU torch.
TIMM_STANDIN = '''"""A stand-in for timm (bench/faults.py, BACKEND=sim): a tiny CNN."""
import torch

__version__ = "stand-in"


def create_model(name, pretrained=False, num_classes=1000, img_size=None, **kwargs):
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, num_classes))
'''


def log(msg):
    print("[%6.1fs] %s" % (time.time() - T0, msg), flush=True)


def env(name, default):
    return os.environ.get(name, default)


def has_torch(python):
    try:
        return subprocess.run([python, "-c", "import torch"], capture_output=True,
                              timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class Settings:
    def __init__(self, out, repeats=None):
        self.out = out
        sim = env("BACKEND", "nvml") == "sim"
        self.backend = "sim" if sim else "nvml"
        default_colo = os.path.join(REPO, "build-release", "colo")
        if not os.path.exists(default_colo):
            default_colo = os.path.join(REPO, "build", "colo")
        self.colo = os.path.abspath(env("COLO", default_colo))
        python = env("PYTHON", "")
        if not python:
            python = "python3"
            if sim and not has_torch(python) and has_torch("/usr/bin/python3"):
                python = "/usr/bin/python3"  # Debian's CPU torch beside a pyenv python3
        self.python = python
        self.device = env("DEVICE", "cpu" if sim else "cuda")
        self.model = env("MODEL", "resnet26")
        self.batch = int(env("BATCH", "32" if sim else "128"))
        self.epochs = int(env("EPOCHS", "6" if sim else "12"))
        # bench/serve_bench.py job_command: resnet26 on cifar10 at batch 128,
        # 12800 samples: about 1.6 s an epoch alone on an H100.
        self.epoch_samples = int(env("EPOCH_SAMPLES", "1024" if sim else "12800"))
        self.repeats = int(repeats if repeats is not None else env("REPEATS", "5"))
        self.bad_epoch = int(env("BAD_EPOCH", "3"))
        self.makespan_ratio = float(env("MAKESPAN_RATIO", "1.5"))
        self.policy = env("POLICY", "auto")
        self.stall_epochs = int(env("STALL_EPOCHS", "5" if sim else "8"))
        self.stall_after = int(env("STALL_AFTER", "2"))
        self.stall_floor_s = float(env("STALL_FLOOR_S", "60"))
        self.stall_case_timeout_s = float(env("STALL_CASE_TIMEOUT_S", "300"))
        self.gang_model = env("GANG_MODEL", "resnet26")
        self.gang_epochs = int(env("GANG_EPOCHS", "4" if sim else "5"))
        self.exit_epoch = int(env("EXIT_EPOCH", "2"))
        self.launcher = env("LAUNCHER", "%s %s" % (self.python, os.path.join(HERE, "launch_ranks.py"))
                            if sim else "%s -m torch.distributed.run --standalone" % self.python)
        self.case_timeout_s = float(env("CASE_TIMEOUT_S", "300"))
        self.time_budget_s = float(env("TIME_BUDGET_S", "540"))
        self.assert_pattern = env("ASSERT_PATTERN",
                                  "out of bounds" if self.device == "cpu" else "Assertion")
        standin = env("TIMM_STANDIN", "auto")
        self.standin_dir = None
        if standin == "1" or (standin == "auto" and sim):
            self.standin_dir = os.path.join(out, "standin")

    def describe(self):
        return {k: v for k, v in vars(self).items()}


# ---- the environment ----------------------------------------------------------

def prepare(s):
    os.makedirs(s.out, exist_ok=True)
    if s.backend == "sim":
        bin_dir = os.path.join(s.out, "bin")
        os.makedirs(bin_dir, exist_ok=True)
        fake = os.path.join(bin_dir, "nvidia-cuda-mps-control")
        shutil.copy(os.path.join(REPO, "tests", "integration", "fake-mps-control"), fake)
        os.chmod(fake, 0o755)
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ["PATH"]
    if s.standin_dir:
        os.makedirs(s.standin_dir, exist_ok=True)
        with open(os.path.join(s.standin_dir, "timm.py"), "w") as f:
            f.write(TIMM_STANDIN)
    lines = [time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "backend: " + s.backend,
             "colo: " + s.colo, "cpus: %d" % os.cpu_count()]
    probe = "import torch; print('torch', torch.__version__)"
    if not s.standin_dir:
        probe = "import torch, timm; print('torch', torch.__version__, 'timm', timm.__version__)"
    for cmd in ([s.colo, "--version"],
                ["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                 "--format=csv,noheader"],
                [s.python, "-c", probe]):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            lines.append((r.stdout or r.stderr).strip())
        except (OSError, subprocess.TimeoutExpired) as e:
            lines.append("%s: %s" % (cmd[0], e))
    if s.standin_dir:
        lines.append("timm: the stand-in %s/timm.py (a tiny CNN; nothing here is a measurement)"
                     % s.standin_dir)
    with open(os.path.join(s.out, "machine.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(s.out, "settings.json"), "w") as f:
        json.dump(s.describe(), f, indent=1)
    for line in lines:
        log(line)


def toml_string(text):
    return json.dumps(text)  # a TOML basic string is a JSON string for these characters


def toml_list(words):
    return "[" + ", ".join(toml_string(w) for w in words) + "]"


def defaults_block(s):
    env_items = {"PYTHONUNBUFFERED": "1"}
    if s.standin_dir:
        env_items["PYTHONPATH"] = s.standin_dir
    if s.device == "cpu":
        env_items["OMP_NUM_THREADS"] = "1"  # several CPU trainings beside each other
    return ("[defaults]\nworkdir = %s\nrestart = \"on-failure\"\nenv = { %s }\n\n"
            % (toml_string(REPO), ", ".join("%s = %s" % (k, toml_string(v))
                                             for k, v in env_items.items())))


# Hints as bench/serve_bench.py's kill_case gives resnet26, so that the auto
# policy starts the jobs beside each other at once on a fresh store (without
# them it would measure one before placing its siblings, and the fault could
# hit fewer neighbours).
HINTS = 'gpu_memory = "2GiB"\nsm_activity = 19\ngpu_util = 37\n'


def train_command(s, epochs, extra):
    return [s.python, os.path.join(HERE, "train.py"), "--model", s.model, "--dataset", "cifar10",
            "--batch-size", str(s.batch), "--epoch-samples", str(s.epoch_samples),
            "--epochs", str(epochs), "--device", s.device] + extra


def job_block(name, command, extra=""):
    return '[[job]]\nname = %s\ncommand = %s\n%s%s\n' % (toml_string(name), toml_list(command),
                                                        HINTS, extra)


def policy_args(s):
    if s.policy == "auto":
        return ["--policy", "auto"]
    # Pinned: every job of the fault case (3 + 1) on the one GPU at once.
    return ["--policy", "fixed", "--max-per-gpu", "4"]


def epoch_counts(logs_dir):
    """name -> epochs printed so far, over its attempts (progress lines)."""
    counts = {}
    for path in glob.glob(os.path.join(logs_dir, "**", "*.log"), recursive=True):
        m = re.match(r"\d+-(.+?)(?:\.attempt\d+)?\.log$", os.path.basename(path))
        if not m:
            continue
        try:
            with open(path, errors="replace") as f:
                n = sum(1 for line in f if ENDED_AT.match(line.strip()))
        except OSError:
            continue
        counts[m.group(1)] = counts.get(m.group(1), 0) + n
    return counts


def colo_run(s, case_dir, job_text, timeout_s, sim_devices=1, label=""):
    """One `colo run --mechanism mps` on a fresh store and a fresh, short
    COLO_HOME (its MPS state; removed after, its daemon's logs kept). Writes
    jobs.toml, colo.stdout.txt, colo.stderr.txt, colo.db, logs/, show.json,
    mps-log/ and run.json in case_dir. Returns run.json's dict."""
    shutil.rmtree(case_dir, ignore_errors=True)
    os.makedirs(case_dir)
    job_file = os.path.join(case_dir, "jobs.toml")
    with open(job_file, "w") as f:
        f.write(job_text)
    db = os.path.join(case_dir, "colo.db")
    logs = os.path.join(case_dir, "logs")
    home = tempfile.mkdtemp(prefix="cf-", dir="/tmp")
    assert len(os.path.join(home, "mps")) <= MAX_MPS_STATE_DIR
    cmd = [s.colo, "run", job_file, "--mechanism", "mps", "--plain", "--local", "--grace", "5s",
           "--db", db, "--logs", logs] + policy_args(s)
    if s.backend == "sim":
        cmd += ["--backend", "sim", "--sim-devices", str(sim_devices)]
    elif sim_devices == 1 and os.environ.get("GPUS"):
        cmd += ["--gpus", os.environ["GPUS"]]  # one-GPU cases on a machine with more
    log("%s: $ COLO_HOME=%s %s" % (label, home, " ".join(cmd)))
    started = time.time()
    timed_out = False
    with open(os.path.join(case_dir, "colo.stdout.txt"), "w") as out, \
            open(os.path.join(case_dir, "colo.stderr.txt"), "w") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=case_dir,
                                env=dict(os.environ, COLO_HOME=home), start_new_session=True)
        next_note = started + 10
        while proc.poll() is None:
            time.sleep(0.5)
            now = time.time()
            if now - started > timeout_s:
                timed_out = True
                log("%s: colo still running after %.0f s: SIGTERM (CASE_TIMEOUT_S)"
                    % (label, timeout_s))
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                break
            if now >= next_note:
                counts = epoch_counts(logs)
                log("%s: %.0f s, epochs so far: %s" % (
                    label, now - started,
                    ", ".join("%s %d" % kv for kv in sorted(counts.items())) or "none yet"))
                next_note = now + 10
    ended = time.time()
    show = subprocess.run([s.colo, "show", "--json", "--db", db], capture_output=True, text=True,
                          env=dict(os.environ, COLO_HOME=home))
    with open(os.path.join(case_dir, "show.json"), "w") as f:
        f.write(show.stdout or show.stderr)
    # The MPS daemon's own logs (control.log, server.log), then the home goes.
    for path in glob.glob(os.path.join(home, "mps", "**", "*.log"), recursive=True):
        dest = os.path.join(case_dir, "mps-log", os.path.relpath(path, os.path.join(home, "mps")))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        try:
            shutil.copy(path, dest)
        except OSError:
            pass
    shutil.rmtree(home, ignore_errors=True)
    # The jobs' checkpoints (--checkpoint-every-epoch: over 100 MB a job) are
    # of no use to the check; the logs and the store stay.
    for path in glob.glob(os.path.join(case_dir, "**", "*.pt"), recursive=True):
        os.remove(path)
    result = {"command": cmd, "exit_code": proc.returncode, "timed_out": timed_out,
              "started": started, "ended": ended, "seconds": round(ended - started, 3)}
    with open(os.path.join(case_dir, "run.json"), "w") as f:
        json.dump(result, f, indent=1)
    log("%s: colo exited %s after %.1f s%s" % (label, proc.returncode, ended - started,
                                               " (timed out)" if timed_out else ""))
    return result


def check(s, case, case_dir):
    """bench/check-faults.py on case_dir; its output to case_dir/summary.txt."""
    cmd = [sys.executable, os.path.join(HERE, "check-faults.py"), case, case_dir,
           "--stall-floor-s", str(s.stall_floor_s), "--makespan-ratio", str(s.makespan_ratio),
           "--assert-pattern", s.assert_pattern]
    log("$ " + " ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    text = r.stdout + (("\n" + r.stderr) if r.stderr else "")
    with open(os.path.join(case_dir, "summary.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    sys.stdout.flush()
    return r.returncode


# ---- the cases ------------------------------------------------------------------

def neighbour_assert(s, budget_left=None):
    """REPEATS x (baseline, fault). budget_left: a function giving the seconds
    left to this case, or None (no limit)."""
    case_dir = os.path.join(s.out, "neighbour-assert")
    shutil.rmtree(case_dir, ignore_errors=True)
    os.makedirs(case_dir)
    healthy = "".join(
        job_block("healthy-%d" % i, train_command(s, s.epochs, ["--checkpoint-every-epoch"]))
        for i in (1, 2, 3))
    buggy = job_block("buggy", train_command(
        s, s.epochs, ["--bad-labels-at-epoch", str(s.bad_epoch)]))
    baseline_text = defaults_block(s) + healthy
    fault_text = defaults_block(s) + healthy + buggy
    notes = []
    longest = 0.0
    done = 0
    for r in range(1, s.repeats + 1):
        if budget_left is not None and done > 0 and budget_left() < longest * 1.1:
            notes.append("ran %d of %d repeats: the next (about %.0f s) would not fit "
                         "TIME_BUDGET_S (%.0f s left)" % (done, s.repeats, longest, budget_left()))
            log("neighbour-assert: " + notes[-1])
            break
        t = time.time()
        log("=== neighbour-assert repeat %d/%d: baseline (3 healthy jobs, %d epochs)"
            % (r, s.repeats, s.epochs))
        colo_run(s, os.path.join(case_dir, "r%d" % r, "baseline"), baseline_text,
                 s.case_timeout_s, label="r%d baseline" % r)
        log("=== neighbour-assert repeat %d/%d: fault (+ a job with bad labels at epoch %d)"
            % (r, s.repeats, s.bad_epoch))
        colo_run(s, os.path.join(case_dir, "r%d" % r, "fault"), fault_text, s.case_timeout_s,
                 label="r%d fault" % r)
        longest = max(longest, time.time() - t)
        done += 1
    with open(os.path.join(case_dir, "notes.txt"), "w") as f:
        f.write("".join(n + "\n" for n in notes))
    return check(s, "neighbour-assert", case_dir)


def stall(s):
    case_dir = os.path.join(s.out, "stall")
    log("=== stall: one job stops reporting after epoch %d of %d (no stall_timeout: colo's own "
        "bound)" % (s.stall_after, s.stall_epochs))
    text = defaults_block(s) + job_block("stalls", train_command(
        s, s.stall_epochs, ["--stall-after-epoch", str(s.stall_after)]))
    colo_run(s, os.path.join(case_dir), text, s.stall_case_timeout_s, label="stall")
    return check(s, "stall", case_dir)


def gang_rank_exit(s):
    case_dir = os.path.join(s.out, "gang-rank-exit")
    log("=== gang-rank-exit: a 2-rank DDP job whose rank 1 exits in epoch %d, once"
        % s.exit_epoch)
    command = s.launcher.split() + [
        "--nproc_per_node", "{gpus}", "--master_port", "{port}", os.path.join(HERE, "train.py"),
        "--model", s.gang_model, "--dataset", "cifar10", "--batch-size", str(s.batch),
        "--epoch-samples", str(s.epoch_samples), "--epochs", str(s.gang_epochs),
        "--device", s.device, "--exit-at-epoch", str(s.exit_epoch), "--exit-rank", "1"]
    text = defaults_block(s) + job_block("gang", command, "gpus = 2\n")
    colo_run(s, case_dir, text, s.case_timeout_s, sim_devices=2, label="gang")
    return check(s, "gang-rank-exit", case_dir)


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Issue 31's fault benchmark (see the module's docstring; bench/faults.sh).")
    p.add_argument("case", choices=["neighbour-assert", "stall", "gang-rank-exit", "all"])
    p.add_argument("out", help="results directory")
    p.add_argument("--repeats", type=int, default=None, help="neighbour-assert repeats "
                   "(default REPEATS, else 5)")
    a = p.parse_args(argv)
    s = Settings(os.path.abspath(a.out), a.repeats)
    if not os.access(s.colo, os.X_OK):
        print("faults: no colo binary at %s (set COLO)" % s.colo, file=sys.stderr)
        return 2
    if s.repeats < 1:
        print("faults: --repeats must be at least 1", file=sys.stderr)
        return 2
    prepare(s)
    codes = {}
    if a.case == "neighbour-assert":
        codes[a.case] = neighbour_assert(s)
    elif a.case == "stall":
        codes[a.case] = stall(s)
    elif a.case == "gang-rank-exit":
        codes[a.case] = gang_rank_exit(s)
    else:
        # The stall case's length: start-up, the stalled epochs, colo's bound
        # (3 epochs + the floor), then the retry: about this much.
        stall_estimate = s.stall_floor_s + 60 + 2.0 * s.stall_epochs * 2
        left = lambda: s.time_budget_s - (time.time() - T0) - stall_estimate
        codes["neighbour-assert"] = neighbour_assert(s, left)
        codes["stall"] = stall(s)
    total = time.time() - T0
    lines = ["faults %s: backend %s%s, total %.1f s" % (
        a.case, s.backend, " (SIMULATED: nothing here is a GPU measurement)"
        if s.backend == "sim" else "", total)]
    lines += ["%s %s (%s/summary.txt)" % ("PASS" if c == 0 else "FAIL", k,
                                          os.path.join(s.out, k)) for k, c in codes.items()]
    if a.case == "all":
        notes = os.path.join(s.out, "neighbour-assert", "notes.txt")
        if os.path.exists(notes):
            lines += ["note: " + n for n in open(notes).read().splitlines()]
    ok = all(c == 0 for c in codes.values())
    lines.append("result: %s" % ("PASS" if ok else "FAIL"))
    with open(os.path.join(s.out, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
