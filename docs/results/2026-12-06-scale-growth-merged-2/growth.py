"""The growth table of README.md from perf-stat.txt alone (and the huge-page
figures from huge-pages.txt): each round's
task-clock of the 10,000-point grid over the 1,000-point one, per binary.

    python3 growth.py   (in this directory)"""
import re

text = open("perf-stat.txt").read()
ms = {(m[1], m[2], m[3]): float(m[4]) for m in re.finditer(
    r"== round (\d) (\S+) (\S+)\n\s+([\d.]+) msec task-clock", text)}
for hint in ("", "-unhinted"):
    for binary in ("before", "after"):
        cells = []
        for r in "123":
            small, large = ms[(r, "grid-1k" + hint, binary)], ms[(r, "grid-10k" + hint, binary)]
            cells.append(f"{small:.1f} -> {large:.1f} ms = {large / small:.1f}x")
        print(f"{'unhinted' if hint else 'hinted':8} {binary:6} " + "; ".join(cells))

# huge-pages.txt: the after binary with glibc's huge-page tunable off (0) and on (1).
text = open("huge-pages.txt").read()
hp = {(m[1], m[2]): float(m[3]) for m in re.finditer(
    r"== GLIBC_TUNABLES=glibc.malloc.hugetlb=(\d) (\S+)\n\s+([\d.]+) msec task-clock", text)}
for hint in ("", "-unhinted"):
    for on in "01":
        small, large = hp[(on, "grid-1k" + hint)], hp[(on, "grid-10k" + hint)]
        print(f"{'unhinted' if hint else 'hinted':8} hugetlb={on} "
              f"{small:.1f} -> {large:.1f} ms = {large / small:.1f}x")
