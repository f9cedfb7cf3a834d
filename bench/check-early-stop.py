#!/usr/bin/env python3
"""The early-stopping bench's figures (bench/early-stop.sh), from the jobs' own
logs and, beside them, from what colo recorded, with no colo code.

For each run (a directory holding show.json, `colo show --json` of its store,
which names each job's log): from the logs of bench/train.py, each trial's lr
(its "train.py: arguments:" line), its start ("train.py: started at T"), and
its epochs ("epoch N/M: ..., loss X, ..., ended at T"). A trial that printed
its last epoch (N = M) finished; the others were stopped. The run's makespan
is first start to last epoch end; its best configuration is the finished
trial with the lowest final loss, and the time until that loss was known is
its last epoch's end less the first start. colo's figures are the same ones
from show.json (state, started_ms, ended_ms, the loss's last value); they
include the interpreter's start and exit, so they may run a few seconds
longer (the logs are looked up under RUN_DIR/logs/ when they are not where
colo wrote them). Mismatches of the best lr, of which trials were stopped, or of the
times by more than --slack seconds fail.

    bench/check-early-stop.py [--slack 5] RUN_DIR...

Prints a table per run, then the ratios of the second run to the first
(the early-stopped sweep against the full one); exits 1 on a mismatch.
"""
import argparse
import json
import os
import re
import sys

STARTED = re.compile(r"^train\.py: started at ([0-9.]+)")
ARGS = re.compile(r"^train\.py: arguments: (.*)$")
EPOCH = re.compile(r"^epoch (\d+)/(\d+): .*\bloss ([-+0-9.eE]+|nan|inf)\b.*ended at ([0-9.]+)")


def read_log(path):
    trial = {"lr": None, "started": None, "epochs": [], "of": None}
    with open(path, errors="replace") as f:
        for line in f:
            m = STARTED.match(line)
            if m:
                trial["started"] = float(m.group(1))
            m = ARGS.match(line)
            if m:
                words = m.group(1).split()
                if "--lr" in words:
                    trial["lr"] = words[words.index("--lr") + 1]
            m = EPOCH.match(line)
            if m:
                trial["epochs"].append((int(m.group(1)), float(m.group(3)), float(m.group(4))))
                trial["of"] = int(m.group(2))
    return trial


def log_of(run, path):
    """The job's log: where colo wrote it, else under RUN_DIR/logs/ (a run
    directory copied elsewhere, as in docs/results/)."""
    if os.path.exists(path) or "/logs/" not in path:
        return path
    return os.path.join(run, "logs", path.split("/logs/", 1)[1])


def figures_from_logs(trials):
    first = min(t["started"] for t in trials if t["started"] is not None)
    last = max(e[2] for t in trials for e in t["epochs"])
    finished = [t for t in trials if t["epochs"] and t["epochs"][-1][0] == t["of"]]
    best = min(finished, key=lambda t: t["epochs"][-1][1])
    return {
        "makespan_s": last - first,
        "best_lr": best["lr"],
        "best_loss": best["epochs"][-1][1],
        "best_known_s": best["epochs"][-1][2] - first,
        "finished": sorted(t["lr"] for t in finished),
        "epochs": sum(len(t["epochs"]) for t in trials),
    }


def figures_from_colo(jobs):
    first = min(j["started_ms"] for j in jobs) / 1000
    last = max(j["ended_ms"] for j in jobs) / 1000
    finished = [j for j in jobs if j["state"] == "ok"]
    best = min(finished, key=lambda j: j["metrics"]["loss"]["last"])
    return {
        "makespan_s": last - first,
        "best_lr": best["params"]["lr"],
        "best_loss": best["metrics"]["loss"]["last"],
        "best_known_s": best["ended_ms"] / 1000 - first,
        "finished": sorted(j["params"]["lr"] for j in finished),
        "stopped": sum(j["state"] == "stopped" for j in jobs),
        "not_ok": sum(j["state"] not in ("ok", "stopped") for j in jobs),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slack", type=float, default=5.0, help="seconds colo's times may exceed the logs'")
    ap.add_argument("runs", nargs="+", help="directories with show.json")
    args = ap.parse_args()
    ok = True
    results = []
    for run in args.runs:
        jobs = json.load(open(os.path.join(run, "show.json")))["jobs"]
        trials = [read_log(log_of(run, j["log_path"])) for j in jobs]
        logs, colo = figures_from_logs(trials), figures_from_colo(jobs)
        results.append((run, logs, colo))
        print("== %s: %d trials, %d finished, %d stopped early, %d not ok (colo); %d epochs trained (logs)"
              % (run, len(jobs), len(colo["finished"]), colo["stopped"], colo["not_ok"], logs["epochs"]))
        print("%-28s %12s %12s" % ("", "from logs", "from colo"))
        for key in ("makespan_s", "best_known_s"):
            print("%-28s %12.1f %12.1f" % (key, logs[key], colo[key]))
        print("%-28s %12s %12s" % ("best lr", logs["best_lr"], colo["best_lr"]))
        print("%-28s %12.4f %12.4g" % ("its final loss", logs["best_loss"], colo["best_loss"]))
        problems = []
        if float(logs["best_lr"]) != float(colo["best_lr"]):
            problems.append("best lr differs")
        if [float(x) for x in logs["finished"]] != sorted(float(x) for x in colo["finished"]):
            problems.append("finished trials differ: logs %s, colo %s" % (logs["finished"], colo["finished"]))
        for key in ("makespan_s", "best_known_s"):
            if not (-1.0 <= colo[key] - logs[key] <= args.slack):
                problems.append("%s: colo %.1f s against the logs' %.1f s" % (key, colo[key], logs[key]))
        if colo["not_ok"]:
            problems.append("%d trials failed" % colo["not_ok"])
        print("check: " + ("PASS" if not problems else "FAIL: " + "; ".join(problems)))
        ok = ok and not problems
    if len(results) == 2:
        (_, a, _), (_, b, _) = results
        print("== %s against %s (from the logs)" % (results[1][0], results[0][0]))
        print("makespan:                   %.1f s against %.1f s: %.2fx" % (b["makespan_s"], a["makespan_s"], b["makespan_s"] / a["makespan_s"]))
        print("best configuration known:   %.1f s against %.1f s: %.2fx" % (b["best_known_s"], a["best_known_s"], b["best_known_s"] / a["best_known_s"]))
        print("best lr: %s (loss %.4f) against %s (loss %.4f)" % (b["best_lr"], b["best_loss"], a["best_lr"], a["best_loss"]))
        print("epochs trained: %d against %d" % (b["epochs"], a["epochs"]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
