#!/usr/bin/env python3
"""Recomputes `colo profile --gpu`'s timeline figures from the jobs' own files
(no colo code): each window's summary (torch-summary-N.json: when it opened
and closed) and device spans (torch-kernels-N.tsv, written by the client from
the trace), and checks colo's printed ones (timeline.txt) against them; then,
given a second run of the same model alone, each kernel family's time per
kernel beside the others over alone (the interference per family).

    bench/check-timeline.py TOGETHER_DIR [ALONE_DIR [SHOW_JSON]]

Each DIR is one of bench/profile-timeline.sh's runs. Prints PASS or FAIL per
figure and the families' table. SHOW_JSON is `colo show 1 --json` of the store
both runs share: its "interference" (each job's kernels per family beside the
others against the job alone, over each window's whole spans file) is
recomputed from the two windows' spans files and compared."""
import collections
import glob
import json
import lzma
import os
import re
import sys

FAMILIES = [  # the first that matches, in this order (docs/profiling.md)
    ("memcpy", ["memcpy"]), ("memset", ["memset"]),
    ("convolution", ["conv", "fprop", "dgrad", "wgrad", "implicit_gemm", "winograd"]),
    ("GEMM", ["gemm", "xmma", "cutlass", "matmul", "cublas"]),
    ("normalization", ["norm"]),
    ("layout", ["nchwtonhwc", "nhwctonchw", "transpose", "permute", "copy_kernel"]),
    ("softmax", ["softmax"]), ("optimizer", ["multi_tensor", "adam", "sgd", "optimizer"]),
    ("reduction", ["reduce", "reduction"]), ("elementwise", ["elementwise", "vectorized", "unrolled"]),
]


def family(name):
    lower = name.lower()
    for fam, words in FAMILIES:
        if any(w in lower for w in words):
            return fam
    return "other"


def windows(run_dir):
    """Each job's window taken by `colo profile`: (job, summary, spans)."""
    out = []
    for path in sorted(glob.glob(os.path.join(run_dir, "logs", "*", "*", "*.profile", "torch-summary-*.json"))):
        with open(path) as f:
            s = json.load(f)
        if s.get("trigger") != "colo profile" or not s.get("kernels"):
            continue
        spans = []
        kernels = os.path.join(os.path.dirname(path), s["kernels"])
        # As kept in docs/results: compressed.
        opened = open(kernels) if os.path.exists(kernels) else lzma.open(kernels + ".xz", "rt")
        with opened as f:
            for line in f:
                a, b, name = line.rstrip("\n").split("\t", 2)
                spans.append((float(a), float(b), name))
        job = re.sub(r"^\d+-", "", os.path.basename(os.path.dirname(path))[: -len(".profile")])
        trace = os.path.join(os.path.dirname(path), s["trace"])
        # The spans file is the client's transcription of the trace: checked
        # against the trace itself while it exists (bench/profile-timeline.sh
        # deletes traces only after this check).
        verified = same_spans(spans, spans_of_trace(trace)) if os.path.exists(trace) else None
        out.append((job, s, spans, verified))
    return out


def spans_of_trace(path):
    """The device spans of a Chrome trace, by this script's own reading: events
    of category kernel or gpu_*, start at its "ts" plus "baseTimeNanoseconds"
    (microseconds since the epoch)."""
    with open(path) as f:
        data = json.load(f)
    events = data if isinstance(data, list) else data.get("traceEvents", [])
    base = float(data.get("baseTimeNanoseconds", 0)) / 1000.0 if isinstance(data, dict) else 0.0
    out = []
    for e in events:
        cat = str(e.get("cat", "")).lower()
        if e.get("ph") == "X" and "dur" in e and (cat == "kernel" or cat.startswith("gpu_")):
            out.append((base + float(e["ts"]), base + float(e["ts"]) + float(e["dur"])))
    return sorted(out)


def same_spans(spans, trace):
    """Whether the client's spans file holds the trace's spans (to its 1 ns rounding)."""
    mine = sorted((a, b) for a, b, _ in spans)
    return len(mine) == len(trace) and all(
        abs(a - c) < 0.002 and abs(b - d) < 0.002 for (a, b), (c, d) in zip(mine, trace))


def union(spans, lo, hi):
    cut = sorted((max(a, lo), min(b, hi)) for a, b, _ in spans if min(b, hi) > max(a, lo))
    merged = []
    for a, b in cut:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


def figures(wins):
    lo = max(s["started"] for _, s, _, _ in wins) * 1e6
    hi = min(s["ended"] for _, s, _, _ in wins) * 1e6
    unions = [union(spans, lo, hi) for _, _, spans, _ in wins]
    edges = sorted([(a, 1) for u in unions for a, _ in u] + [(b, -1) for u in unions for _, b in u])
    by_count = collections.Counter()
    count, at = 0, lo
    for t, d in edges:
        by_count[count] += max(0.0, t - at)
        at = max(at, t)
        count += d
    by_count[count] += max(0.0, hi - at)
    busy = [sum(b - a for a, b in u) for u in unions]
    fams = []
    for _, _, spans, _ in wins:
        f = collections.defaultdict(lambda: [0.0, 0])
        for a, b, name in spans:
            a, b = max(a, lo), min(b, hi)
            if b > a:
                f[family(name)][0] += b - a
                f[family(name)][1] += 1
        fams.append(f)
    return {"window_ms": (hi - lo) / 1000, "idle_ms": by_count[0] / 1000,
            "overlap_ms": sum(v for k, v in by_count.items() if k >= 2) / 1000,
            "busy_ms": [b / 1000 for b in busy], "families": fams}


def close(a, b, tolerance_ms=0.2):
    return abs(a - b) <= max(tolerance_ms, 0.001 * abs(b))


def check(run_dir):
    wins = windows(run_dir)
    if not wins:
        print("%s: FAIL: no window with kernels" % run_dir)
        return None
    got = figures(wins)
    with open(os.path.join(run_dir, "timeline.txt")) as f:
        text = f.read()
    problems = []
    head = re.search(r"over the same ([\d.]+) ms on one clock: the GPU ran none of their kernels "
                     r"([\d.]+) ms .* at once ([\d.]+) ms", text)
    if not head:
        problems.append("colo's timeline line not found")
    else:
        for what, theirs, mine in (("window", head.group(1), got["window_ms"]),
                                   ("idle", head.group(2), got["idle_ms"]),
                                   ("overlap", head.group(3), got["overlap_ms"])):
            if not close(float(theirs), mine, 0.1):
                problems.append("%s: colo %s ms, files %.1f ms" % (what, theirs, mine))
    for job, _, _, verified in wins:
        if verified is False:
            problems.append("%s: its spans file differs from its trace" % job)
    traced = sum(1 for w in wins if w[3])
    for (job, _, _, _), busy in zip(wins, got["busy_ms"]):
        row = re.search(r"^\s+%s\s+([\d.]+) ms" % re.escape(job), text, re.M)
        if not row or not close(float(row.group(1)), busy, 0.1):
            problems.append("%s busy: colo %s, files %.1f ms" % (job, row.group(1) if row else None, busy))
    print("%s: spans checked against the traces: %s" % (
        run_dir, "%d of %d" % (traced, len(wins)) if traced else "no (traces not kept)"))
    print("%s: %d jobs over %.1f ms: idle %.1f ms (%.1f%%), two or more at once %.1f ms (%.1f%%), "
          "busy %s: %s" % (run_dir, len(wins), got["window_ms"], got["idle_ms"],
                           100 * got["idle_ms"] / got["window_ms"], got["overlap_ms"],
                           100 * got["overlap_ms"] / got["window_ms"],
                           ", ".join("%s %.1f ms" % (j, b) for (j, _, _, _), b in zip(wins, got["busy_ms"])),
                           "PASS" if not problems else "FAIL: " + "; ".join(problems)))
    return got


def per_family(spans):
    """Per family: (summed kernel time in us, kernels), over the whole window."""
    f = collections.defaultdict(lambda: [0.0, 0])
    for a, b, name in spans:
        f[family(name)][0] += max(0.0, b - a)
        f[family(name)][1] += 1
    return f


def check_show(show_json, together_dir, alone_dir):
    """colo show's interference table against the same from the spans files."""
    with open(show_json) as fh:
        rows = json.load(fh).get("interference", [])
    beside = {job: spans for job, _, spans, _ in windows(together_dir)}
    alone_wins = windows(alone_dir)
    if not rows or not alone_wins:
        print("colo show's interference: FAIL: %s" % ("no table" if not rows else "no alone window"))
        return False
    alone = per_family(alone_wins[0][2])
    ok = True
    for row in rows:
        mine = per_family(beside.get(row["job"], []))
        problems = []
        for f in row["families"]:
            t_a, n_a = alone.get(f["family"], (0.0, 0))
            t_b, n_b = mine.get(f["family"], (0.0, 0))
            if n_a != f["calls_alone"] or n_b != f["calls_beside"] or not n_a or not n_b:
                problems.append("%s: calls %s/%s, files %d/%d" % (
                    f["family"], f["calls_alone"], f["calls_beside"], n_a, n_b))
            elif not (close(t_a / n_a / 1000, f["mean_us_alone"] / 1000, 0.0005) and
                      close(t_b / n_b / 1000, f["mean_us_beside"] / 1000, 0.0005)):
                problems.append("%s: mean %.2f/%.2f us, files %.2f/%.2f" % (
                    f["family"], f["mean_us_alone"], f["mean_us_beside"], t_a / n_a, t_b / n_b))
        print("colo show's interference, %s (window %s beside %d, alone window %s of %s): %d "
              "families, %s" % (row["job"], row["beside_window"], row["others"], row["alone_window"],
                                row["alone_job"], len(row["families"]),
                                "PASS" if not problems else "FAIL: " + "; ".join(problems)))
        for f in row["families"][:5]:
            print("    %-14s %10.2f us alone %10.2f us beside %6.2fx" % (
                f["family"], f["mean_us_alone"], f["mean_us_beside"], f["slowdown"]))
        ok = ok and not problems
    return ok


def main():
    together = check(sys.argv[1])
    alone = check(sys.argv[2]) if len(sys.argv) > 2 else None
    if len(sys.argv) > 3 and not check_show(sys.argv[3], sys.argv[1], sys.argv[2]):
        return 1
    if not together or not alone:
        return 0 if together else 1
    print("kernel time per kernel by family: beside two others (mean of the three jobs) over alone")
    print("%-14s %14s %14s %10s %10s" % ("FAMILY", "ALONE us", "BESIDE us", "SLOWDOWN", "SHARE"))
    total = sum(t for t, _ in alone["families"][0].values())
    for fam, (t_alone, n_alone) in sorted(alone["families"][0].items(), key=lambda kv: -kv[1][0]):
        t = sum(f[fam][0] for f in together["families"] if fam in f)
        n = sum(f[fam][1] for f in together["families"] if fam in f)
        if not n or not n_alone:
            continue
        per_alone, per_beside = t_alone / n_alone, t / n
        print("%-14s %14.2f %14.2f %9.2fx %9.1f%%" % (fam, per_alone, per_beside,
                                                     per_beside / per_alone, 100 * t_alone / total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
