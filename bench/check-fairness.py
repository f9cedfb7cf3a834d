#!/usr/bin/env python3
"""Independent check of bench/serve_fairness.py (issue 32): each user's
solo-equivalent share of the GPU while both users had work, recomputed from
the jobs' own logs, and Jain's fairness index, beside colo's own figures.

From the logs alone (never colo's store or code):
  - a model's solo rate: the samples over the time of its epochs after the
    first, in the calibrate pass, where it ran alone;
  - a job is in the system from its submission (the bench script's clock,
    OUT/<pass>.json "submit_time") to its last epoch line's end;
  - the contended period: while both users have a job in the system;
  - a user's solo-equivalent time, as issue 32 defines it (run time times
    the rate beside others over the rate alone; where no rate is known, the
    job's share of the GPU): each epoch line's samples over its model's solo
    rate, spread evenly over the epoch ("12.3s" before "ended at"); and the
    job's start-up (its "started at" line to its first epoch's start, no rate
    yet) at its share of the GPU, one over the jobs whose processes were
    alive then (from their own "started at" to last epoch lines); both
    counted where they fall in the contended period;
  - Jain's index of the two users' times: (a + b)^2 / (2 (a^2 + b^2)), 1 when
    equal, 0.5 when one user had everything;
  - makespan: first submission to the last epoch line's end; user B's mean
    wait: submission to the "started at" line of its job's last attempt.
colo's figures: its per-user usage in all (`colo queue --json`, owners.NAME.
total_ms, asked once a second by the bench) over the polls where both users
had jobs queued or running, and its jobs' end times.

  check-fairness.py OUT      exit 1 when the fair-share pass misses its
                             criteria: Jain's index from the logs >= 0.9 and
                             above fcfs's; makespan <= 1.05x fcfs's.
"""

import json
import os
import re
import statistics
import sys

EPOCH = re.compile(r"^epoch (\d+)/(\d+): ([\d.]+)s, .*?(\d+) samples, ended at ([\d.]+)")
STARTED = re.compile(r"^\S+\.py: started at ([\d.]+)")


def read_log(path):
    epochs, started = [], None
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = EPOCH.match(line.strip())
                if m:
                    epochs.append({"epoch": int(m.group(1)), "of": int(m.group(2)),
                                   "seconds": float(m.group(3)), "samples": int(m.group(4)),
                                   "end": float(m.group(5))})
                    continue
                m = STARTED.match(line.strip())
                if m:
                    started = float(m.group(1))
    except (OSError, TypeError):
        pass
    return started, epochs


def solo_rates(out):
    with open(os.path.join(out, "calibrate.json")) as f:
        cal = json.load(f)
    rates = {}
    for j in cal["jobs"]:
        _, epochs = read_log(os.path.join(out, j["log"])) if j["log"] else (None, [])
        steady = [e for e in epochs if e["epoch"] > 1]
        if steady:
            rates[j["kind"]] = sum(e["samples"] for e in steady) / sum(e["seconds"] for e in steady)
    return rates


def both_busy(intervals_a, intervals_b):
    """The periods (start, end) when each user has at least one interval open."""
    events = sorted([(s, 0, +1) for s, _ in intervals_a] + [(e, 0, -1) for _, e in intervals_a] +
                    [(s, 1, +1) for s, _ in intervals_b] + [(e, 1, -1) for _, e in intervals_b])
    open_ = [0, 0]
    out, since = [], None
    for t, who, d in events:
        before = open_[0] > 0 and open_[1] > 0
        open_[who] += d
        after = open_[0] > 0 and open_[1] > 0
        if not before and after:
            since = t
        elif before and not after:
            out.append((since, t))
    return out


def overlap(a0, a1, windows):
    return sum(max(0.0, min(a1, w1) - max(a0, w0)) for w0, w1 in windows)


def jain(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if any(xs) else None


def from_logs(out, run, rates):
    jobs = []
    for j in run["jobs"]:
        started, epochs = read_log(os.path.join(out, j["log"])) if j["log"] else (None, [])
        jobs.append(dict(j, started=started, epochs=epochs,
                         end=epochs[-1]["end"] if epochs else None,
                         complete=bool(epochs) and epochs[-1]["epoch"] == epochs[-1]["of"]))
    spans = {u: [(j["submit_time"], j["end"]) for j in jobs if j["user"] == u and j["end"]]
             for u in ("A", "B")}
    windows = both_busy(spans["A"], spans["B"])
    alive = [(j["started"], j["end"]) for j in jobs if j["started"] and j["end"]]
    share = {"A": 0.0, "B": 0.0}
    for j in jobs:
        rate = rates.get(j["kind"])
        if j["started"] and j["epochs"]:
            # Start-up at the GPU share, in steps of 0.1 s.
            t, until = j["started"], j["epochs"][0]["end"] - j["epochs"][0]["seconds"]
            while t < until:
                step = min(0.1, until - t)
                n = sum(1 for a, b in alive if a <= t < b) or 1
                share[j["user"]] += overlap(t, t + step, windows) / n
                t += step
        for e in j["epochs"]:
            if rate and e["seconds"] > 0:
                inside = overlap(e["end"] - e["seconds"], e["end"], windows) / e["seconds"]
                share[j["user"]] += e["samples"] / rate * inside
    first = min(j["submit_time"] for j in jobs)
    ends = [j["end"] for j in jobs if j["end"]]
    if run.get("interrupted"):  # shares and makespan need every job's end
        windows, share, ends = [], {"A": None, "B": None}, []
    waits = [j["started"] - j["submit_time"] for j in jobs if j["user"] == "B" and j["started"]]
    return {"window_s": sum(b - a for a, b in windows) if windows else None, "share_s": share,
            "jain": jain([share["A"], share["B"]]) if None not in share.values() else None,
            "makespan_s": max(ends) - first if ends else None,
            "b_mean_wait_s": statistics.mean(waits) if waits else None,
            "complete": sum(j["complete"] for j in jobs), "jobs": len(jobs),
            "ok": sum(j.get("state") == "ok" for j in jobs), "interrupted": run.get("interrupted")}


def from_colo(run, users):
    polls = [p for p in run["usage_polls"]
             if all(p["owners"].get(users[u], {}).get("queued", 0) +
                    p["owners"].get(users[u], {}).get("running", 0) > 0 for u in ("A", "B"))]
    share = {"A": None, "B": None}
    if len(polls) >= 2:
        for u in ("A", "B"):
            share[u] = (polls[-1]["owners"][users[u]]["total_ms"] -
                        polls[0]["owners"][users[u]]["total_ms"]) / 1000.0
    first = min(j["submit_time"] for j in run["jobs"])
    ends = [j["colo_ended_ms"] / 1000.0 for j in run["jobs"] if j.get("colo_ended_ms")]
    waits = [j["colo_started_ms"] / 1000.0 - j["submit_time"] for j in run["jobs"]
             if j["user"] == "B" and j.get("colo_started_ms")]
    if run.get("interrupted"):
        share, ends = {"A": None, "B": None}, []
    return {"window_s": polls[-1]["t"] - polls[0]["t"] if len(polls) >= 2 else None,
            "share_s": share,
            "jain": jain([share["A"], share["B"]]) if None not in share.values() else None,
            "makespan_s": max(ends) - first if ends else None,
            "b_mean_wait_s": statistics.mean(waits) if waits else None}


def fmt(v, spec="%.1f"):
    return spec % v if v is not None else "-"


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    users = plan["users"]
    rates = solo_rates(out)
    machine = ""
    if os.path.exists(os.path.join(out, "machine.txt")):
        with open(os.path.join(out, "machine.txt")) as f:
            machine = f.read().strip().replace("\n", "; ")
    print("serve-fairness: user A (%s) a 24-job resnet50 sweep, user B (%s) 6 jobs of resnet26, "
          "resnet152 and cait_xxs24, Poisson arrivals over %.0f s (seed %d), %d epochs each, "
          "at most %d jobs on the GPU; %s" % (users["A"], users["B"], plan["span_s"], plan["seed"],
                                               plan["epochs"], plan["max_per_gpu"], machine))
    print("solo rates from the calibrate pass's logs (samples/s): " +
          ", ".join("%s %.0f" % kv for kv in sorted(rates.items())))
    print()
    print("%-11s %-5s %7s %9s %9s %7s %10s %12s %7s" % (
        "pass", "from", "jobs ok", "contended", "A solo-eq", "B", "Jain", "B mean wait",
        "makespan"))
    results = {}
    for name in ("fcfs", "fair-share"):
        path = os.path.join(out, name + ".json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            run = json.load(f)
        logs, colo = from_logs(out, run, rates), from_colo(run, users)
        results[name] = logs
        for src, r in (("logs", logs), ("colo", colo)):
            print("%-11s %-5s %7s %8ss %8ss %6ss %10s %11ss %6ss" % (
                name, src, "%d/%d" % (logs["ok"], logs["jobs"]) if src == "logs" else "",
                fmt(r["window_s"]), fmt(r["share_s"]["A"]), fmt(r["share_s"]["B"]),
                fmt(r["jain"], "%.3f"), fmt(r["b_mean_wait_s"]), fmt(r["makespan_s"])))
    print()
    print("logs: solo-equivalent time recomputed from the jobs' lines (epochs: samples over the "
          "solo rate; start-up: the GPU share), the contended period from the bench's submission "
          "clock and the last epoch lines; colo: its usage in all (owners.NAME.total_ms) between "
          "the first and last poll with both users' jobs queued or running, where a job's rates "
          "not yet known count at its GPU share.")
    fair, fcfs = results.get("fair-share"), results.get("fcfs")
    failures = []
    if fair and fcfs:
        ratio = fair["makespan_s"] / fcfs["makespan_s"] if fair["makespan_s"] and fcfs[
            "makespan_s"] else None
        print("fair-share over fcfs: Jain's index %s against %s (logs; wanted >= 0.9 and "
              "above); makespan %s (logs; wanted <= 1.05x)" % (
                  fmt(fair["jain"], "%.3f"), fmt(fcfs["jain"], "%.3f"), fmt(ratio, "%.2fx")))
        if fair["jain"] is None or fair["jain"] < 0.9:
            failures.append("Jain's index %s < 0.9" % fmt(fair["jain"], "%.3f"))
        if fair["jain"] is not None and fcfs["jain"] is not None and fair["jain"] <= fcfs["jain"]:
            failures.append("not fairer than fcfs")
        if ratio is None or ratio > 1.05:
            failures.append("makespan %s > 1.05x" % fmt(ratio, "%.2fx"))
    for name, r in results.items():
        if r["interrupted"]:
            failures.append("%s: interrupted before every job ended" % name)
        elif r["ok"] != r["jobs"] or r["complete"] != r["jobs"]:
            failures.append("%s: %d of %d jobs ok, %d complete logs" % (name, r["ok"], r["jobs"],
                                                                       r["complete"]))
    print("result: %s" % ("PASS" if not failures else "FAIL: " + "; ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
