#!/usr/bin/env python3
"""Checks what `colo show --csv` says each job of a sweep learned against the
jobs' own logs, with no colo code: for each log of bench/train.py, the grid
point it trained (its "train.py: arguments:" line, --PARAM VALUE) and the loss
of each epoch it printed ("epoch N/M: ..., loss X, ..."). colo's loss_last must
be the last loss printed and loss_best the lowest (to the 4 decimals printed),
and with --sorted the CSV's rows must run from the best loss to the worst.

    bench/check-learned.py --param lr --csv show.csv LOG...

Prints one row per job and PASS or FAIL; exits 1 on FAIL.
"""
import argparse
import csv
import re
import sys

EPOCH = re.compile(r"^epoch \d+/\d+: .*\bloss ([-+0-9.eE]+|nan|inf)\b")
ARGS = re.compile(r"^train\.py: arguments: (.*)$")


def read_log(path, param):
    value, losses = None, []
    with open(path, errors="replace") as f:
        for line in f:
            m = ARGS.match(line)
            if m:
                words = m.group(1).split()
                if "--" + param in words:
                    value = words[words.index("--" + param) + 1]
            m = EPOCH.match(line)
            if m:
                losses.append(float(m.group(1)))
    return value, losses


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--param", required=True, help="the grid parameter the logs differ in")
    ap.add_argument("--csv", required=True, help="`colo show --csv` of the sweep's run")
    ap.add_argument("--sorted", action="store_true", help="the CSV was written with --sort loss")
    ap.add_argument("logs", nargs="+")
    args = ap.parse_args()
    with open(args.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    by_value = {}
    for row in rows:
        by_value[float(row[args.param])] = row
    failures = []
    print("%-8s %12s %12s %12s %12s  %s" % (args.param, "log last", "colo last", "log best",
                                             "colo best", "verdict"))
    seen = set()
    for path in args.logs:
        value, losses = read_log(path, args.param)
        if value is None or not losses:
            failures.append("%s: no arguments line or no epoch line" % path)
            continue
        key = float(value)
        seen.add(key)
        row = by_value.get(key)
        if row is None:
            failures.append("%s=%s: no row in %s" % (args.param, value, args.csv))
            continue
        last, best = losses[-1], min(losses)
        colo_last, colo_best = float(row["loss_last"]), float(row["loss_best"])
        ok = abs(colo_last - last) <= 5e-5 and abs(colo_best - best) <= 5e-5
        print("%-8s %12.4f %12.6f %12.4f %12.6f  %s" % (value, last, colo_last, best, colo_best,
                                                       "ok" if ok else "DIFFERS"))
        if not ok:
            failures.append("%s=%s: log last %.4f best %.4f, colo %.6f %.6f" %
                            (args.param, value, last, best, colo_last, colo_best))
    missing = set(by_value) - seen
    if missing:
        failures.append("rows with no log: %s" % sorted(missing))
    if args.sorted:
        bests = [float(r["loss_best"]) for r in rows]
        if bests != sorted(bests):
            failures.append("the CSV is not sorted best loss first: %s" % bests)
    for f in failures:
        print("FAIL: " + f)
    print("PASS" if not failures else "FAIL")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
