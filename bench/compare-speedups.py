#!/usr/bin/env python3
"""colo's steady speed-ups beside bench/verify-speedup.py's, run by run.

The benchmark scripts run this after colo, so that every figure they publish
has an independent check next to it. colo is asked only where each job's log
is (`colo show RUN --json`); the check itself reads nothing but those logs.

    compare-speedups.py --colo BIN --db STORE BENCH_LOG...   (the output of colo bench)
    compare-speedups.py --colo BIN --db STORE --pair SOLO_RUN RUN [--pair ...]

From bench output, runs whose jobs ran alone (cases named .../exclusive/...,
.../serial/... or .../x1/...) give the solo logs of their models (a model is a
job's name before "#"), exclusive ones preferred; every other case that ended
ok is compared: colo's figure is the one `colo bench` printed for the case
("N.NNx steady speed-up"), else `colo show RUN`'s steady_speedup_vs_exclusive
(solo rates from the store's profiles). --solo-from names more bench output
whose alone cases give solo logs (earlier parts of a study). With --pair, the solo run's jobs give the solo
logs and colo's figure is `colo show RUN`'s steady_speedup_vs_exclusive.

Prints one line per compared run; with --max-diff PCT, exits 1 when a figure
and its check differ by more than PCT percent, or only one of them exists.
"""

import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CASE_LINE = re.compile(r"^case \d+/\d+ (?P<name>\S+): ok in \S+ \(run (?P<run>\d+)\)(?P<rest>.*)$")
COLO_FIGURE = re.compile(r"(\d+\.\d+)x steady speed-up")


def show(colo, db, run):
    out = subprocess.run([colo, "show", str(run), "--json", "--db", db], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)


def model_of(job_name):
    return job_name.split("#")[0]


def log_key(model):
    """The part of a job's log file name that names its model: "resnet26_" for
    resnet26#3 (colo writes NNN-resnet26_3.log)."""
    return "%s_" % re.sub(r"[^A-Za-z0-9._-]", "_", model)


def verify(solo_logs, together_logs, gpus=1):
    args = [sys.executable, os.path.join(HERE, "verify-speedup.py"), "--json", "--gpus",
            str(gpus), "--solo"]
    for model, logs in solo_logs.items():
        args += ["%s=%s" % (log_key(model), log) for log in logs]
    args += ["--together"] + together_logs
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode == 2:
        return None, done.stderr.strip()
    result = json.loads(done.stdout)
    return result["speedup"], result["why_not"]


def logs_of(summary):
    return [j["log_path"] for j in summary["jobs"] if j.get("started_ms") is not None]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--colo", default=os.environ.get("COLO", "build-release/colo"))
    parser.add_argument("--db", required=True)
    parser.add_argument("--pair", nargs=2, action="append", type=int, default=[],
                        metavar=("SOLO_RUN", "RUN"))
    parser.add_argument("--max-diff", type=float, help="percent; exit 1 beyond it")
    parser.add_argument("--solo-from", nargs="+", default=[], metavar="BENCH_LOG",
                        help="more bench output whose alone cases give solo logs")
    parser.add_argument("bench_logs", nargs="*")
    args = parser.parse_args(argv)

    rows = []  # (label, colo figure or None, solo logs, together logs, gpus)
    for solo_run, run in args.pair:
        solo = show(args.colo, args.db, solo_run)
        together = show(args.colo, args.db, run)
        solo_logs = {}
        for j in solo["jobs"]:
            solo_logs.setdefault(model_of(j["name"]), []).append(j["log_path"])
        rows.append(("run %d (%s, %d jobs)" % (run, together["run"]["mechanism"],
                                               len(together["jobs"])),
                     together["steady_speedup_vs_exclusive"], solo_logs, logs_of(together),
                     max(1, together.get("together_gpus") or 1)))

    def cases_in(paths):
        found = []
        for path in paths:
            with open(path, errors="replace") as f:
                for line in f:
                    m = CASE_LINE.match(line.strip())
                    if m:
                        figure = COLO_FIGURE.search(m.group("rest"))
                        found.append((m.group("name"), int(m.group("run")),
                                      float(figure.group(1)) if figure else None))
        return found

    cases = cases_in(args.bench_logs)
    alone = {}  # model -> (exclusive?, [logs])
    summaries = {}
    for name, run, _ in cases + [c for c in cases_in(args.solo_from) if c not in cases]:
        if run not in summaries:
            try:
                summaries[run] = show(args.colo, args.db, run)
            except subprocess.CalledProcessError:
                continue  # a run of another store
        exclusive = "/exclusive/" in name or "/serial/" in name
        if not (exclusive or "/x1/" in name):
            continue
        for j in summaries[run]["jobs"]:
            model = model_of(j["name"])
            seen = alone.get(model)
            if seen is None or (exclusive and not seen[0]):
                alone[model] = (exclusive, [j["log_path"]])
            elif seen[0] == exclusive:
                seen[1].append(j["log_path"])
    solo_logs = {model: logs for model, (_, logs) in alone.items()}
    for name, run, figure in cases:
        if "/exclusive/" in name or "/serial/" in name or run not in summaries:
            continue
        if figure is None:
            figure = summaries[run]["steady_speedup_vs_exclusive"]
        rows.append((name, figure, solo_logs, logs_of(summaries[run]), 1))

    failed = False
    width = max([len(r[0]) for r in rows] + [4])
    print("%-*s  %10s  %18s  %s" % (width, "CASE", "COLO", "VERIFY-SPEEDUP.PY", "DIFFERENCE"))
    for label, figure, solo, together, gpus in rows:
        check, why = verify(solo, together, gpus)
        if figure is not None and check is not None:
            diff = 100.0 * (figure - check) / check
            bad = args.max_diff is not None and abs(diff) > args.max_diff
            note = "%+.1f%%%s" % (diff, "  BEYOND %g%%" % args.max_diff if bad else "")
        else:
            bad = args.max_diff is not None and (figure is None) != (check is None)
            note = why or "colo gave no figure"
        failed = failed or bad
        print("%-*s  %10s  %18s  %s" % (width, label, "%.2fx" % figure if figure else "-",
                                        "%.2fx" % check if check else "-", note))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
