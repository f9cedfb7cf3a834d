#!/usr/bin/env python3
"""Checks `colo report RUN`'s profiling section against the jobs' own files
(no colo code): every window summary the run's jobs wrote
(LOGS/**/torch-summary-N.json) is one row of the report's
csv/profile-windows.csv, with its steps, its top op (the summary's first) and
the trace file beside it; and the report's index.html links each trace.
Given `colo show RUN`'s text, the report's summary.txt holds its interference
table unchanged.

    bench/check-report-windows.py REPORT_DIR LOGS_DIR [SHOW_TXT]

Prints PASS or FAIL per check; exits 1 on any FAIL."""
import csv
import glob
import json
import os
import sys


def main():
    report, logs = sys.argv[1], sys.argv[2]
    show = sys.argv[3] if len(sys.argv) > 3 else None
    failed = False

    def verdict(ok, what):
        nonlocal failed
        failed |= not ok
        print(f"{'PASS' if ok else 'FAIL'} {what}")

    summaries = sorted(glob.glob(os.path.join(logs, "**", "torch-summary-*.json"), recursive=True))
    with open(os.path.join(report, "csv", "profile-windows.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    verdict(len(rows) == len(summaries),
            f"{len(summaries)} window summaries in the jobs' directories, {len(rows)} rows in the report")
    by_trace = {r["trace"]: r for r in rows}
    html = open(os.path.join(report, "index.html")).read()
    for path in summaries:
        s = json.load(open(path))
        trace = s.get("trace") or ""
        if trace and not trace.startswith("/"):
            trace = os.path.join(os.path.dirname(path), trace)
        row = by_trace.get(trace)
        name = os.path.relpath(path, logs)
        if row is None:
            verdict(False, f"{name}: no row names its trace {trace}")
            continue
        top = s["top"][0]["name"] if s.get("top") else ""
        steps = int(s.get("steps") or 0)
        verdict(row["window"] == str(int(s["window"])) and row["steps"] == str(steps)
                and row["top op"] == top,
                f"{name}: window {int(s['window'])}, {steps} steps, top op {top!r}")
        verdict(f'href="file://{trace}"' in html, f"{name}: index.html links its trace")
    if show:
        text = open(show).read()
        table = text[text.find("Interference by kernel family"):] if "Interference by kernel family" in text else ""
        summary = open(os.path.join(report, "summary.txt")).read()
        if table:
            verdict(table.strip() in summary, "summary.txt holds colo show's interference table unchanged")
        else:
            verdict("Interference by kernel family" not in summary,
                    "colo show has no interference table, and neither has the report")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
