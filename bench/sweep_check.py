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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("makespan", help="the makespan from the jobs' logs")
    m.add_argument("logs", nargs="+")
    e = sub.add_parser("estimates", help="estimated against measured peak memory")
    e.add_argument("db")
    e.add_argument("run_id", type=int)
    e.add_argument("--limit", type=float, default=0.15)
    args = parser.parse_args(argv)
    if args.command == "makespan":
        return makespan(args.logs)
    return estimates(args.db, args.run_id, args.limit)


if __name__ == "__main__":
    sys.exit(main())
