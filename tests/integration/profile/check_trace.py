"""Recomputes a profiling window's top operator from its Chrome trace alone
(no torch, no colo code): each CPU operator's self time is its duration less
its direct children's on the same thread, summed by name. Prints the name
with the most self time."""
import collections
import json
import sys

data = json.load(open(sys.argv[1]))
events = data if isinstance(data, list) else data.get("traceEvents", [])
ops = [e for e in events if e.get("ph") == "X" and "dur" in e and str(e.get("cat", "cpu_op")) in ("cpu_op", "Operator", "") and not str(e.get("name", "")).startswith("ProfilerStep")]
by_thread = collections.defaultdict(list)
for e in ops:
    by_thread[(e.get("pid"), e.get("tid"))].append(e)
self_time = collections.Counter()
for events in by_thread.values():
    events.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
    stack = []
    for e in events:
        start, end = float(e["ts"]), float(e["ts"]) + float(e["dur"])
        while stack and float(stack[-1]["ts"]) + float(stack[-1]["dur"]) <= start:
            stack.pop()
        if stack:
            self_time[stack[-1]["name"]] -= float(e["dur"])
        self_time[e["name"]] += float(e["dur"])
        stack.append(e)
print(self_time.most_common(1)[0][0])
