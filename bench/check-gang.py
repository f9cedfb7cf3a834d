#!/usr/bin/env python3
"""Independent check of bench/gang-ddp.sh: every figure from the jobs' own logs
(bench/train.py's lines; the gang's are rank 0's, for all ranks) and from
nvidia-smi's process sampling, not from colo's store; colo's `colo show
--json` figures printed beside them.

    python3 bench/check-gang.py RESULTS_DIR

The gang's steady rate is its mean img/s over epochs 2 and later. A
schedule's makespan is its first "started at" to its last "ended at"
(alone: summed over the runs one after another, and also first to last
across them, which adds colo's start-ups in between). For the cold and warm
passes (issue 34): each pass's makespan, how long after the gang each
one-GPU job started (their "started at" lines), cold over warm, and from
nvidia-smi how many samples had a one-GPU job beside each of the gang's ranks.
"""

import csv
import glob
import json
import os
import re
import sys

STARTED = re.compile(r"train\.py: started at ([0-9.]+)")
EPOCH = re.compile(r"epoch (\d+)/\d+: ([0-9.]+)s, ([0-9.]+) img/s, .* (\d+) samples, ended at ([0-9.]+)")


def read_log(path):
    """(started, [(epoch, seconds, samples, ended)]) of one job's log."""
    starts, epochs = [], []
    with open(path, errors="replace") as f:
        for line in f:
            m = STARTED.search(line)
            if m:
                starts.append(float(m.group(1)))
            m = EPOCH.search(line)
            if m:
                epochs.append((int(m.group(1)), float(m.group(2)), int(m.group(4)),
                               float(m.group(5))))
    return (min(starts) if starts else None), epochs


def logs_of(directory):
    """job name -> (started, epochs), from colo's log files NNN-name.log."""
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, "**", "*.log"), recursive=True)):
        base = os.path.basename(path)
        m = re.match(r"\d+-(.+?)(\.attempt\d+)?\.log$", base)
        if m:
            out[m.group(1)] = read_log(path)
    return out


def steady_rate(epochs):
    later = [(s, n) for e, s, n, _ in epochs if e >= 2]
    return sum(n for _, n in later) / sum(s for s, _ in later) if later else None


def span(logs):
    starts = [s for s, e in logs.values() if s is not None]
    ends = [e[-1][3] for s, e in logs.values() if e]
    return (min(starts), max(ends)) if starts and ends else (None, None)


def fmt(v, spec="%.1f"):
    return "-" if v is None else spec % v


def apps_overlap(path, gpus):
    """Seconds (samples) in which every GPU ran at least two compute
    processes other than the MPS server, and the most seen on each GPU."""
    if not os.path.exists(path):
        return None, {}
    by_time = {}
    with open(path) as f:
        for row in csv.reader(f):
            if len(row) < 5 or "No running" in row[0]:
                continue
            stamp, pid, uuid, name = row[0].strip(), row[1].strip(), row[2].strip(), row[4]
            if "mps-server" in name or "nvidia-cuda-mps" in name:
                continue
            by_time.setdefault(stamp, {}).setdefault(gpus.get(uuid, uuid), set()).add(pid)
    most = {}
    both = 0
    for per_gpu in by_time.values():
        for g, pids in per_gpu.items():
            most[g] = max(most.get(g, 0), len(pids))
        if len(per_gpu) >= 2 and all(len(p) >= 2 for p in per_gpu.values()):
            both += 1
    return both, most


def colo_makespan(directory):
    """colo's own makespan of the pass (colo show --json), in seconds."""
    try:
        with open(os.path.join(directory, "show.json")) as f:
            show = json.load(f)
    except (ValueError, OSError):
        return None
    ms = show.get("summary", {}).get("makespan_ms") or show.get("makespan_ms")
    return ms / 1000 if ms else None


def cold_and_warm(out, gpus):
    """Issue 34's figures of the cold and warm passes, as lines; None without them."""
    lines, makespans = [], {}
    for name in ("cold", "warm"):
        logs = logs_of(os.path.join(out, name, "logs"))
        if "ddp" not in logs:
            continue
        first, last = span(logs)
        makespans[name] = last - first if first is not None else None
        g_start = logs["ddp"][0]
        delays = sorted(s - g_start for n, (s, _) in logs.items()
                        if n != "ddp" and s is not None and g_start is not None)
        ok = sum(1 for n, (_, e) in logs.items() if e)
        lines.append("%s: makespan %s s from the logs (colo: %s s); %d of %d jobs trained; "
                     "one-GPU jobs started %s s after the gang (at most %s s)"
                     % (name, fmt(makespans[name]), fmt(colo_makespan(os.path.join(out, name))),
                        ok, len(logs), ", ".join("%.1f" % d for d in delays),
                        fmt(max(delays) if delays else None)))
        both, most = apps_overlap(os.path.join(out, name + "-apps.csv"), gpus)
        if both is not None:
            lines.append("%s, nvidia-smi: %d one-second samples with two or more compute "
                         "processes on every GPU at once; the most on each GPU: %s"
                         % (name, both, ", ".join("gpu%s %d" % (g, n)
                                                  for g, n in sorted(most.items()))))
    if not lines:
        return None
    if makespans.get("cold") and makespans.get("warm"):
        lines.append("cold over warm (logs): %.2fx; cold over the 75 s of issue 34: %.2fx"
                     % (makespans["cold"] / makespans["warm"], makespans["cold"] / 75.0))
    return lines


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    out = sys.argv[1]
    gpus = {}
    if os.path.exists(os.path.join(out, "gpus.json")):
        with open(os.path.join(out, "gpus.json")) as f:
            gpus = json.load(f)
    issue34 = cold_and_warm(out, gpus)
    if issue34 is not None:
        print("\n".join(["Cold gang beside one-GPU jobs (issue 34), from the jobs' own logs "
                         "(bench/check-gang.py)", ""] + issue34))
        if not os.path.isdir(os.path.join(out, "together")):
            return 0
        print()
    alone = {}
    for d in sorted(glob.glob(os.path.join(out, "alone", "*"))):
        alone.update(logs_of(os.path.join(d, "logs")))
    together = logs_of(os.path.join(out, "together", "logs"))
    if "ddp" not in alone or "ddp" not in together:
        print("check-gang: no log of the gang (ddp) in %s" % out, file=sys.stderr)
        return 1
    lines = ["Gang beside one-GPU jobs, from the jobs' own logs (bench/check-gang.py)", ""]
    rate_alone, rate_together = steady_rate(alone["ddp"][1]), steady_rate(together["ddp"][1])
    lines.append("gang (ddp, 2 ranks) steady img/s: alone %s, together %s -> %s of alone"
                 % (fmt(rate_alone, "%.0f"), fmt(rate_together, "%.0f"),
                    fmt(rate_together / rate_alone if rate_alone and rate_together else None,
                        "%.2fx")))
    for name in sorted(n for n in together if n != "ddp"):
        a, t = steady_rate(alone.get(name, (None, []))[1]), steady_rate(together[name][1])
        lines.append("%s steady img/s: alone %s, together %s" % (name, fmt(a, "%.0f"),
                                                                  fmt(t, "%.0f")))
    durations = []
    for s, e in alone.values():
        if s is not None and e:
            durations.append(e[-1][3] - s)
    first, last = span(alone)
    t_first, t_last = span(together)
    seq = sum(durations) if durations else None
    tog = t_last - t_first if t_first is not None else None
    lines.append("")
    lines.append("makespan one after another: %s s summed over the runs (%s s first start to "
                 "last end, with colo's start-ups between)"
                 % (fmt(seq), fmt(last - first if first is not None else None)))
    lines.append("makespan together: %s s -> %s of one after another"
                 % (fmt(tog), fmt(tog / seq if tog and seq else None, "%.2fx")))
    # The gang and the one-GPU jobs trained at once: epoch windows that overlap.
    g_start = together["ddp"][0]
    g_end = together["ddp"][1][-1][3] if together["ddp"][1] else None
    overlapping = [n for n, (s, e) in together.items()
                   if n != "ddp" and s is not None and e and g_start is not None and g_end
                   and min(e[-1][3], g_end) - max(s, g_start) > 0]
    lines.append("one-GPU jobs that trained while the gang did (their logs' start-end "
                 "overlapping the gang's): %d of %d" % (len(overlapping), len(together) - 1))
    both, most = apps_overlap(os.path.join(out, "together-apps.csv"), gpus)
    if both is None:
        lines.append("nvidia-smi: no process sampling (no nvidia-smi here)")
    else:
        lines.append("nvidia-smi: %d one-second samples with two or more compute processes "
                     "(the MPS server not counted) on every GPU at once; the most on each GPU: %s"
                     % (both, ", ".join("gpu%s %d" % (g, n) for g, n in sorted(most.items()))))
    show_path = os.path.join(out, "together", "show.json")
    if os.path.exists(show_path):
        try:
            with open(show_path) as f:
                show = json.load(f)
            colo_makespan = show.get("summary", {}).get("makespan_ms") or show.get("makespan_ms")
            lines.append("colo show (its own store): makespan together %s s"
                         % fmt(colo_makespan / 1000 if colo_makespan else None))
            for j in show.get("jobs", []):
                if j.get("gpus"):
                    lines.append("colo show: %s ran on GPUs %s" % (j.get("name"), j["gpus"]))
        except (ValueError, OSError) as e:
            lines.append("colo show: unreadable (%s)" % e)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
