#!/usr/bin/env python3
"""Recomputes the growth table from samples.txt (run.sh's raw lines), and nothing else.

Each line: round, sample, build, case, CPU seconds, wall seconds, peak KB, as
bench/cpu-of.py read them from the kernel. Per round and build, the median CPU
time of each case, and the growth from 1,000 to 10,000 points (the 10,000-point
median over the 1,000-point median), hinted and unhinted.

    python3 growth.py [samples.txt [perf-stat.txt]]

perf-stat.txt (optional): lines "round build case mean-ms" of `perf stat -r 10`
task-clock means; printed as the growth of the means, beside the medians.
"""

import statistics
import sys
from collections import defaultdict


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "samples.txt"
    cpu = defaultdict(list)  # (round, build, case) -> CPU seconds
    rss = defaultdict(list)
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        rnd, _, build, case, cpu_s, _, kb = line.split()
        cpu[(rnd, build, case)].append(float(cpu_s))
        rss[(build, case)].append(int(kb))
    rounds = sorted({k[0] for k in cpu})
    print("| round | build | grid | 1k median ms | 10k median ms | growth | samples |")
    print("|---|---|---|---|---|---|---|")
    growths = defaultdict(list)
    for rnd in rounds:
        for build in ("before", "after"):
            for grid, small, large in (("hinted", "grid-1k", "grid-10k"),
                                       ("unhinted", "grid-1k-unhinted", "grid-10k-unhinted")):
                a = cpu[(rnd, build, small)]
                b = cpu[(rnd, build, large)]
                g = statistics.median(b) / statistics.median(a)
                growths[(build, grid)].append(g)
                print(f"| {rnd} | {build} | {grid} | {1000 * statistics.median(a):.1f} | "
                      f"{1000 * statistics.median(b):.1f} | {g:.1f}x | {len(a)}, {len(b)} |")
    print()
    for (build, grid), gs in sorted(growths.items()):
        print(f"{build} {grid}: growth {min(gs):.1f}-{max(gs):.1f}x over {len(gs)} rounds")
    for (build, case), kbs in sorted(rss.items()):
        print(f"{build} {case}: peak RSS median {statistics.median(kbs) / 1024:.1f} MB")
    means_path = sys.argv[2] if len(sys.argv) > 2 else "perf-stat.txt"
    try:
        lines = [l.split() for l in open(means_path) if l.strip() and not l.startswith("#")]
    except FileNotFoundError:
        return
    mean = {(r, b, c): float(ms) for r, b, c, ms in lines}
    print()
    print("perf stat -r 10 means (task-clock ms): growth by round")
    for build in ("before", "after"):
        for grid, small, large in (("hinted", "grid-1k", "grid-10k"),
                                   ("unhinted", "grid-1k-unhinted", "grid-10k-unhinted")):
            gs = [mean[(r, build, large)] / mean[(r, build, small)]
                  for r in sorted({k[0] for k in mean})]
            print(f"{build} {grid}: " + ", ".join(f"{g:.1f}x" for g in gs))


if __name__ == "__main__":
    main()
