#!/usr/bin/env bash
# Growth from 1,000 to 10,000 grid points, two builds side by side (issue 59):
#   run.sh BEFORE_COLO AFTER_COLO OUT_FILE   (ROUNDS=3, SAMPLES=21, CPU=1)
# For each round and sample, every case once with each build, one after the
# other, pinned to one core; each run's CPU time (user + system), wall time and
# peak RSS come from bench/cpu-of.py (the kernel's count, by wait4), not from
# colo. Writes one line per run: round, sample, build, case, CPU s, wall s, KB.
set -euo pipefail
cd "$(dirname "$0")/../../.."
before=$1 after=$2 out=$3
rounds=${ROUNDS:-3} samples=${SAMPLES:-21} cpu=${CPU:-1}
cases="grid-1k grid-10k grid-1k-unhinted grid-10k-unhinted"
{
  echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), core $cpu"
  echo "# THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
  echo "# command: taskset -c $cpu COLO simulate bench/scale/CASE.toml --gpu-count 8 --policies auto --no-store"
} >"$out"
for r in $(seq 1 "$rounds"); do
  echo "# round $r: $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')" >>"$out"
  for s in $(seq 1 "$samples"); do
    for c in $cases; do
      for build in before after; do
        colo=$before
        [ "$build" = after ] && colo=$after
        line=$(bench/cpu-of.py taskset -c "$cpu" "$colo" simulate "bench/scale/$c.toml" --gpu-count 8 \
          --policies auto --no-store 2>&1 >/dev/null | grep '^cpu-of:')
        echo "$r $s $build $c $(sed -n 's/^cpu-of: \([0-9.]*\) s CPU.* \([0-9.]*\) s wall, \([0-9]*\) KB.*/\1 \2 \3/p' <<<"$line")" >>"$out"
      done
    done
  done
done
echo "# done: $(date -u +%H:%M:%S)" >>"$out"
