#!/usr/bin/env python3
"""Every case of a `colo bench` store, its steady speed-up recomputed from the jobs' own records.

For studies whose job logs were not kept, only the store: each job's epoch
records (epoch, samples, wall-clock end) as the job itself reported them
through python/colo_progress.py are in its job_events table. This writes them
out as epoch lines, one file per job, and hands them to
bench/verify-speedup.py: the solo logs are those of the experiment's
exclusive one-job case of each model, the together logs those of the case.
colo's own figure (speedup_vs_one_job of the report's cases.csv, matched by
case and run id) is printed beside it when CASES_CSV files are given.

    bench/check-study-speedups.py STORE.db [CASES_CSV ...]
    bench/check-study-speedups.py STORE.db --pair SOLO_RUN RUN [--pair ...]

--pair, for stores of `colo run` (no experiment): RUN's jobs against run
SOLO_RUN's jobs alone, matched by model (a job's name before "#"). Reads
SQLite directly (no colo code). Prints one line per case.
"""
import argparse
import csv
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

VERIFY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "verify-speedup.py")


def write_logs(db, run_id, out_dir):
    """One epoch log per job of the run, named <model>-<job id>.log; their paths."""
    paths = []
    for job_id, name in db.execute("SELECT id, name FROM jobs WHERE run_id = ? ORDER BY id",
                                   (run_id,)):
        model = name.split("#")[0].replace("/", "_").replace("=", "_")
        path = os.path.join(out_dir, "%s-%d.log" % (model, job_id))
        with open(path, "w") as log:
            for epoch, samples, time_ms in db.execute(
                    "SELECT epoch, samples, time_ms FROM job_events WHERE job_id = ? AND "
                    "kind = 'epoch_end' AND samples IS NOT NULL ORDER BY time_ms", (job_id,)):
                log.write("epoch %d: %d samples, ended at %.3f\n" % (epoch, samples,
                                                                     time_ms / 1000.0))
        paths.append((model, path))
    return paths


def colo_figures(csv_paths):
    figures = {}
    for path in csv_paths:
        with open(path) as f:
            for row in csv.DictReader(f):
                if row["run_id"] and row["speedup_vs_one_job"]:
                    figures[(row["case"], int(row["run_id"]))] = float(row["speedup_vs_one_job"])
    return figures


def verify(solo_logs, together):
    """verify-speedup.py's figure for the together logs ([(model, path)]) against the solo
    logs of their models (several of one model are averaged), or why there is none."""
    models = {m for m, _ in together}
    solos = ["%s=%s" % (m, path) for m, path in solo_logs if m in models]
    check = subprocess.run([sys.executable, VERIFY, "--json", "--solo", *solos, "--together",
                            *[p for _, p in together]], capture_output=True, text=True)
    if check.stdout.strip():  # exit 0, or 3 when there is no figure
        result = json.loads(check.stdout)
        if result["speedup"] is not None:
            return "%.2fx" % result["speedup"]
        return "none: " + result["why_not"]
    return "none: " + (check.stderr.strip().splitlines() or ["no output"])[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("cases_csv", nargs="*", help="the report's cases.csv files")
    parser.add_argument("--pair", nargs=2, type=int, action="append", metavar=("SOLO", "RUN"),
                        help="compare RUN against run SOLO's jobs alone instead of the store's "
                        "experiment cases (repeatable)")
    args = parser.parse_args()
    db = sqlite3.connect("file:%s?mode=ro" % args.store, uri=True)
    colo = colo_figures(args.cases_csv)
    if args.pair:  # (experiment, name, solo run, run)
        cases = [(0, "run %d against run %d" % (run, solo), [solo], run)
                 for solo, run in args.pair]
    else:
        rows = db.execute("SELECT experiment_id, name, mechanism, degree, run_id FROM "
                          "experiment_cases WHERE status = 'ok' ORDER BY experiment_id, id")
        rows = rows.fetchall()
        solo_runs = {}  # experiment -> its exclusive one-job runs (one per model)
        for exp, _, mechanism, degree, run in rows:
            if mechanism == "exclusive" and degree == 1:
                solo_runs.setdefault(exp, []).append(run)
        cases = [(exp, name, solo_runs.get(exp, []), run) for exp, name, mechanism, degree, run
                 in rows if not (mechanism == "exclusive" and degree == 1)]
    print("%-4s %-44s %4s %8s %8s" % ("EXP", "CASE", "RUN", "COLO", "CHECK"))
    with tempfile.TemporaryDirectory(prefix="colo-check-") as tmp:
        for exp, name, solo, run in cases:
            solo_logs = [log for solo_run in solo for log in write_logs(db, solo_run, tmp)]
            figure = "%.2fx" % colo[(name, run)] if (name, run) in colo else "-"
            print("%-4d %-44s %4d %8s %8s" % (exp, name, run, figure,
                                              verify(solo_logs, write_logs(db, run, tmp))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
