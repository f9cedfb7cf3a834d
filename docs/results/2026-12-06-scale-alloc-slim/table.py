"""The tables of README.md from the raw output beside it alone:
perf-stat.txt (CPU time and page faults by round), rss.txt (peak RSS) and
heaptrack.txt (allocation calls and peak heap).

    python3 table.py [DIR]   (in this directory; DIR: where the raw output is, default .)"""
import os
import re
import statistics
import sys

os.chdir(sys.argv[1] if len(sys.argv) > 1 else ".")

text = open("perf-stat.txt").read()
runs = {}  # (round, case, binary) -> (ms, faults)
for m in re.finditer(r"== round (\d+) (\S+) (\S+) [^\n]*\n((?:(?!==)[^\n]*\n)*)", text):
    body = m[4]
    ms = float(re.search(r"([\d.]+) msec task-clock", body)[1])
    faults = int(re.search(r"([\d,]+)\s+page-faults", body)[1].replace(",", ""))
    runs[(m[1], m[2], m[3])] = (ms, faults)
rounds = sorted({r for r, _, _ in runs}, key=int)

print("CPU time (task-clock, mean of 10 runs) and growth 1k -> 10k, by round")
print("| grid | binary | 1k ms | 10k ms | growth by round | median growth |")
print("|---|---|---|---|---|---|")
for hint in ("", "-unhinted"):
    for binary in ("before", "after"):
        small = [runs[(r, "grid-1k" + hint, binary)][0] for r in rounds]
        large = [runs[(r, "grid-10k" + hint, binary)][0] for r in rounds]
        growth = [b / a for a, b in zip(small, large)]
        print(f"| {'unhinted' if hint else 'hinted'} | {binary} | "
              f"{min(small):.1f}-{max(small):.1f} | {min(large):.1f}-{max(large):.1f} | "
              f"{', '.join(f'{g:.1f}x' for g in growth)} | {statistics.median(growth):.1f}x |")

print()
print("Page faults (the same runs; the same in every round to within a few)")
print("| case | before | after | change |")
print("|---|---|---|---|")
for case in ("grid-1k", "grid-10k", "grid-1k-unhinted", "grid-10k-unhinted"):
    b = statistics.median(runs[(r, case, "before")][1] for r in rounds)
    a = statistics.median(runs[(r, case, "after")][1] for r in rounds)
    print(f"| {case} | {b:.0f} | {a:.0f} | {100 * (a - b) / b:+.0f}% |")

rss = {}
for m in re.finditer(r"== (\S+) (\S+)\n\s*Maximum resident set size \(kbytes\): (\d+)",
                     open("rss.txt").read()):
    rss[(m[1], m[2])] = int(m[3])
heap = {}
for m in re.finditer(r"== (\S+) (\S+)\ncalls to allocation functions: (\d+)[^\n]*\n"
                     r"peak heap memory consumption: ([\d.]+)([KMG])",
                     open("heaptrack.txt").read()):
    scale = {"K": 1e3, "M": 1e6, "G": 1e9}[m[5]]
    heap[(m[1], m[2])] = (int(m[3]), float(m[4]) * scale)

print()
print("Peak RSS (/usr/bin/time -v) and the heap (heaptrack): per run, and per queued point")
print("(the 10,000-point run's less the 1,000-point run's, over 9,000 points)")
print("| grid | binary | peak RSS 1k, 10k | peak heap 1k, 10k | allocations 1k, 10k | "
      "per point: heap bytes, allocations |")
print("|---|---|---|---|---|---|")
for hint in ("", "-unhinted"):
    for binary in ("before", "after"):
        s, l = "grid-1k" + hint, "grid-10k" + hint
        (cs, hs), (cl, hl) = heap[(s, binary)], heap[(l, binary)]
        print(f"| {'unhinted' if hint else 'hinted'} | {binary} | "
              f"{rss[(s, binary)] / 1024:.1f} MB, {rss[(l, binary)] / 1024:.1f} MB | "
              f"{hs / 1e6:.1f} MB, {hl / 1e6:.1f} MB | {cs:,}, {cl:,} | "
              f"{(hl - hs) / 9000:,.0f} B, {(cl - cs) / 9000:.0f} |")
