"""The tables of README.md from the raw output beside it alone:

- perf-stat.txt: each round's task-clock (CPU time) of the 10,000-point grid
  over the 1,000-point one, per binary, and the ranges over the rounds;
- callgrind.txt: instructions (callgrind's totals; perf counts none on this VM)
  and their growth, per binary.

    python3 growth.py   (in this directory)"""
import re
import statistics

text = open("perf-stat.txt").read()
ms = {(m[1], m[2], m[3]): float(m[4]) for m in re.finditer(
    r"== round (\d+) (\S+) (\S+) [^\n]*\n\s+([\d.,]+) msec task-clock", text.replace(",", ""))}
rounds = sorted({r for r, _, _ in ms})
print("CPU time (task-clock, mean of 10 runs), by round:")
summary = {}
for hint in ("", "-unhinted"):
    for binary in ("before", "after"):
        cells, small_all, large_all, growth_all = [], [], [], []
        for r in rounds:
            small, large = ms[(r, "grid-1k" + hint, binary)], ms[(r, "grid-10k" + hint, binary)]
            cells.append(f"{small:.1f} -> {large:.1f} ms = {large / small:.1f}x")
            small_all.append(small)
            large_all.append(large)
            growth_all.append(large / small)
        name = "unhinted" if hint else "hinted"
        print(f"  {name:8} {binary:6} " + "; ".join(cells))
        summary[(name, binary)] = (small_all, large_all, growth_all)
print()
print("| grid | before: 1k, 10k, growth (median) | after: 1k, 10k, growth (median) |"
      " 10k after/before, by round |")
print("|---|---|---|---|")
for name in ("hinted", "unhinted"):
    cells = []
    for binary in ("before", "after"):
        s, l, g = summary[(name, binary)]
        cells.append(f"{min(s):.1f}-{max(s):.1f} ms, {min(l):.1f}-{max(l):.1f} ms, "
                     f"**{min(g):.1f}-{max(g):.1f}x ({statistics.median(g):.1f}x)**")
    ratios = [a / b for a, b in zip(summary[(name, "after")][1], summary[(name, "before")][1])]
    cells.append(f"{100 * (min(ratios) - 1):+.0f}% to {100 * (max(ratios) - 1):+.0f}%")
    print(f"| {name} | " + " | ".join(cells) + " |")

print()
ir = {(m[1], m[2]): int(m[3].replace(",", "")) for m in re.finditer(
    r"== (\S+) (\S+)\n[^\n]*I\s+refs:\s+([\d,]+)", open("callgrind.txt").read())}
print("| grid | instructions before: 1k, 10k, growth | after: 1k, 10k, growth | 10k change |")
print("|---|---|---|---|")
for hint, name in (("", "hinted"), ("-unhinted", "unhinted")):
    cells = []
    for binary in ("before", "after"):
        small, large = ir[("grid-1k" + hint, binary)], ir[("grid-10k" + hint, binary)]
        cells.append(f"{small / 1e6:,.1f} M, {large / 1e6:,.1f} M, **{large / small:.2f}x**")
    change = ir[("grid-10k" + hint, "after")] / ir[("grid-10k" + hint, "before")] - 1
    print(f"| {name} | " + " | ".join(cells) + f" | {100 * change:+.1f}% |")
