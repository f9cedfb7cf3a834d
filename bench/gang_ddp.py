#!/usr/bin/env python3
"""A gang beside one-GPU jobs on two GPUs (issue 23; bench/gang-ddp.sh runs it).

One data-parallel training (bench/train.py under torchrun: GANG_MODEL, one
rank per GPU, NCCL) and SINGLES one-GPU trainings (SINGLE_MODEL), run twice:

  alone     one after another, each by its own `colo run --mechanism
            exclusive` (the gang on both GPUs, then each one-GPU job)
  together  one `colo run --mechanism mps --policy fixed --max-per-gpu K`
            (MECHANISM: naive for a check without MPS):
            the gang's ranks and the one-GPU jobs share both GPUs
  cold      issue 34: one `colo run` with colo's defaults (auto over MPS) and
            no memory hints, on a fresh store: nothing is known of any job
  warm      the same again on cold's store, which now knows every job

PASSES (default alone,together) picks them, in that order.

While `together` runs, `nvidia-smi --query-compute-apps` is sampled every
second (which processes use which GPU). Then bench/check-gang.py recomputes
every figure from the jobs' own logs and that sampling alone: the gang's
steady rate together and alone, the makespan of both schedules, and whether
both GPUs held a rank of the gang and a one-GPU job at once. colo's own
figures (`colo show --json`) go beside them.

Settings come from the environment (see bench/gang-ddp.sh).
"""

import json
import os
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def env(name, default):
    return os.environ.get(name, default)


class Settings:
    def __init__(self, out):
        self.out = out
        self.colo = os.path.abspath(env("COLO", os.path.join(ROOT, "build-release", "colo")))
        self.python = env("PYTHON", sys.executable)
        self.backend = env("BACKEND", "nvml")
        self.device = env("DEVICE", "cuda")
        self.gang_model = env("GANG_MODEL", "resnet50")
        self.single_model = env("SINGLE_MODEL", "resnet26")
        self.singles = int(env("SINGLES", "4"))
        self.dataset = env("DATASET", "cifar10")
        self.batch = env("BATCH", "128")
        self.epochs = env("EPOCHS", "6")
        self.single_epochs = env("SINGLE_EPOCHS", "6")
        self.epoch_samples = env("EPOCH_SAMPLES", "40000")
        self.gang_memory = env("GANG_MEMORY", "12GiB")
        self.single_memory = env("SINGLE_MEMORY", "6GiB")
        self.per_gpu = env("MAX_PER_GPU", "3")
        self.mechanism = env("MECHANISM", "mps")
        self.launcher = env("LAUNCHER", "%s -m torch.distributed.run --standalone"
                            % self.python).split()


def toml_list(words):
    return "[" + ", ".join(json.dumps(w) for w in words) + "]"


def jobs(s, hints=True):
    """name -> its [[job]] table (without gpu_memory hints: what a newcomer writes)."""
    train = os.path.join(HERE, "train.py")
    common = ["--dataset", s.dataset, "--batch-size", s.batch, "--epoch-samples",
              s.epoch_samples, "--device", s.device]
    gang = s.launcher + ["--nproc_per_node", "{gpus}", "--master_port", "{port}", train,
                         "--model", s.gang_model, "--epochs", s.epochs] + common
    def hint(memory):
        return 'gpu_memory = "%s"\n' % memory if hints else ""
    out = {"ddp": '[[job]]\nname = "ddp"\ngpus = 2\n%scommand = %s\n'
           % (hint(s.gang_memory), toml_list(gang))}
    for i in range(s.singles):
        cmd = [s.python, train, "--model", s.single_model, "--epochs", s.single_epochs] + common
        out["single-%d" % i] = ('[[job]]\nname = "single-%d"\n%scommand = %s\n'
                                % (i, hint(s.single_memory), toml_list(cmd)))
    return out


def colo_run(s, name, text, extra, db, directory, file_dir=None):
    """`colo run` of `text` as FILE_DIR/NAME.toml (default DIRECTORY), from FILE_DIR,
    its logs under DIRECTORY: one FILE_DIR for two passes gives their jobs one
    signature (a job's signature holds its working directory)."""
    os.makedirs(directory, exist_ok=True)
    file_dir = file_dir or directory
    os.makedirs(file_dir, exist_ok=True)
    path = os.path.join(file_dir, name + ".toml")
    with open(path, "w") as f:
        f.write(text)
    cmd = [s.colo, "run", path, "--db", db, "--logs", os.path.join(directory, "logs"),
           "--plain"] + extra + (["--backend", "sim", "--sim-devices", "2"]
                                 if s.backend == "sim" else [])
    print("+ " + " ".join(cmd), flush=True)
    t0 = time.time()
    with open(os.path.join(directory, name + ".colo.txt"), "w") as log:
        code = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=file_dir)
    return code, time.time() - t0


class AppsSampler:
    """nvidia-smi's compute processes every second: time, pid, GPU, memory."""

    def __init__(self, path):
        self.proc = None
        if shutil.which("nvidia-smi") is None:
            return
        self.file = open(path, "w")
        self.proc = subprocess.Popen(
            ["nvidia-smi", "--query-compute-apps=timestamp,pid,gpu_uuid,used_memory,process_name",
             "--format=csv,noheader", "-l", "1"], stdout=self.file, stderr=subprocess.STDOUT)

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait()
            self.file.close()


def remove_store(db):
    """A store an earlier run left in the results directory is not cold."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)


def gpu_uuids():
    if shutil.which("nvidia-smi") is None:
        return {}
    out = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout
    return {u.strip(): int(i) for i, u in (line.split(",") for line in out.splitlines() if line)}


def main():
    if len(sys.argv) != 2:
        print("usage: bench/gang-ddp.sh RESULTS_DIR", file=sys.stderr)
        return 2
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    s = Settings(out)
    if not os.access(s.colo, os.X_OK):
        print("gang-ddp: no colo binary at %s (set COLO)" % s.colo, file=sys.stderr)
        return 2
    os.environ["COLO_HOME"] = os.path.join(out, "home")
    with open(os.path.join(out, "gpus.json"), "w") as f:
        json.dump(gpu_uuids(), f)
    table = jobs(s)
    passes = env("PASSES", "alone,together").split(",")
    codes = {}
    # Alone, one after another: a store each, so nothing learned carries over.
    if "alone" in passes:
        for name, text in table.items():
            db = os.path.join(out, "alone", name + ".db")
            remove_store(db)
            codes["alone " + name], _ = colo_run(s, name, text, ["--mechanism", "exclusive"], db,
                                                 os.path.join(out, "alone", name))

    def shared(name, text, extra, db, file_dir=None):
        if name != "warm":
            remove_store(db)
        apps = AppsSampler(os.path.join(out, name + "-apps.csv"))
        directory = os.path.join(out, name)
        codes[name], _ = colo_run(s, "all", text, extra, db, directory, file_dir)
        apps.stop()
        show = subprocess.run([s.colo, "show", "--db", db, "--json"],
                              capture_output=True, text=True)
        with open(os.path.join(directory, "show.json"), "w") as f:
            f.write(show.stdout)

    # Together, on a fresh store.
    if "together" in passes:
        shared("together", "\n".join(table.values()),
               ["--mechanism", s.mechanism, "--policy", "fixed", "--max-per-gpu", s.per_gpu],
               os.path.join(out, "together", "colo.db"))
    # Cold: colo's defaults, no hints, a fresh store; warm: the same on that store.
    newcomers = "\n".join(jobs(s, hints=False).values())
    for name in ("cold", "warm"):
        if name in passes:
            shared(name, newcomers, [], os.path.join(out, "cold", "colo.db"),
                   os.path.join(out, "newcomers"))
    with open(os.path.join(out, "exit-codes.json"), "w") as f:
        json.dump(codes, f, indent=1)
    check = subprocess.run([s.python, os.path.join(HERE, "check-gang.py"), out],
                           capture_output=True, text=True)
    sys.stdout.write(check.stdout)
    sys.stderr.write(check.stderr)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(check.stdout)
    return 0 if all(c == 0 for c in codes.values()) and check.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
