#!/usr/bin/env bash
# Issue 4's scale benchmark: the auto scheduler over 100,000 queued jobs on 8
# simulated GPUs (bench/scale/queue-100k.toml), through `colo simulate`, which
# times the scheduler's own work per event. Needs no GPU. Keeps the output,
# the command and the machine in OUTPUT_DIR.
#
#   bench/scale.sh OUTPUT_DIR          (COLO=path/to/colo; default build-release/colo)
set -euo pipefail
cd "$(dirname "$0")/.."
COLO="${COLO:-build-release/colo}"
OUT_DIR="${1:?usage: bench/scale.sh OUTPUT_DIR}"
if [ ! -x "$COLO" ]; then
  echo "bench/scale.sh: no $COLO; build it: cmake -S . -B build-release -G Ninja" \
    "-DCMAKE_BUILD_TYPE=Release -DCOLO_BUILD_TESTS=OFF && cmake --build build-release" >&2
  exit 2
fi
mkdir -p "$OUT_DIR"
cmd=("$COLO" simulate bench/scale/queue-100k.toml --gpu-count 8 --policies auto)
{
  echo "command: ${cmd[*]}"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  start=$(date +%s.%N)
  "${cmd[@]}"
  end=$(date +%s.%N)
  echo "wall time of the whole command: $(echo "$end - $start" | bc) s"
} 2>&1 | tee "$OUT_DIR/scale.txt"
