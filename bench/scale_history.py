#!/usr/bin/env python3
"""Writes a service's long history into a colo store, for bench/scale-history.sh.

One run as `colo serve` leaves it after DAYS days on GPUS simulated GPUs:
jobs back to back on every GPU (each JOB_MINUTES long, one epoch end every
EPOCH_S seconds with its samples), and a device sample of every GPU every
SAMPLE_MS milliseconds (what the service's sampler records), with power and
the energy counter. The store must exist (colo creates its schema); the run
is added beside what it holds. Prints the run's id.

    scale_history.py DB [--days 10] [--gpus 8] [--job-minutes 30]
                        [--epoch-s 60] [--sample-ms 2000]
"""

import argparse
import json
import sqlite3
import sys


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("db")
    p.add_argument("--days", type=float, default=10)
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--job-minutes", type=float, default=30)
    p.add_argument("--epoch-s", type=float, default=60)
    p.add_argument("--sample-ms", type=int, default=2000)
    args = p.parse_args(argv)

    start = 1_700_000_000_000
    end = start + int(args.days * 86_400_000)
    job_ms = int(args.job_minutes * 60_000)
    epoch_ms = int(args.epoch_s * 1000)
    db = sqlite3.connect(args.db)
    db.execute("PRAGMA journal_mode = WAL")
    devices = [{"index": g, "name": "Simulated H100", "uuid": "GPU-sim-%d" % g,
                "memory_total_bytes": 80 << 30} for g in range(args.gpus)]
    cur = db.execute(
        "INSERT INTO runs (started_ms, ended_ms, state, mechanism, backend, simulated, "
        "job_file, host, colo_pid, command_line, devices_json) "
        "VALUES (?, ?, 'ok', 'mps', 'sim', 1, '', 'bench', 0, 'colo serve (history)', ?)",
        (start, end, json.dumps(devices)))
    run_id = cur.lastrowid
    jobs = events = 0
    for g in range(args.gpus):
        t = start + g * 1000
        n = 0
        while t + job_ms <= end:
            spec = json.dumps({"name": "job", "command": ["python3", "train.py", "--seed", str(n)]})
            cur = db.execute(
                "INSERT INTO jobs (run_id, name, grp, spec_json, signature, state, device, pid, "
                "queued_ms, started_ms, ended_ms, exit_code, reason) "
                "VALUES (?, ?, '', ?, ?, 'ok', ?, 0, ?, ?, ?, 0, 'exit code 0')",
                (run_id, "job#%d" % n, spec, "sig-%d" % (n % 50), g, t, t, t + job_ms))
            job_id = cur.lastrowid
            rows = []
            e = 1
            while e * epoch_ms <= job_ms:
                rows.append((job_id, t + e * epoch_ms, "epoch_end", e, 60_000,
                             json.dumps({"loss": 1.0 / e})))
                e += 1
            db.executemany("INSERT INTO job_events (job_id, time_ms, kind, epoch, samples, "
                           "metrics_json) VALUES (?, ?, ?, ?, ?, ?)", rows)
            events += len(rows)
            jobs += 1
            n += 1
            t += job_ms
    samples = 0
    for g in range(args.gpus):
        energy = 0
        batch = []
        t = start
        while t <= end:
            energy += 300 * args.sample_ms  # 300 W, in mJ
            batch.append((run_id, t, g, 60.0, 80.0, 40 << 30, 80 << 30, 300.0, energy))
            if len(batch) >= 100_000:
                db.executemany(
                    "INSERT INTO device_samples (run_id, time_ms, device, sm_active_pct, "
                    "gpu_util_pct, memory_used_bytes, memory_total_bytes, power_w, energy_mj) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", batch)
                samples += len(batch)
                batch = []
            t += args.sample_ms
        db.executemany(
            "INSERT INTO device_samples (run_id, time_ms, device, sm_active_pct, gpu_util_pct, "
            "memory_used_bytes, memory_total_bytes, power_w, energy_mj) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", batch)
        samples += len(batch)
    db.commit()
    db.close()
    print(run_id)
    print("history: run %d, %d jobs, %d epoch events, %d device samples over %.1f days on %d GPUs"
          % (run_id, jobs, events, samples, args.days, args.gpus), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
