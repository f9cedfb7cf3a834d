#!/usr/bin/env python3
"""Recomputes a torch profiling window's figures from its Chrome trace alone
(no torch, no colo code), to check the summary colo's client wrote beside it
(docs/profiling.md).

    bench/check-profile-trace.py TRACE                 prints the top operator
    bench/check-profile-trace.py --summary SUMMARY     checks a summary: PASS/FAIL

The top operator: with GPU kernels in the trace, the kernel name with the most
summed duration (GPU time); else the CPU operator with the most self time (its
duration less its direct children's on the same thread, summed by name). With
--summary, also the GPU's busy share of the window (the union of the kernels'
intervals over the window's length) and the top kernel's share of the top 20's
GPU time (the trace's device spans, kernels, memcpy and memset, summed by name:
what `colo show` prints beside each name) must agree with the summary's to 0.5
points."""
import collections
import json
import os
import sys


def load(path):
    with open(path) as f:
        data = json.load(f)
    return data if isinstance(data, list) else data.get("traceEvents", [])


def complete(events):
    return [e for e in events if e.get("ph") == "X" and "dur" in e and "ts" in e]


def kernels(events):
    return [e for e in complete(events) if str(e.get("cat", "")).lower() == "kernel"]


def top_operator(events):
    gpu = kernels(events)
    if gpu:
        time = collections.Counter()
        for e in gpu:
            time[e["name"]] += float(e["dur"])
        return time.most_common(1)[0][0]
    ops = [e for e in complete(events)
           if str(e.get("cat", "cpu_op")) in ("cpu_op", "Operator", "")
           and not str(e.get("name", "")).startswith("ProfilerStep")]
    by_thread = collections.defaultdict(list)
    for e in ops:
        by_thread[(e.get("pid"), e.get("tid"))].append(e)
    self_time = collections.Counter()
    for thread in by_thread.values():
        thread.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack = []
        for e in thread:
            start = float(e["ts"])
            while stack and float(stack[-1]["ts"]) + float(stack[-1]["dur"]) <= start:
                stack.pop()
            if stack:
                self_time[stack[-1]["name"]] -= float(e["dur"])
            self_time[e["name"]] += float(e["dur"])
            stack.append(e)
    return self_time.most_common(1)[0][0]


def top_share_pct(events):
    """The first name's share of the 20 names with the most GPU time (device
    spans summed by name), in percent; None without device spans."""
    time = collections.Counter()
    for e in complete(events):
        cat = str(e.get("cat", "")).lower()
        if cat == "kernel" or cat in ("gpu_memcpy", "gpu_memset"):
            time[e["name"]] += float(e["dur"])
    top = time.most_common(20)
    total = sum(t for _, t in top)
    return 100.0 * top[0][1] / total if top and total > 0 else None


def summary_share_pct(summary):
    """The same share from the summary's own list (as colo show computes it)."""
    by = summary.get("sorted_by", "self_device_us")
    top = summary.get("top") or []
    total = sum(float(t.get(by, 0)) for t in top)
    return 100.0 * float(top[0].get(by, 0)) / total if top and total > 0 else None


def busy_pct(events, window_s):
    spans = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in kernels(events))
    busy, end = 0.0, None
    for start, stop in spans:
        if end is None or start > end:
            busy, end = busy + stop - start, stop
        elif stop > end:
            busy, end = busy + stop - end, stop
    return 100.0 * busy / (window_s * 1e6) if spans and window_s > 0 else None


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--summary":
        with open(sys.argv[2]) as f:
            summary = json.load(f)
        events = load(os.path.join(os.path.dirname(sys.argv[2]), summary["trace"]))
        top = top_operator(events)
        busy = busy_pct(events, summary["ended"] - summary["started"])
        problems = []
        if not summary["top"] or summary["top"][0]["name"] != top:
            problems.append("top: trace %r, summary %r" % (top, summary["top"][0]["name"] if summary["top"] else None))
        theirs = summary.get("gpu_busy_pct")
        if (busy is None) != (theirs is None) or (busy is not None and abs(busy - theirs) > 0.5):
            problems.append("GPU busy: trace %s, summary %s" % (busy, theirs))
        share = top_share_pct(events) if summary.get("sorted_by") == "self_device_us" else None
        their_share = summary_share_pct(summary) if share is not None else None
        if share is not None and (their_share is None or abs(share - their_share) > 0.5):
            problems.append("top kernel's share: trace %.2f%%, summary %s" % (share, their_share))
        print("%s: top %s%s, GPU busy %s%%: %s" % (
            sys.argv[2], top, "" if share is None else " (%.1f%% of the top 20's GPU time)" % share,
            "-" if busy is None else "%.1f" % busy, "PASS" if not problems else "FAIL: " + "; ".join(problems)))
        return 1 if problems else 0
    print(top_operator(load(sys.argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
