#!/usr/bin/env python3
"""A protected job's speed and its neighbours' harvest, from the jobs' own logs.

The independent check of bench/protected.sh (issue 56). It reads only the
lines bench/train.py printed, one per epoch:

    epoch 3/8: 10.1s, 3560 img/s, loss 6.91, 36000 samples, ended at 1732278012.345

No colo code, no store.

    check-protected.py --solo-main LOG --solo-neighbour LOG --main LOG --neighbour LOG...
                       [--floor 0.9] [--min-harvest 0.1]

A job's steady epochs are its epochs 2..n (the first pays start-up). The main
job's speed is the median of its steady epochs' rates (samples over the time
since the previous epoch ended) over the median of its solo run's. The
neighbours' harvest is, over the main job's steady window (the end of its
first epoch to the end of its last), the sum over neighbours of the samples
each trained inside the window (interpolated within its epochs) over the
window's length, over the neighbour's solo steady rate (a neighbour's log with
fewer than two epoch lines adds nothing). Prints both, and what each
neighbour's process saw of the MPS levers (the CUDA_MPS_* variables and the
SMs the device showed it, from train.py's first lines), and exits 1 when the
main job's speed is below --floor or the harvest below --min-harvest, 2 on bad
input.
"""

import argparse
import re
import statistics
import sys

LINE = re.compile(r"epoch (?P<epoch>\d+)(?:/\d+)?\b.*?\b(?P<samples>\d+) samples\b.*?"
                  r"\bended at (?P<time>\d+(?:\.\d+)?)")


LEVERS = re.compile(r"train\.py: mps client: (?P<client>.*)|train\.py: device: .*?(?P<sms>\d+) SMs"
                    r"|train\.py: colo attempt: .*\b(?P<uid>uid=\d+)")


def epochs(path, required=True):
    """[(end_time, samples)] of each epoch line, in order."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            if m := LINE.search(line):
                out.append((float(m["time"]), int(m["samples"])))
    if len(out) < 2 and required:
        raise SystemExit(f"check-protected: {path}: fewer than two epoch lines (bad input)")
    return out


def levers(path):
    """What the process said of MPS and the SMs it saw, from its first lines."""
    seen = []
    with open(path, errors="replace") as f:
        for line in f:
            if m := LEVERS.search(line):
                seen.append(f"mps client: {m['client']}" if m["client"]
                            else m["uid"] if m["uid"] else f"{m['sms']} SMs")
    return "; ".join(seen) or "nothing said"


def steady_rates(ep):
    return [s / (t - tp) for (tp, _), (t, s) in zip(ep, ep[1:]) if t > tp]


def samples_until(ep, when):
    """Samples of epochs 2..n trained by `when`, linear within an epoch (a
    neighbour's first epoch is not counted: the harvest errs low)."""
    done = 0.0
    for (tp, _), (t, s) in zip(ep, ep[1:]):
        if when >= t:
            done += s
        elif when > tp:
            done += s * (when - tp) / (t - tp)
    return done


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--solo-main", required=True)
    p.add_argument("--solo-neighbour", required=True)
    p.add_argument("--main", required=True)
    p.add_argument("--neighbour", nargs="+", required=True)
    p.add_argument("--floor", type=float, default=0.9)
    p.add_argument("--min-harvest", type=float, default=0.1)
    a = p.parse_args()
    solo_main = statistics.median(steady_rates(epochs(a.solo_main)))
    solo_nb = statistics.median(steady_rates(epochs(a.solo_neighbour)))
    main_ep = epochs(a.main)
    print(f"main: {levers(a.main)}")
    main_rates = steady_rates(main_ep)
    speed = statistics.median(main_rates) / solo_main
    w0, w1 = main_ep[0][0], main_ep[-1][0]
    harvest = 0.0
    for log in a.neighbour:
        print(f"{log.rsplit('/', 1)[-1]}: {levers(log)}")
        ep = epochs(log, required=False)
        if len(ep) < 2:
            continue
        inside = samples_until(ep, w1) - samples_until(ep, w0)
        harvest += inside / (w1 - w0) / solo_nb
    print(f"main alone: {solo_main:.0f} img/s (median of {len(steady_rates(epochs(a.solo_main)))} "
          f"steady epochs); together: {statistics.median(main_rates):.0f} img/s "
          f"(median of {len(main_rates)}): speed {speed:.3f} of solo "
          f"(epochs {', '.join(f'{r / solo_main:.2f}' for r in main_rates)})")
    print(f"neighbour alone: {solo_nb:.0f} img/s; harvest over the main job's steady window "
          f"({w1 - w0:.1f} s): {harvest:.3f}")
    ok = speed >= a.floor and harvest >= a.min_harvest
    print(f"{'PASS' if ok else 'FAIL'}: speed {speed:.3f} (floor {a.floor}), "
          f"harvest {harvest:.3f} (at least {a.min_harvest})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
