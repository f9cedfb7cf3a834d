#!/usr/bin/env python3
"""Issue 32: `colo usage`'s energy per user, checked on a real GPU against the
driver's own energy counter read by nvidia-smi, not by colo.

One `colo serve` (fresh store, naive sharing, two jobs to a GPU); user root
submits JOBS jobs of bench/train.py (resnet26) at once, so that they share
GPU 0. Meanwhile this script polls `nvidia-smi --query-gpu=power.draw`
every 0.2 s (this driver's nvidia-smi has no total_energy_consumption
field; colo reads NVML's energy counter, so the two are independent). When
every job ended:

  colo:   `colo usage --json` ended[root].energy_j (the jobs' shares of the
          GPU's energy, summed), share_ms, gpu_ms;
  check:  the GPU's energy over the union of the jobs' lifetimes: nvidia-smi's
          power readings integrated (trapezoids) from each job's first line of
          its own log ("started at") to its last epoch's "ended at".

While both share the GPU, colo splits each interval's energy evenly between
them, so the sum of the shares is the GPU's energy while any job ran, which
is what the check computes independently. colo counts at its sampling
instants (and once a second), so the two differ by the energy of a
fraction of a second at each job's start and end, and by what 0.2 s power
readings miss.

    serve_usage_energy.py OUT [--colo build-release/colo] [--jobs 2] [--epochs 3]

Writes OUT/summary.txt (both figures and their ratio), OUT/power.csv (the
polled power), OUT/usage.json, the service's log and the jobs' logs.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_bench import Service, job_command, log, write_job_file  # noqa: E402

STARTED = re.compile(r"^\S+\.py: started at ([\d.]+)")
EPOCH_END = re.compile(r"^epoch \d+/\d+: .*ended at ([\d.]+)")


def poll_power(samples, stop):
    while not stop.is_set():
        r = subprocess.run(["nvidia-smi", "--id=0", "--query-gpu=power.draw",
                            "--format=csv,noheader,nounits"], capture_output=True, text=True)
        t = time.time()
        try:
            samples.append((t, float(r.stdout.strip().splitlines()[0])))  # W
        except (ValueError, IndexError):
            if not samples:
                log("nvidia-smi gave no power: %r %r" % (r.stdout[:200], r.stderr[:200]))
        stop.wait(0.2)


def energy_between(samples, a, b):
    """Joules from time a to b: the power readings' trapezoids, clipped to [a, b];
    None when the readings do not cover it."""
    if not samples or samples[0][0] > a or samples[-1][0] < b:
        return None
    joules = 0.0
    for (t0, p0), (t1, p1) in zip(samples, samples[1:]):
        lo, hi = max(t0, a), min(t1, b)
        if hi <= lo or t1 <= t0:
            continue
        at = lambda t: p0 + (p1 - p0) * (t - t0) / (t1 - t0)  # noqa: E731
        joules += (at(lo) + at(hi)) / 2 * (hi - lo)
    return joules


def lifetime(path):
    started, ended = None, None
    with open(path, errors="replace") as f:
        for line in f:
            m = STARTED.match(line.strip())
            if m:
                started = float(m.group(1))
            m = EPOCH_END.match(line.strip())
            if m:
                ended = float(m.group(1))
    return started, ended


def union(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--colo", default="build-release/colo")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--scale", type=float, default=1.0)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    samples, stop = [], threading.Event()
    poller = threading.Thread(target=poll_power, args=(samples, stop), daemon=True)
    poller.start()
    service = Service(args.colo, args.out, "serve", "nvml",
                      ["--mechanism", "naive", "--policy", "fixed", "--max-per-gpu",
                       str(args.jobs), "--grace", "5s"])
    try:
        command = job_command("small", "nvml", args.epochs, args.scale)
        path = write_job_file(os.path.join(args.out, "jobs.toml"), "energy", command,
                              repeat=args.jobs)
        ids = service.submit(path)
        log("submitted %s" % ids)
        ended = service.wait(ids)
        log("ended: %s" % [j.get("state") for j in ended])
        time.sleep(1.5)  # the service's last accounting and the poller's next reading
        usage = json.loads(service.client(["usage", "--json", "--since", "1h"]).stdout)
        with open(os.path.join(args.out, "usage.json"), "w") as f:
            json.dump(usage, f, indent=1)
        lives = []
        for i in ids:
            logs = service.job_logs(i)
            if logs:
                s, e = lifetime(logs[-1])
                if s is not None and e is not None:
                    lives.append((s, e))
    finally:
        service.stop()
        stop.set()
        poller.join(timeout=5)
    with open(os.path.join(args.out, "power.csv"), "w") as f:
        f.write("time_s,power_w\n")
        for t, w in samples:
            f.write("%.3f,%.2f\n" % (t, w))
    row = next((r for r in usage.get("ended", []) if r.get("owner") == "root"), None)
    lines = ["serve_usage_energy: %d jobs of resnet26 sharing GPU 0 under colo serve (naive), "
             "%d epochs each" % (args.jobs, args.epochs)]
    check = 0.0
    for s, e in union(lives):
        joules = energy_between(samples, s, e)
        if joules is None:
            lines.append("a job's lifetime lies outside the power readings: no check")
            check = None
            break
        check += joules
    lines.append("jobs' lifetimes from their logs: %s" % ["%.1f s" % (e - s) for s, e in lives])
    if row is None or check is None or len(lives) != len(ids):
        lines.append("result: FAIL (missing figures: usage %s, lifetimes %d of %d)"
                     % (row, len(lives), len(ids)))
    else:
        colo_j = row["energy_j"]
        ratio = colo_j / check if check > 0 else float("nan")
        lines.append("colo usage: energy %.0f J, GPU time held %.1f s, GPU time %.1f s"
                     % (colo_j, row["share_ms"] / 1000, row["gpu_ms"] / 1000))
        lines.append("nvidia-smi power over the jobs' lifetimes: %.0f J (%d readings)"
                     % (check, len(samples)))
        lines.append("colo over the check: %.3f" % ratio)
        lines.append("result: %s (wanted within 10%%)" % ("PASS" if abs(ratio - 1) <= 0.10
                                                         else "FAIL"))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
