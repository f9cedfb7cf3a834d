#!/usr/bin/env python3
"""Recomputes each run's makespan from the jobs' own progress records, beside colo's.

colo's makespan runs from its first job's start to its last job's end, both
stamped by colo. This check reads only what each job wrote itself through
python/colo_progress.py: the wall-clock "time" of its "start" record (its
script began) and of its last record ("end" or its last epoch). The job's
makespan is max(last record) - min(start record). The two differ by start-up
(Python and CUDA) before the first record and the exit after the last, so they
agree within a few seconds per run. The difference is printed as its two
parts (colo's first start to the first job's own start record; the last job's
last record to colo's last end), so it can be read off, not assumed.

    bench/check-makespans.py [--json] STORE.db [RUN_A RUN_B]

With two run ids it also prints RUN_A's makespan over RUN_B's from both.
--json prints {"runs": [{"run", "colo_makespan_s", "makespan_s"}]} instead.
Reads SQLite directly (no colo code).
"""
import json
import sqlite3
import sys


def main() -> int:
    as_json = "--json" in sys.argv
    argv = [a for a in sys.argv if a != "--json"]
    if len(argv) not in (2, 4):
        print("usage: " + next(line.strip() for line in __doc__.splitlines()
                               if line.strip().startswith("bench/check-makespans.py")),
              file=sys.stderr)
        return 2
    db = sqlite3.connect(f"file:{argv[1]}?mode=ro", uri=True)
    colo, jobs, span = {}, {}, {}
    for run, first, last in db.execute(
            "SELECT run_id, min(started_ms), max(ended_ms) FROM jobs GROUP BY run_id"):
        colo[run] = (last - first) / 1000.0
        span[run] = (first, last)
    gaps = {}
    for run, first, last in db.execute(
            "SELECT j.run_id, min(CASE WHEN e.kind = 'start' THEN e.time_ms END), max(e.time_ms) "
            "FROM job_events e JOIN jobs j ON j.id = e.job_id GROUP BY j.run_id"):
        if first is not None and last is not None:
            jobs[run] = (last - first) / 1000.0
            gaps[run] = ((first - span[run][0]) / 1000.0, (span[run][1] - last) / 1000.0)
    if as_json:
        print(json.dumps({"runs": [{"run": run, "colo_makespan_s": colo[run],
                                    "makespan_s": jobs.get(run)} for run in sorted(colo)]}))
        return 0
    print(f"{'RUN':>4}  {'COLO MAKESPAN':>14}  {'FROM THE JOBS':>14}  DIFFERENCE")
    for run in sorted(colo):
        if run in jobs:
            print(f"{run:>4}  {colo[run]:>12.1f} s  {jobs[run]:>12.1f} s  "
                  f"start-up before the first record {gaps[run][0]:.1f} s, "
                  f"exit after the last {gaps[run][1]:.1f} s")
        else:
            print(f"{run:>4}  {colo[run]:>12.1f} s  {'no records':>14}")
    if len(argv) == 4:
        a, b = int(argv[2]), int(argv[3])
        print(f"run {a} over run {b}: colo {colo[a] / colo[b]:.3f}, "
              f"from the jobs {jobs[a] / jobs[b]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
