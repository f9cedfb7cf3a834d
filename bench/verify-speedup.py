#!/usr/bin/env python3
"""The steady speed-up of jobs that ran together, from their own logs alone.

An independent check of colo's figure (docs/measurements.md): it reads only
the lines the training scripts printed, one per epoch, with the epoch number,
its samples and the wall-clock time it ended, as bench/train.py prints them:

    epoch 3/4: 2.2s, 8727 img/s, loss 2.30, 19200 samples, ended at 1732278012.345

(--regex takes another format: named groups epoch, samples and time, the
time in seconds since the epoch). No colo code, no store.

    verify-speedup.py --solo LOG... --together LOG... [--gpus N] [--json]

--solo logs are jobs that ran alone; each gives its steady rate (samples of
epochs 2..n over the time from the end of epoch 1 to the end of epoch n). A
solo log applies to every --together log when given as LOG; given as
PATTERN=LOG it applies to the --together logs whose path contains PATTERN
(the longest pattern wins; several solo logs for one pattern are averaged;
a PATTERN holds neither "=" nor "/").

For the --together logs, the window W runs from the latest end of any job's
first epoch to the earliest end of any job's last epoch; each job's samples
inside W are interpolated linearly within its epochs, and

    speed-up = sum over jobs of (rate in W / solo rate) / --gpus

Each job's slowdown (epoch time together over alone) is its solo rate over
its rate in W. When W is shorter than two steady epochs of the slowest job,
there is no figure: "the jobs did not run together long enough".

The normalized throughput needs no window in which every job ran together:
whenever two or more jobs were in their steady epochs (2..n) on one GPU, the
sum over them of (their rate in that epoch / solo rate), averaged over that
time (and over the GPUs: --gpu-of LOG_PATTERN=N says which GPU a log's job ran
on; 0 by default). Exit 3 when there is neither figure, 2 for bad input (a log
without two epoch lines, a job without a solo log).
"""

import argparse
import json
import re
import sys

DEFAULT_REGEX = (r"epoch (?P<epoch>\d+)(?:/\d+)?\b.*?\b(?P<samples>\d+) samples\b.*?"
                 r"\bended at (?P<time>\d+(?:\.\d+)?)")


class BadInput(Exception):
    pass


def read_epochs(path, regex):
    """[(epoch, samples, end time)] of a log, in order of time."""
    epochs = []
    try:
        with open(path, errors="replace") as log:
            for line in log:
                m = regex.search(line)
                if m:
                    epochs.append((int(m.group("epoch")), int(m.group("samples")),
                                   float(m.group("time"))))
    except OSError as e:
        raise BadInput("cannot read %s: %s" % (path, e.strerror))
    epochs.sort(key=lambda e: e[2])
    if len(epochs) < 2:
        raise BadInput("%s: %d epoch line%s (two are needed: the first is warm-up); does "
                       "the log print lines like 'epoch 3/4: ..., 19200 samples, ended at "
                       "1732278012.345' (or pass --regex)?"
                       % (path, len(epochs), "" if len(epochs) == 1 else "s"))
    return epochs


def steady(epochs):
    """(samples per second, seconds per epoch) over epochs 2..n."""
    seconds = epochs[-1][2] - epochs[0][2]
    if seconds <= 0:
        raise BadInput("epochs 2..n took no time")
    samples = sum(e[1] for e in epochs[1:])
    return samples / seconds, seconds / (len(epochs) - 1)


def samples_at(epochs, t):
    """Samples done after the end of epoch 1 up to time t, linear within epochs."""
    done = 0.0
    for (_, _, t0), (_, samples, t1) in zip(epochs, epochs[1:]):
        if t >= t1:
            done += samples
        elif t > t0:
            done += samples * (t - t0) / (t1 - t0)
            break
        else:
            break
    return done


def solo_for(path, solos):
    best = None
    for pattern, rate in solos.items():
        if pattern in path and (best is None or len(pattern) > len(best)):
            best = pattern
    return solos.get(best) if best is not None else None


def normalized_throughput(jobs, solos, gpu_of):
    """(value, shared seconds): see the module comment; value None without overlap."""
    pieces = {}  # gpu -> [(start, end, rate / solo)]
    for path, epochs in jobs:
        solo = solo_for(path, solos)
        if solo is None:
            raise BadInput("no --solo log applies to %s" % path)
        gpu = 0
        for pattern, n in gpu_of.items():
            if pattern in path:
                gpu = n
        for (_, _, t0), (_, samples, t1) in zip(epochs, epochs[1:]):
            if t1 > t0:
                pieces.setdefault(gpu, []).append((t0, t1, samples / (t1 - t0) / solo))
    integral = shared = 0.0
    for gpu_pieces in pieces.values():
        cuts = sorted({t for p in gpu_pieces for t in p[:2]})
        for a, b in zip(cuts, cuts[1:]):
            active = [p for p in gpu_pieces if p[0] <= a and p[1] >= b]
            if len(active) >= 2:
                integral += sum(p[2] for p in active) * (b - a)
                shared += b - a
    return (integral / shared if shared > 0 else None), shared


def measure(solo_args, together_paths, gpus, regex, gpu_of=None):
    runs = {}
    for arg in solo_args:
        pattern, _, path = arg.partition("=")
        if not path or "/" in pattern:  # a path that holds "=" itself
            pattern, path = "", arg
        runs.setdefault(pattern, []).append(steady(read_epochs(path, regex))[0])
    solos = {pattern: sum(rates) / len(rates) for pattern, rates in runs.items()}

    jobs = [(path, read_epochs(path, regex)) for path in together_paths]
    start = max(e[0][2] for _, e in jobs)
    end = min(e[-1][2] for _, e in jobs)
    result = {"jobs": [], "gpus": gpus, "window_s": max(0.0, end - start),
              "window_start": start, "window_end": end, "speedup": None, "why_not": None}
    result["normalized_throughput"], result["normalized_throughput_shared_s"] = \
        normalized_throughput(jobs, solos, gpu_of or {})
    slowest = max(steady(e)[1] for _, e in jobs)
    if end <= start:
        result["why_not"] = "the jobs never were in their steady epochs at the same time"
        return result
    if len(jobs) > 1 and end - start < 2 * slowest:
        result["why_not"] = ("the jobs did not run together long enough: %.1f s together, less "
                             "than two steady epochs of the slowest job (%.1f s each)"
                             % (end - start, slowest))
        return result
    total = 0.0
    summed_rate = 0.0
    for path, epochs in jobs:
        rate = (samples_at(epochs, end) - samples_at(epochs, start)) / (end - start)
        solo = solo_for(path, solos)
        if solo is None:
            raise BadInput("no --solo log applies to %s" % path)
        total += rate / solo
        summed_rate += rate
        result["jobs"].append({"log": path, "samples_per_s": rate, "solo_samples_per_s": solo,
                               "slowdown": solo / rate if rate > 0 else None})
    result["samples_per_s"] = summed_rate
    result["speedup"] = total / gpus
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Steady speed-up of jobs that ran together, from their logs alone "
        "(an independent check of colo's figure).")
    parser.add_argument("--solo", nargs="+", required=True, metavar="[PATTERN=]LOG",
                        help="logs of jobs that ran alone")
    parser.add_argument("--together", nargs="+", required=True, metavar="LOG",
                        help="logs of the jobs that ran together")
    parser.add_argument("--gpus", type=int, default=1,
                        help="GPUs the --together jobs ran on (the speed-up is per GPU)")
    parser.add_argument("--regex", default=DEFAULT_REGEX,
                        help="epoch line format: named groups epoch, samples, time")
    parser.add_argument("--gpu-of", nargs="+", default=[], metavar="LOG_PATTERN=N",
                        help="the GPU of the jobs whose log path holds LOG_PATTERN (default 0)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    gpu_of = {}
    for arg in args.gpu_of:
        pattern, _, n = arg.rpartition("=")
        if not pattern or not n.isdigit():
            print("verify-speedup: --gpu-of %s: expected LOG_PATTERN=N" % arg, file=sys.stderr)
            return 2
        gpu_of[pattern] = int(n)
    try:
        regex = re.compile(args.regex)
    except re.error as e:
        print("verify-speedup: --regex: %s" % e, file=sys.stderr)
        return 2
    if not {"epoch", "samples", "time"} <= set(regex.groupindex):
        print("verify-speedup: --regex needs the named groups epoch, samples and time",
              file=sys.stderr)
        return 2
    try:
        result = measure(args.solo, args.together, args.gpus, regex, gpu_of)
    except BadInput as e:
        print("verify-speedup: %s" % e, file=sys.stderr)
        return 2

    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print("verify-speedup: %d jobs together, W = %.1f s" % (len(args.together),
                                                               result["window_s"]))
        for job in result["jobs"]:
            print("  %s: %.0f samples/s together, %.0f alone, slowdown %.2fx"
                  % (job["log"], job["samples_per_s"], job["solo_samples_per_s"],
                     job["slowdown"]))
        if result["speedup"] is None:
            print("verify-speedup: no steady speed-up: %s" % result["why_not"])
        else:
            print("verify-speedup: steady speed-up %.2fx (%.0f samples/s together%s)"
                  % (result["speedup"], result["samples_per_s"],
                     ", per GPU of %d" % args.gpus if args.gpus > 1 else ""))
        if result["normalized_throughput"] is None:
            print("verify-speedup: no normalized throughput: no two jobs were in their steady "
                  "epochs on one GPU at the same time")
        else:
            print("verify-speedup: normalized throughput %.2fx per GPU (over %.1f s)"
                  % (result["normalized_throughput"], result["normalized_throughput_shared_s"]))
    return 0 if result["speedup"] is not None or result["normalized_throughput"] else 3


if __name__ == "__main__":
    sys.exit(main())
