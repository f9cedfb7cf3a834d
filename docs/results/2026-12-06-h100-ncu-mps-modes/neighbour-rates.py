"""The neighbour's median rate (samples over the time since its previous epoch
ended) over the epochs that began and ended inside each case's start..end,
from neighbour.log and each case's start/end files only.

    python3 neighbour-rates.py   (in this directory)"""
import re
import statistics

text = open("neighbour.log").read()
ep = [(int(m[1]), int(m[2]), float(m[3]))
      for m in re.finditer(r"epoch (\d+)/\d+: .*? (\d+) samples, ended at ([0-9.]+)", text)]
for case in ("control-client", "control-primary", "outside"):
    start, end = (float(open(f"{case}/{f}").read()) for f in ("start", "end"))
    rates = [ep[i][1] / (ep[i][2] - ep[i - 1][2]) for i in range(1, len(ep))
             if ep[i - 1][2] >= start and ep[i][2] <= end]
    print(f"{case}: {end - start:.1f} s, {len(rates)} neighbour epochs, median {statistics.median(rates):.0f} img/s")
