#!/usr/bin/env python3
"""Compares each job's peak GPU memory as colo recorded it (NVML, per process,
summed per sampling instant) with what the job itself reports (bench/train.py:
torch.cuda.max_memory_reserved plus its CUDA context).

The context is measured where it can be: a job alone on the GPU (an exclusive
run) reports device_used_mib - memory_reserved_mib at its end. Jobs of other
runs of the same command are given the median context of the exclusive run.

    python3 bench/memory_check.py COLO_DB
"""
import json
import sqlite3
import statistics
import sys


def main(db_path):
    db = sqlite3.connect(db_path)
    runs = db.execute("SELECT id, mechanism FROM runs WHERE state = 'ok' ORDER BY id").fetchall()
    rows = []
    contexts = {}
    for run_id, mechanism in runs:
        for job_id, name, spec in db.execute("SELECT id, name, signature FROM jobs WHERE run_id = ?", (run_id,)):
            metrics = {}
            for (m,) in db.execute("SELECT metrics_json FROM job_events WHERE job_id = ? AND metrics_json IS NOT NULL",
                                   (job_id,)):
                metrics.update(json.loads(m) or {})
            peak = db.execute("""SELECT max(total) FROM (SELECT sum(used_memory_bytes) AS total FROM process_samples
                                 WHERE job_id = ? GROUP BY time_ms)""", (job_id,)).fetchone()[0]
            if "max_memory_reserved_mib" not in metrics or peak is None:
                continue
            context = None
            if mechanism == "exclusive" and "device_used_mib" in metrics:
                context = metrics["device_used_mib"] - metrics["memory_reserved_mib"]
                contexts.setdefault(spec, []).append(context)
            rows.append([run_id, mechanism, name, spec, metrics["max_memory_reserved_mib"], context, peak / 2**20])
    print("%-4s %-9s %-12s %12s %11s %14s %14s %7s" % ("run", "mechanism", "job", "reserved MiB", "context MiB",
                                                      "job says MiB", "colo peak MiB", "diff"))
    worst = 0.0
    for run_id, mechanism, name, spec, reserved, context, peak in rows:
        if context is None and spec in contexts:
            context = statistics.median(contexts[spec])
        if context is None:
            continue
        says = reserved + context
        diff = (peak - says) / says
        worst = max(worst, abs(diff))
        print("%-4d %-9s %-12s %12.0f %11.0f %14.0f %14.0f %+6.1f%%" % (run_id, mechanism, name, reserved, context, says,
                                                                      peak, 100 * diff))
    print("largest difference: %.1f%% (%s the 10%% target)" % (100 * worst, "within" if worst <= 0.10 else "OUTSIDE"))
    return 0 if worst <= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
