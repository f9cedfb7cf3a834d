"""The growth table of README.md from perf-stat.txt alone (and the huge-page
figures from huge-pages.txt): each round's
task-clock of the 10,000-point grid over the 1,000-point one, per binary.

    python3 growth.py   (in this directory)"""
import pathlib
import re
import runpy

# perf-stat.txt: the same layout as the merge before this one's, and the same table.
runpy.run_path(str(pathlib.Path(__file__).resolve().parent.parent /
                   "2026-12-06-scale-growth-merged" / "growth.py"))

# huge-pages.txt: the after binary with glibc's huge-page tunable off (0) and on (1).
text = open("huge-pages.txt").read()
hp = {(m[1], m[2]): float(m[3]) for m in re.finditer(
    r"== GLIBC_TUNABLES=glibc.malloc.hugetlb=(\d) (\S+)\n\s+([\d.]+) msec task-clock", text)}
for hint in ("", "-unhinted"):
    for on in "01":
        small, large = hp[(on, "grid-1k" + hint)], hp[(on, "grid-10k" + hint)]
        print(f"{'unhinted' if hint else 'hinted':8} hugetlb={on} "
              f"{small:.1f} -> {large:.1f} ms = {large / small:.1f}x")
