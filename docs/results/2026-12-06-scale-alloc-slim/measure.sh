#!/usr/bin/env bash
# Writes the raw measurements beside this script: perf-stat.txt (CPU time
# and page faults, ROUNDS rounds, before and after one after the other for
# each case), rss.txt (peak RSS, /usr/bin/time -v) and heaptrack.txt
# (allocation calls and peak heap, heaptrack_print's summary); into OUTDIR
# instead when given.
#   measure.sh BEFORE_COLO AFTER_COLO [ROUNDS [OUTDIR]]     (from the repository root)
set -euo pipefail
before=$1 after=$2 rounds=${3:-3}
out=${4:-$(dirname "$0")}
mkdir -p "$out"
cases="grid-1k grid-10k grid-1k-unhinted grid-10k-unhinted"
run() { "$1" simulate "bench/scale/$2.toml" --gpu-count 8 --policies auto; }
{
  for r in $(seq "$rounds"); do
    for c in $cases; do
      for b in before after; do
        bin=$before; [ "$b" = after ] && bin=$after
        echo "== round $r $c $b $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
        perf stat -r 10 -e task-clock,instructions,page-faults taskset -c 1 \
          "$bin" simulate "bench/scale/$c.toml" --gpu-count 8 --policies auto 2>&1 >/dev/null |
          grep -E "task-clock|instructions|page-faults"
      done
    done
  done
} >"$out/perf-stat.txt"
{
  for c in $cases; do
    for b in before after; do
      bin=$before; [ "$b" = after ] && bin=$after
      echo "== $c $b"
      /usr/bin/time -v taskset -c 1 "$bin" simulate "bench/scale/$c.toml" --gpu-count 8 \
        --policies auto 2>&1 >/dev/null | grep -E "Maximum resident|Minor"
    done
  done
} >"$out/rss.txt"
tmp=$(mktemp -d)
{
  for c in grid-1k grid-10k grid-1k-unhinted grid-10k-unhinted; do
    for b in before after; do
      bin=$before; [ "$b" = after ] && bin=$after
      echo "== $c $b"
      heaptrack -o "$tmp/h" "$bin" simulate "bench/scale/$c.toml" --gpu-count 8 \
        --policies auto >/dev/null 2>&1
      heaptrack_print -f "$tmp/h.zst" 2>/dev/null | grep -E "^calls to allocation|^peak heap"
      rm -f "$tmp/h.zst"
    done
  done
} >"$out/heaptrack.txt"
rm -rf "$tmp"
