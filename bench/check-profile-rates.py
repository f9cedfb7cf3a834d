#!/usr/bin/env python3
"""Recomputes what profiling cost, from the jobs' own logs (bench/train.py's
"epoch N/M: Ts, R img/s, ..., S samples, ended at E" lines), beside what each
window's summary says (torch-summary-N.json, written by colo's client):

  - the rate inside the window: the samples of the epochs that ended inside it
    over its length;
  - the rate before it: the printed img/s of the last epoch that ended before
    it (the client's own is over its reports of the 30 s before: within 3%);
  - the rate after it: the printed img/s of the first epoch after it (train.py
    times an epoch from its own start, after the window's files were written);
  - the GPU's busy share of the window: the union of the window's kernel
    spans (torch-kernels-N.tsv, or .tsv.xz) over its length, when it has them;
  - how long writing the window's files took the job: the gap between the
    window's last epoch's end and the next epoch's start (its end less its
    printed time).

    bench/check-profile-rates.py SUMMARY...

Prints a row per window and PASS or FAIL (rates within 2%, the rate before
within 3%, writing within 1 s, busy within 0.1 points); exits 1 on FAIL."""
import json
import lzma
import os
import re
import sys

EPOCH = re.compile(r"^epoch \d+/\d+: ([0-9.]+)s, ([0-9.]+) img/s, .*?(\d+) samples, ended at ([0-9.]+)")


def epochs(log):
    out = []
    with open(log, errors="replace") as f:
        for line in f:
            m = EPOCH.match(line)
            if m:
                out.append({"took": float(m.group(1)), "rate": float(m.group(2)),
                            "samples": int(m.group(3)), "end": float(m.group(4))})
    return out


def busy_pct(path, s):
    """The union of the window's kernel spans over its length, in percent;
    None without a spans file."""
    if not s.get("kernels"):
        return None
    spans = os.path.join(os.path.dirname(path), s["kernels"])
    opener = open if os.path.exists(spans) else lzma.open
    if opener is lzma.open:
        spans += ".xz"
    start, end = s["started"] * 1e6, s["ended"] * 1e6
    cut = []
    with opener(spans, "rt") as f:
        for line in f:
            a, b = (float(x) for x in line.split("\t", 2)[:2])
            a, b = max(a, start), min(b, end)
            if b > a:
                cut.append((a, b))
    busy, reach = 0.0, start
    for a, b in sorted(cut):
        if b > reach:
            busy += b - max(a, reach)
            reach = b
    return 100 * busy / (end - start)


def close(a, b, rel):
    return a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b))


def main():
    failed = False
    for path in sys.argv[1:]:
        with open(path) as f:
            s = json.load(f)
        log = os.path.dirname(path)[: -len(".profile")] + ".log"
        e = epochs(log)
        inside = [x for x in e if s["started"] + 0.05 < x["end"] <= s["ended"] + 0.05]
        after = [x for x in e if x["end"] > s["ended"] + 0.05]
        rate_in = sum(x["samples"] for x in inside) / (s["ended"] - s["started"]) if inside else None
        before = [x for x in e if x["end"] <= s["started"] + 0.05]
        rate_before = before[-1]["rate"] if before else None
        rate_after = after[0]["rate"] if after else None
        busy = busy_pct(path, s)
        written = after[0]["end"] - after[0]["took"] - inside[-1]["end"] if after and inside else None
        problems = []
        if not close(rate_in, s.get("rate_in"), 0.02):
            problems.append("rate inside: logs %s, summary %s" % (rate_in, s.get("rate_in")))
        if not close(rate_after, s.get("rate_after"), 0.02):
            problems.append("rate after: logs %s, summary %s" % (rate_after, s.get("rate_after")))
        # None in the summary: the client had no report before the window but
        # the first epoch's, which counts start-up.
        if s.get("rate_before") is not None and not close(rate_before, s["rate_before"], 0.03):
            problems.append("rate before: logs %s, summary %s" % (rate_before, s.get("rate_before")))
        if busy is not None and abs(busy - (s.get("gpu_busy_pct") or -1)) > 0.1:
            problems.append("GPU busy: spans %.2f%%, summary %s" % (busy, s.get("gpu_busy_pct")))
        if written is None or s.get("written_s") is None or abs(written - s["written_s"]) > 1.0:
            problems.append("writing: logs %s, summary %s" % (written, s.get("written_s")))
        failed = failed or bool(problems)
        print("%s: from the logs, before %.0f img/s, inside %.0f, after %.0f (%.2fx of after), "
              "writing %.1f s; GPU busy %s: %s" % (
                  os.path.basename(os.path.dirname(path)), rate_before or 0, rate_in or 0,
                  rate_after or 0, (rate_in / rate_after) if rate_in and rate_after else float("nan"),
                  written or 0, "%.1f%% from the spans" % busy if busy is not None else "- (no spans)",
                  "PASS" if not problems else "FAIL: " + "; ".join(problems)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
