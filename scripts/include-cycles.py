#!/usr/bin/env python3
"""Fails on an include cycle between the units of one folder under src/.

A unit is a header and its source taken together (src/sched/profile.h and
src/sched/profile.cc are the unit sched/profile). Unit A depends on unit B of
the same folder when either file of A has `#include "dir/B.h"`. A cycle of
such dependencies (figures.h includes text_report.h, text_report.cc includes
figures.h) means neither unit can be read, tested or changed without the
other: a factory or a shared header in a unit of its own makes the arrows run
one way. Includes across folders are the CMake libraries' business, not
checked here.

  scripts/include-cycles.py           each cycle with the lines that make it; exit 1 if any
  scripts/include-cycles.py --edges   every edge between the units of a folder, then the check
"""
import argparse
import os
import re
import signal
import sys
from collections import defaultdict, deque

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_SUFFIXES = (".h", ".cc")


def unit_of(path):
    """src/sched/profile.cc -> sched/profile (relative to src/, suffix dropped)."""
    return os.path.splitext(path)[0]


def read_edges(src):
    """{unit: {dependency: [(file, line number), ...]}} within each folder."""
    edges = defaultdict(lambda: defaultdict(list))
    units = set()
    for root, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.relpath(os.path.join(root, name), src)
            unit = unit_of(path)
            units.add(unit)
            folder = os.path.dirname(path)
            with open(os.path.join(src, path), encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    included = m.group(1)
                    if os.path.dirname(included) != folder or not included.endswith(".h"):
                        continue
                    dependency = unit_of(included)
                    if dependency != unit:
                        edges[unit][dependency].append((path, number))
    return units, edges


def strongly_connected(units, edges):
    """Tarjan's algorithm, iteratively: the components of more than one unit."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in sorted(units):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def shortest_cycle(start, members, edges):
    """The shortest path from `start` back to itself inside the component."""
    parents = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(edges[node]):
            if nxt not in members:
                continue
            if nxt == start:
                path = [node]
                while parents[path[-1]] is not None:
                    path.append(parents[path[-1]])
                return list(reversed(path)) + [start]
            if nxt not in parents:
                parents[nxt] = node
                queue.append(nxt)
    return [start]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", action="store_true",
                        help="list every edge between the units of a folder")
    parser.add_argument("--src", default=os.path.join(os.path.dirname(__file__), "..", "src"),
                        help="the source tree (default: src/ of this checkout)")
    args = parser.parse_args()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends it quietly
    units, edges = read_edges(args.src)
    edge_count = sum(len(deps) for deps in edges.values())
    if args.edges:
        for unit in sorted(edges):
            for dependency in sorted(edges[unit]):
                where = ", ".join(f"{f}:{n}" for f, n in edges[unit][dependency])
                print(f"{unit} -> {dependency}  ({where})")
    components = strongly_connected(units, edges)
    for members in components:
        cycle = shortest_cycle(members[0], set(members), edges)
        print(f"include-cycles: cycle: {' -> '.join(cycle)}")
        for a, b in zip(cycle, cycle[1:]):
            for f, n in edges[a][b]:
                print(f"  src/{f}:{n} includes {b}.h")
        if len(members) > len(cycle) - 1:
            print(f"  (and more: {', '.join(members)} all reach one another)")
    if components:
        print(f"include-cycles: {len(components)} cycle(s) between the units of a folder; "
              "move what both sides need into a unit of its own (a factory, a shared header) "
              "so that the includes run one way", file=sys.stderr)
        return 1
    print(f"include-cycles: no cycle between the units of a folder "
          f"({len(units)} units, {edge_count} edges within folders)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
