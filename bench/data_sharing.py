#!/usr/bin/env python3
"""Shared data loading against independent PyTorch DataLoaders (issue 13's
benchmark; bench/data-sharing.sh runs it). For K = 1, 3, 7 trainers (a timm
model on crops of a generated JPEG dataset), run under `colo run`:

  independent  each trainer has its own DataLoader whose workers are pinned to
               the data-loading CPUs (ceil(budget / K) workers each)
  shared       one colo loader ([data.NAME], threads = the budget's CPUs,
               pinned to them) feeds every trainer (python/colo_data.py)
  colo-each    K colo loaders, one per trainer ([data.NAME-i], ceil(budget / K)
               threads each, all pinned to the budget's CPUs): colo's decoder
               without sharing, so that shared / colo-each is the gain of
               sharing alone and colo-each / independent that of the decoder

The trainers' own processes run on the other CPUs in both cases. Reported
per configuration, each figure beside an independent check: aggregate
images/s (trainers' logs | colo's store), CPU cores spent decoding (the
decoding processes' CPU time in the window | /proc/stat busy time of the
budget's CPUs; and colo's loader record over the whole run), GPU SM activity
(colo's samples | nvidia-smi utilization), and the share of time trainers
waited for data (the trainer's stopwatch around next() | colo_data's own
count, which is what colo records). Then the target: at the largest K
the shared loader gives >= 1.5x the independent loaders' images/s and no
trainer waits for data more than 10% of its window.

Settings come from the environment (see bench/data-sharing.sh).
"""

import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


MODES = ("independent", "colo-each", "shared")


def env(name, default):
    return os.environ.get(name, default)


def cpu_count_of(text):
    n = 0
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


class Settings:
    def __init__(self, out):
        n = os.cpu_count() or 1
        self.out = out
        self.colo = os.path.abspath(env("COLO", os.path.join(ROOT, "build-release", "colo")))
        self.python = env("PYTHON", sys.executable)
        self.device = env("DEVICE", "cuda")
        self.backend = env("BACKEND", "nvml")
        self.model = env("MODEL", "resnet50")
        self.ks = [int(k) for k in env("KS", "1 3 7").split()]
        self.images = int(env("IMAGES", "10000"))
        self.image_size = int(env("IMAGE_SIZE", "400"))
        self.classes = int(env("CLASSES", "100"))
        self.crop = int(env("CROP", "224"))
        self.batch = int(env("BATCH", "64"))
        self.loader_cpus = env("LOADER_CPUS", "0-3" if n >= 8 else "0")
        self.trainer_cpus = env("TRAINER_CPUS", ("4-%d" % (n - 1)) if n >= 8 else "0-%d" % (n - 1))
        self.warmup = float(env("WARMUP", "8"))
        self.duration = float(env("DURATION", "25"))
        self.tail = float(env("TAIL", "2"))
        self.colo_args = env("COLO_ARGS", "").split()
        self.data = env("DATA_DIR", os.path.join(env("TMPDIR", "/tmp"), "colo-data-sharing-%dx%d"
                                                 % (self.images, self.image_size)))
        self.budget = cpu_count_of(self.loader_cpus)
        # The shared loader's ring: colo's default (docs/job-file.md) unless RING is set.
        self.ring = int(env("RING", "0")) or None
        self.modes = [m for m in env("MODES", " ".join(MODES)).split()]
        unknown = set(self.modes) - set(MODES)
        if unknown:
            raise SystemExit("MODES: unknown %s (known: %s)" % (sorted(unknown), " ".join(MODES)))


def run(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def make_dataset(s):
    marker = os.path.join(s.data, ".complete")
    if not os.path.exists(marker):
        shutil.rmtree(s.data, ignore_errors=True)
        run([s.colo, "data", "make-synthetic", s.data, "--images", str(s.images), "--size",
             str(s.image_size), "--classes", str(s.classes)])
        open(marker, "w").close()
    # Into the page cache, so both ways read from memory.
    total = 0
    for d, _, files in os.walk(s.data):
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                total += len(fh.read())
    print("dataset: %s, %d images, %.0f MB (cached)" % (s.data, s.images, total / 1e6), flush=True)


class Dmon:
    """nvidia-smi dmon's utilization column, each line stamped with our clock."""

    def __init__(self, path):
        self.samples = []
        self.proc = None
        if shutil.which("nvidia-smi") is None:
            return
        self.log = open(path, "w")
        self.proc = subprocess.Popen(["nvidia-smi", "dmon", "-s", "u", "-d", "1"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        column = None
        for line in self.proc.stdout:
            self.log.write("%.3f %s" % (time.time(), line))
            fields = line.split()
            if line.startswith("#") and "sm" in fields:
                column = fields.index("sm") - 1  # '#' is a field of its own
            elif column is not None and fields and fields[0] == "0":
                try:
                    self.samples.append((time.time(), float(fields[column])))
                except (ValueError, IndexError):
                    pass

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait()
            self.thread.join(5)
            self.log.close()

    def mean(self, start, end):
        v = [x for t, x in self.samples if start <= t <= end]
        return sum(v) / len(v) if v else None


def job_file(s, k, mode, directory):
    trainer = [s.python, os.path.join(HERE, "data_train.py"), "--model", s.model,
               "--batch-size", str(s.batch), "--device", s.device, "--peers", str(k),
               "--barrier", os.path.join(directory, "barrier"), "--warmup", str(s.warmup),
               "--duration", str(s.duration), "--tail", str(s.tail),
               "--budget-cpus", s.loader_cpus]
    lines = []
    # The dataset each trainer reads: one for all (shared) or one each.
    datasets = {"shared": ["bench"] * k, "colo-each": ["bench-%d" % i for i in range(k)]}
    if mode in datasets:
        threads = s.budget if mode == "shared" else max(1, math.ceil(s.budget / k))
        # colo-each: RING/K each, else colo's default for one consumer.
        ring = s.ring if mode == "shared" or not s.ring else max(64 << 20, s.ring // k)
        for name in sorted(set(datasets[mode])):
            lines += ['[data.%s]' % name, 'path = "%s"' % s.data, 'size = %d' % s.crop,
                      'threads = %d' % threads, 'cpus = "%s"' % s.loader_cpus]
            lines += (['ring = %d' % ring] if ring else []) + ['']
        trainer += ["--loader", "shared"]
    else:
        workers = max(1, math.ceil(s.budget / k))
        trainer += ["--loader", "torch", "--data", s.data, "--size", str(s.crop),
                    "--workers", str(workers), "--worker-cpus", s.loader_cpus]
    for i in range(k):
        cmd = ["taskset", "-c", s.trainer_cpus] + trainer + [
            "--log", os.path.join(directory, "trainer-%d.json" % i)]
        lines += ['[[job]]', 'name = "trainer-%d"' % i,
                  'command = [%s]' % ", ".join(json.dumps(c) for c in cmd)]
        if mode in datasets:
            lines.append('dataset = "%s"' % datasets[mode][i])
        lines.append('')
    path = os.path.join(directory, "jobs.toml")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def colo_figures(db, run_id, start, end):
    """From colo's store: aggregate step rate and mean SM activity in [start, end]."""
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT e.job_id, e.time_ms, e.samples FROM job_events e JOIN jobs j ON j.id = e.job_id "
        "WHERE j.run_id = ? AND e.kind = 'step' AND e.samples IS NOT NULL ORDER BY e.time_ms",
        (run_id,)).fetchall()
    per_job = {}
    for job, t, n in rows:
        per_job.setdefault(job, []).append((t, n))
    rate = 0.0
    for events in per_job.values():
        if len(events) >= 2 and events[-1][0] > events[0][0]:
            rate += sum(n for _, n in events[1:]) * 1000.0 / (events[-1][0] - events[0][0])
    sm = con.execute("SELECT avg(sm_active_pct) FROM device_samples WHERE run_id = ? AND "
                     "time_ms BETWEEN ? AND ?", (run_id, int(start * 1000), int(end * 1000))
                     ).fetchone()[0]
    con.close()
    return (rate if per_job else None), sm


def run_config(s, k, mode, db):
    directory = os.path.join(s.out, "k%d-%s" % (k, mode))
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    jobs = job_file(s, k, mode, directory)
    dmon = Dmon(os.path.join(directory, "nvidia-smi-dmon.txt"))
    # The K trainers meet at a barrier, so all must run at once: the fixed
    # policy at degree K (the auto one may hold one back, e.g. for the host
    # CPUs of its loader).
    cmd = [s.colo, "run", jobs, "--db", db, "--logs", os.path.join(directory, "logs"), "--plain",
           "--policy", "fixed", "--max-per-gpu", str(k)] \
        + (["--backend", "sim"] if s.backend == "sim" else []) + s.colo_args
    started = time.time()
    with open(os.path.join(directory, "colo-run.txt"), "w") as out:
        print("=== K=%d %s: %s" % (k, mode, " ".join(cmd)), flush=True)
        code = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
    dmon.stop()
    show = json.loads(subprocess.run([s.colo, "show", "--db", db, "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    with open(os.path.join(directory, "show.json"), "w") as f:
        json.dump(show, f, indent=1)
    logs = []
    for i in range(k):
        path = os.path.join(directory, "trainer-%d.json" % i)
        if os.path.exists(path):
            with open(path) as f:
                logs.append(json.load(f))
    r = {"k": k, "mode": mode, "exit": code, "trainers_logged": len(logs),
         "seconds": time.time() - started, "run_id": show["run"]["id"]}
    if len(logs) < k:
        r["error"] = "only %d of %d trainers left a log (see %s)" % (len(logs), k, directory)
        return r
    start = max(l["window_start"] for l in logs)
    end = min(l["window_end"] for l in logs)
    window = sum(l["window_s"] for l in logs) / k
    r["img_per_s"] = sum(l["img_per_s"] for l in logs)
    r["img_per_s_colo"], r["sm_active_pct_colo"] = colo_figures(db, r["run_id"], start, end)
    r["gpu_util_pct_nvidia_smi"] = dmon.mean(start, end)
    if mode == "shared":  # one loader process: every trainer saw the same one
        r["decode_cores"] = logs[0]["decoder_cpu_s"] / logs[0]["window_s"]
    else:
        r["decode_cores"] = sum(l["decoder_cpu_s"] for l in logs) / window
    r["budget_busy_cores"] = logs[0]["budget_busy_s"] / logs[0]["window_s"]
    r["all_busy_cores"] = logs[0]["all_busy_s"] / logs[0]["window_s"]
    r["wait_pct_max"] = 100 * max(l["wait_fraction"] for l in logs)
    if mode != "independent":
        r["wait_pct_max_client"] = 100 * max(l["client_wait_s"] / l["window_s"] for l in logs)
    r["wait_pct_mean"] = 100 * sum(l["wait_fraction"] for l in logs) / k
    r["loader"] = logs[0]["kind"]
    loaders = show.get("data_loaders") or []
    if loaders:
        if all(l.get("cpu_ms") is not None and l.get("wall_ms") for l in loaders):
            r["loader_cores_colo_run_avg"] = sum(l["cpu_ms"] / l["wall_ms"] for l in loaders)
        consumers = [c for l in loaders for c in l["consumers"]]
        shares = [100.0 * c["wait_ms"] / c["duration_ms"] for c in consumers
                  if c.get("duration_ms")]
        r["wait_pct_max_colo_whole_run"] = max(shares) if shares else None
        r["detached"] = [c["detached"] for c in consumers if c["detached"]]
    return r


def fmt(v, spec="%.0f"):
    return "-" if v is None else spec % v


def gain(by, k, over, under):
    """'2.00x (2.00x)': the ratio of two configurations' images/s, by the
    trainers' logs and by colo's store; '-' where either did not run."""
    a, b = by.get((k, over), {}), by.get((k, under), {})
    if not a.get("img_per_s") or not b.get("img_per_s"):
        return "-"
    check = (a["img_per_s_colo"] / b["img_per_s_colo"]
             if a.get("img_per_s_colo") and b.get("img_per_s_colo") else None)
    return "%.2fx (%s)" % (a["img_per_s"] / b["img_per_s"], fmt(check, "%.2fx"))


def report(s, results):
    lines = [
        "Shared data loading vs independent DataLoaders: %s, batch %d, %dpx crops of %d JPEGs "
        "(~%dpx), device %s, backend %s" % (s.model, s.batch, s.crop, s.images, s.image_size,
                                          s.device, s.backend),
        "data loading on CPUs %s (%d cores); trainers on CPUs %s. Each figure | its check; "
        "all over the trainers' common window." % (s.loader_cpus, s.budget, s.trainer_cpus),
        "img/s: trainers' logs | colo's store (step events). decode cores: the decoding "
        "processes' CPU time | /proc/stat busy time of the data-loading CPUs. colo loader "
        "cores: colo show, whole run. SM%: colo's samples | nvidia-smi utilization. wait%: "
        "trainer's stopwatch around next() | colo_data's own count (colo loaders).",
        "",
        "trainer cores: /proc/stat busy time of every CPU outside the data-loading ones (the "
        "trainers are pinned to %d of them; colo itself runs there too)." %
        cpu_count_of(s.trainer_cpus),
        "",
        "%-3s %-12s %19s %21s %14s %21s %23s %17s" % (
            "K", "loader", "img/s train|colo", "decode cores proc|os", "trainer cores",
            "colo loader cores", "SM% colo|util% smi", "wait% max tr|lib"),
    ]
    for r in results:
        if "error" in r:
            lines.append("%-3d %-12s %s" % (r["k"], r["mode"], r["error"]))
            continue
        lines.append("%-3d %-12s %19s %21s %14s %21s %23s %17s" % (
            r["k"], r["mode"],
            "%s | %s" % (fmt(r["img_per_s"]), fmt(r["img_per_s_colo"])),
            "%s | %s" % (fmt(r["decode_cores"], "%.2f"), fmt(r["budget_busy_cores"], "%.2f")),
            fmt(r["all_busy_cores"] - r["budget_busy_cores"], "%.2f"),
            fmt(r.get("loader_cores_colo_run_avg"), "%.2f"),
            "%s | %s" % (fmt(r["sm_active_pct_colo"], "%.1f"),
                         fmt(r["gpu_util_pct_nvidia_smi"], "%.1f")),
            "%s | %s" % (fmt(r["wait_pct_max"], "%.1f"), fmt(r.get("wait_pct_max_client"), "%.1f"))))
    lines.append("")
    lines.append("decoding CPU per delivered image (decode cores / img/s): " + ", ".join(
        "K=%d %s %.2f ms" % (r["k"], r["mode"], 1000 * r["decode_cores"] / r["img_per_s"])
        for r in results if r.get("img_per_s")))
    k = max(s.ks)
    by = {(r["k"], r["mode"]): r for r in results}
    shared, indep = by.get((k, "shared"), {}), by.get((k, "independent"), {})
    lines.append("")
    lines.append("the gain, split (images/s; colo's store in brackets): shared/independent = "
                 "decoder (colo-each/independent) x sharing (shared/colo-each)")
    for kk in s.ks:
        lines.append("  K=%d: %s = %s x %s" % (
            kk, gain(by, kk, "shared", "independent"), gain(by, kk, "colo-each", "independent"),
            gain(by, kk, "shared", "colo-each")))
    lines.append("")
    if "img_per_s" in shared and "img_per_s" in indep and indep["img_per_s"] > 0:
        ratio = shared["img_per_s"] / indep["img_per_s"]
        check = (shared["img_per_s_colo"] / indep["img_per_s_colo"]
                 if shared.get("img_per_s_colo") and indep.get("img_per_s_colo") else None)
        ok_ratio = ratio >= 1.5
        ok_wait = shared["wait_pct_max"] <= 10.0
        lines.append("target at K=%d: shared/independent images/s = %.2fx (colo's store: %s) "
                     "-> %s (>= 1.5x)" % (k, ratio, fmt(check, "%.2fx"),
                                          "MET" if ok_ratio else "NOT MET"))
        lines.append("target at K=%d: most a trainer waited for data = %.1f%% of its window "
                     "(colo_data's own count: %s%%; colo show, whole run: %s%%) -> %s (<= 10%%)"
                     % (k, shared["wait_pct_max"], fmt(shared.get("wait_pct_max_client"), "%.1f"),
                        fmt(shared.get("wait_pct_max_colo_whole_run"), "%.1f"),
                        "MET" if ok_wait else "NOT MET"))
        if shared.get("detached"):
            lines.append("detached consumers: %s" % shared["detached"])
    else:
        lines.append("target at K=%d: not evaluated (a configuration failed; see above)" % k)
    if s.backend == "sim":
        lines.append("SIMULATED GPU (backend sim): SM activity is colo's simulation, not a "
                     "measurement")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 2:
        print("usage: bench/data-sharing.sh RESULTS_DIR", file=sys.stderr)
        return 2
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    s = Settings(out)
    if not os.access(s.colo, os.X_OK):
        print("data-sharing: no colo binary at %s (set COLO)" % s.colo, file=sys.stderr)
        return 2
    os.environ["COLO_HOME"] = os.path.join(out, "home")
    db = os.path.join(out, "colo.db")
    per_config = s.warmup + s.duration + s.tail + 25
    print("data-sharing: %d configurations, about %.0f s each; results in %s"
          % (len(s.modes) * len(s.ks), per_config, out), flush=True)
    make_dataset(s)
    results = []
    for k in s.ks:
        for mode in s.modes:
            r = run_config(s, k, mode, db)
            print(json.dumps(r), flush=True)
            results.append(r)
    text = report(s, results)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"settings": {k: v for k, v in vars(s).items() if k != "out"},
                   "results": results}, f, indent=1)
    print(text, end="")
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
