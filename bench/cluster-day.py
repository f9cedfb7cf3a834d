#!/usr/bin/env python3
"""Writes a day of a GPU cluster's submissions for `colo simulate --arrivals`.

    bench/cluster-day.py OUTPUT_DIR [--jobs 50000] [--sweep-share 0.25] [--seed 1]
                         [--distinct-sweeps] [--unhinted-sweeps]

Writes OUTPUT_DIR/jobs.toml (four job templates with their hints: three
models submitted alone, and a 100-point sweep) and OUTPUT_DIR/trace.csv
(`time,job,count` lines, docs/policy.md): about --jobs jobs over 24 hours, a
--sweep-share of them grid points, submitted along the day as
`--arrivals diurnal` would (Poisson, 1.75x the mean rate at 14:00 and 0.25x at
02:00); each sweep's 100 points arrive at once. Deterministic for a seed.

By default every sweep is the same 100 points (100 signatures in all). With
--distinct-sweeps the sweep block is one grid of as many points as the day's
sweeps submit (10 learning rates by as many seeds as needed), and each sweep
takes the next 100 of them: every point of the day is a signature of its own
(issue 59). With --unhinted-sweeps the sweep block has no hint lines: what a
user who writes no gpu_memory submits; the scheduler measures and estimates.
"""

import argparse
import math
import os
import random

TEMPLATES = """\
# bench/cluster-day.py: the job templates of a simulated cluster's day (the
# trace names them). Hints as in bench/scale/queue-100k.toml, shorter runs.
[[job]]
name = "small"
command = ["python3", "bench/train.py", "--model", "resnet26"]
gpu_memory = "1.2GiB"
sm_activity = 19
solo_time = "10m"
startup_time = "15s"

[[job]]
name = "medium"
command = ["python3", "bench/train.py", "--model", "resnet50"]
gpu_memory = "4GiB"
sm_activity = 45
solo_time = "20m"
startup_time = "15s"

[[job]]
name = "large"
command = ["python3", "bench/train.py", "--model", "resnet152"]
gpu_memory = "5GiB"
sm_activity = 57
solo_time = "30m"
startup_time = "15s"

"""
SWEEP = """[[job]]
name = "sweep"
command = ["python3", "bench/train.py", "--model", "resnet26", "--lr", "{{lr}}", "--seed", "{{seed}}"]
grid = {{ lr = [0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1], seed = [{seeds}] }}
"""
SWEEP_HINTS = """gpu_memory = "1.2GiB"
sm_activity = 19
solo_time = "10m"
startup_time = "15s"
"""
SWEEP_POINTS = 100
DAY_S = 24 * 3600
SWING = 0.75


def diurnal_times(count, rng):
    """`count` submission times (seconds) over one day, by thinning."""
    mean = count / DAY_S
    top = mean * (1 + SWING)
    times = []
    t = 0.0
    while len(times) < count:
        t += rng.expovariate(top)
        hour = (t / 3600) % 24
        if rng.random() * top <= mean * (1 + SWING * math.sin(2 * math.pi * (hour - 8) / 24)):
            times.append(t)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_dir")
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--sweep-share", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--distinct-sweeps", action="store_true",
                        help="every sweep point of the day a signature of its own")
    parser.add_argument("--unhinted-sweeps", action="store_true",
                        help="no hint lines on the sweep block")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    sweeps = round(args.jobs * args.sweep_share / SWEEP_POINTS)
    singles = args.jobs - sweeps * SWEEP_POINTS
    rows = [(t, rng.choices(["small", "medium", "large"], weights=[5, 3, 2])[0], 1)
            for t in diurnal_times(singles, rng)]
    rows += [(t, "sweep", SWEEP_POINTS) for t in diurnal_times(sweeps, rng)]
    rows.sort()
    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, "jobs.toml"), "w") as f:
        seeds = max(1, -(-sweeps * SWEEP_POINTS // 10)) if args.distinct_sweeps else 10
        f.write(TEMPLATES)
        f.write(SWEEP.format(seeds=", ".join(str(k) for k in range(seeds))))
        if not args.unhinted_sweeps:
            f.write(SWEEP_HINTS)
    with open(os.path.join(args.output_dir, "trace.csv"), "w") as f:
        f.write("time,job,count\n")
        for t, job, count in rows:
            f.write(f"{t:.1f},{job},{count}\n" if count > 1 else f"{t:.1f},{job}\n")
    print(f"cluster-day: {singles} single jobs and {sweeps} sweeps of {SWEEP_POINTS} points "
          f"({singles + sweeps * SWEEP_POINTS} jobs) over 24 h in {args.output_dir}/trace.csv")


if __name__ == "__main__":
    main()
