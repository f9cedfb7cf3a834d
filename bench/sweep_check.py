#!/usr/bin/env python3
"""Independent checks for bench/sweep-grids.sh, with no colo code.

    sweep_check.py makespan LOG...
        The makespan of the jobs whose logs are given, from the logs alone:
        the latest "ended at" of any epoch line minus the earliest "started
        at" line (bench/train.py and bench/sim_train.py print both), and the
        epochs each log completed. Prints one JSON object.

    sweep_check.py estimates DB RUN_ID [--limit 0.15]
        The peak-memory estimates the auto policy placed the jobs of run
        RUN_ID by (the "estimate" job events colo recorded) beside the peak
        memory NVML showed for each job's processes (summed per sampling
        instant, from the raw process samples) and what the job's allocator
        reported in its log ("max memory reserved"). Reads the SQLite store
        directly. Exit 1 when an estimate misses the NVML peak by more than
        --limit or a job did not end ok on its first attempt.

    sweep_check.py sample CSV
        Samples every GPU with nvidia-smi every 500 ms until killed: one line
        "time,gpu,utilization %,memory used MiB" each (time: seconds since the
        epoch, this machine's clock, as the jobs' logs use).

    sweep_check.py idle CSV LOG...
        From those samples and the jobs' logs alone: while the grid still had
        jobs that had not started (from the first "started at" to the last),
        how long each GPU sat idle (no utilization and no more memory used
        than when the run began), and when each first became busy. Exit 1 when
        a GPU was not busy within the first minute or sat idle over a tenth
        of that time once it had been busy.
"""

import argparse
import json
import re
import sqlite3
import sys

STARTED = re.compile(r"started at (?P<time>\d+(?:\.\d+)?)")
ENDED = re.compile(r"^epoch (?P<epoch>\d+)(?:/\d+)?\b.*\bended at (?P<time>\d+(?:\.\d+)?)")
RESERVED = re.compile(r"max memory reserved (?P<mib>\d+(?:\.\d+)?) MiB")


def makespan(logs):
    starts, ends, epochs = [], [], {}
    for path in logs:
        count = 0
        with open(path, errors="replace") as f:
            for line in f:
                m = STARTED.search(line)
                if m:
                    starts.append(float(m.group("time")))
                m = ENDED.search(line)
                if m:
                    ends.append(float(m.group("time")))
                    count = max(count, int(m.group("epoch")))
        epochs[path] = count
    if not starts or not ends:
        print(json.dumps({"error": "no 'started at' or no epoch lines in the logs"}))
        return 2
    print(json.dumps({"makespan_s": max(ends) - min(starts), "jobs": len(logs),
                      "epochs": sorted(set(epochs.values()))}))
    return 0


def reserved_mib(log_path):
    try:
        with open(log_path, errors="replace") as f:
            for line in f:
                m = RESERVED.search(line)
                if m:
                    return float(m.group("mib"))
    except OSError:
        pass
    return None


def estimates(db_path, run_id, limit):
    db = sqlite3.connect(db_path)
    jobs = db.execute("SELECT id, name, state, log_path FROM jobs WHERE run_id = ? ORDER BY id",
                      (run_id,)).fetchall()
    print("%-28s %-6s %8s %14s %11s %14s %12s %8s" % (
        "job", "state", "attempts", "estimate MiB", "+- (fit)", "NVML peak MiB", "job says MiB",
        "error"))
    worst, bad, checked = 0.0, False, 0
    for job_id, name, state, log_path in jobs:
        events = db.execute("SELECT kind, metrics_json FROM job_events WHERE job_id = ? ORDER BY id",
                            (job_id,)).fetchall()
        attempts = 1 + sum(1 for kind, _ in events if kind == "requeued")
        estimate = None
        for kind, metrics in events:
            if kind == "estimate" and metrics:
                estimate = json.loads(metrics)
        peak = db.execute("""SELECT max(total) FROM (SELECT sum(used_memory_bytes) AS total
                             FROM process_samples WHERE job_id = ? GROUP BY time_ms)""",
                          (job_id,)).fetchone()[0]
        says = reserved_mib(log_path)
        bad = bad or state != "ok" or attempts != 1
        error = "-"
        if estimate and peak:
            diff = estimate["peak_memory_bytes"] / peak - 1
            worst = max(worst, abs(diff))
            checked += 1
            error = "%+.1f%%" % (100 * diff)
        print("%-28s %-6s %8d %14s %11s %14s %12s %8s" % (
            name, state, attempts,
            "%.0f" % (estimate["peak_memory_bytes"] / 2**20) if estimate else "- (measured)",
            "%.0f%%" % (100 * estimate.get("memory_uncertainty", 0)) if estimate else "-",
            "%.0f" % (peak / 2**20) if peak else "-",
            "%.0f" % says if says is not None else "-", error))
    met = checked > 0 and worst <= limit and not bad
    print("estimated jobs: %d; largest miss %.1f%% (limit %.0f%%); every job ok on its first "
          "attempt: %s -> %s" % (checked, 100 * worst, 100 * limit, "yes" if not bad else "NO",
                                 "MET" if met else "NOT MET"))
    return 0 if met else 1


def sample(csv_path):
    import subprocess
    import time
    with open(csv_path, "a") as out:
        while True:
            t = time.time()
            r = subprocess.run(["nvidia-smi", "--query-gpu=index,utilization.gpu,memory.used",
                                "--format=csv,noheader,nounits"], capture_output=True, text=True)
            for line in r.stdout.splitlines():
                fields = [f.strip() for f in line.split(",")]
                if len(fields) == 3:
                    out.write("%.3f,%s\n" % (t, ",".join(fields)))
            out.flush()
            time.sleep(max(0.0, 0.5 - (time.time() - t)))


def idle(csv_path, logs):
    starts = []
    for path in logs:
        with open(path, errors="replace") as f:
            for line in f:
                m = STARTED.search(line)
                if m:
                    starts.append(float(m.group("time")))
                    break
    if not starts:
        print("no 'started at' line in the logs")
        return 1
    first, last = min(starts), max(starts)
    samples = {}
    with open(csv_path) as f:
        for line in f:
            t, gpu, util, mem = line.strip().split(",")
            samples.setdefault(int(gpu), []).append((float(t), float(util), float(mem)))
    worst = 0.0
    ok = True
    span = max(last - first, 1e-9)
    for gpu, rows in sorted(samples.items()):
        rows.sort()
        base = min(m for t, _, m in rows if t <= first + 1) if any(
            t <= first + 1 for t, _, _ in rows) else min(m for _, _, m in rows)
        busy = [t for t, u, m in rows if u > 0 or m > base + 256]
        first_busy = min(busy) - first if busy else None
        idle_s = 0.0
        for (t0, u, m), (t1, _, _) in zip(rows, rows[1:]):
            if first_busy is not None and t0 >= first + first_busy and t1 <= last and \
                    u == 0 and m <= base + 256:
                idle_s += t1 - t0
        worst = max(worst, idle_s / span)
        good = first_busy is not None and first_busy <= 60 and idle_s <= 0.1 * span
        ok = ok and good
        print("gpu%d: busy %s after the first job started; idle %.1f s of the %.1f s in which "
              "jobs were still to start -> %s" % (
                  gpu, "%.1f s" % first_busy if first_busy is not None else "never", idle_s,
                  last - first, "ok" if good else "NOT OK"))
    print("%s: every GPU busy within a minute, and idle at most a tenth of the time in which "
          "jobs were still to start" % ("MET" if ok else "NOT MET"))
    return 0 if ok else 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("makespan", help="the makespan from the jobs' logs")
    m.add_argument("logs", nargs="+")
    e = sub.add_parser("estimates", help="estimated against measured peak memory")
    e.add_argument("db")
    e.add_argument("run_id", type=int)
    e.add_argument("--limit", type=float, default=0.15)
    sp = sub.add_parser("sample", help="nvidia-smi every 500 ms into a CSV, until killed")
    sp.add_argument("csv")
    i = sub.add_parser("idle", help="GPUs idle while jobs were still to start")
    i.add_argument("csv")
    i.add_argument("logs", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "makespan":
        return makespan(args.logs)
    if args.command == "sample":
        return sample(args.csv)
    if args.command == "idle":
        return idle(args.csv, args.logs)
    return estimates(args.db, args.run_id, args.limit)


if __name__ == "__main__":
    sys.exit(main())
