#!/usr/bin/env python3
"""Writes a service's long history into a colo store, for bench/scale-history.sh.

One run as `colo serve` leaves it after DAYS days on GPUS simulated GPUs:
jobs back to back on every GPU (each JOB_MINUTES long, one epoch end every
EPOCH_S seconds with its samples), and a device sample of every GPU every
SAMPLE_MS milliseconds (what the service's sampler records), with power and
the energy counter. The store must exist (colo creates its schema); the run
is added beside what it holds. Prints the run's id.

With --into-run RUN, the rows go into that run instead, a running
`colo serve`'s, as if it had run them (the history ends --end-ms, default
now less a minute): GPU by GPU, each GPU's samples before its jobs, in
commits of at most 50,000 rows, so that the service (whose store this is,
and which keeps what its ended jobs taught as they end) finds every job
with its samples and events, and its own writes wait no more than a commit.

    scale_history.py DB [--days 10] [--gpus 8] [--job-minutes 30]
                        [--epoch-s 60] [--sample-ms 2000]
                        [--into-run RUN [--end-ms MS]]
"""

import argparse
import json
import sqlite3
import sys
import time


SAMPLE_INSERT = ("INSERT INTO device_samples (run_id, time_ms, device, sm_active_pct, "
                 "gpu_util_pct, memory_used_bytes, memory_total_bytes, power_w, energy_mj) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")


def insert_job(db, run_id, gpu, n, t, job_ms, epoch_ms):
    """Job n on `gpu`, from t for job_ms, with an epoch end every epoch_ms;
    returns how many epoch events it has."""
    spec = json.dumps({"name": "job", "command": ["python3", "train.py", "--seed", str(n)]})
    cur = db.execute(
        "INSERT INTO jobs (run_id, name, grp, spec_json, signature, state, device, pid, "
        "queued_ms, started_ms, ended_ms, exit_code, reason) "
        "VALUES (?, ?, '', ?, ?, 'ok', ?, 0, ?, ?, ?, 0, 'exit code 0')",
        (run_id, "job#%d" % n, spec, "sig-%d" % (n % 50), gpu, t, t, t + job_ms))
    job_id = cur.lastrowid
    rows = []
    e = 1
    while e * epoch_ms <= job_ms:
        rows.append((job_id, t + e * epoch_ms, "epoch_end", e, 60_000,
                     json.dumps({"loss": 1.0 / e})))
        e += 1
    db.executemany("INSERT INTO job_events (job_id, time_ms, kind, epoch, samples, "
                   "metrics_json) VALUES (?, ?, ?, ?, ?, ?)", rows)
    return len(rows)


def job_starts(gpu, start, end, job_ms):
    """(n, start time) of each job back to back on `gpu` (staggered a second per GPU)."""
    t = start + gpu * 1000
    n = 0
    while t + job_ms <= end:
        yield n, t
        n += 1
        t += job_ms


def sample_batches(run_id, gpu, start, end, sample_ms, size):
    """`gpu`'s device samples from start to end, at 300 W, in lists of at most `size`."""
    energy = 0
    batch = []
    t = start
    while t <= end:
        energy += 300 * sample_ms  # 300 W, in mJ
        batch.append((run_id, t, gpu, 60.0, 80.0, 40 << 30, 80 << 30, 300.0, energy))
        if len(batch) >= size:
            yield batch
            batch = []
        t += sample_ms
    yield batch


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("db")
    p.add_argument("--days", type=float, default=10)
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--job-minutes", type=float, default=30)
    p.add_argument("--epoch-s", type=float, default=60)
    p.add_argument("--sample-ms", type=int, default=2000)
    p.add_argument("--into-run", type=int)
    p.add_argument("--end-ms", type=int)
    args = p.parse_args(argv)
    if args.into_run is not None:
        return into_run(args)

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
        for n, t in job_starts(g, start, end, job_ms):
            events += insert_job(db, run_id, g, n, t, job_ms, epoch_ms)
            jobs += 1
    samples = 0
    for g in range(args.gpus):
        for batch in sample_batches(run_id, g, start, end, args.sample_ms, 100_000):
            db.executemany(SAMPLE_INSERT, batch)
            samples += len(batch)
    db.commit()
    db.close()
    print(run_id)
    print("history: run %d, %d jobs, %d epoch events, %d device samples over %.1f days on %d GPUs"
          % (run_id, jobs, events, samples, args.days, args.gpus), file=sys.stderr)
    return 0


def into_run(args):
    """The history written into running run args.into_run (see the module's doc)."""
    end = args.end_ms if args.end_ms is not None else int(time.time() * 1000) - 60_000
    start = end - int(args.days * 86_400_000)
    job_ms = int(args.job_minutes * 60_000)
    epoch_ms = int(args.epoch_s * 1000)
    run_id = args.into_run
    db = sqlite3.connect(args.db, timeout=60)
    pending = 0

    def wrote(rows):  # commits once 50,000 rows wait
        nonlocal pending
        pending += rows
        if pending >= 50_000:
            db.commit()
            pending = 0

    jobs = events = samples = 0
    for g in range(args.gpus):
        for batch in sample_batches(run_id, g, start, end, args.sample_ms, 10_000):
            db.executemany(SAMPLE_INSERT, batch)
            samples += len(batch)
            wrote(len(batch))
        db.commit()  # this GPU's samples before any of its jobs
        pending = 0
        for n, t in job_starts(g, start, end, job_ms):
            written = insert_job(db, run_id, g, n, t, job_ms, epoch_ms)
            events += written
            jobs += 1
            wrote(1 + written)  # a job and its events in one commit
        db.commit()
        pending = 0
    db.close()
    print(run_id)
    print("history: into run %d, %d jobs, %d epoch events, %d device samples over %.1f days on "
          "%d GPUs, ending at %d" % (run_id, jobs, events, samples, args.days, args.gpus, end),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
