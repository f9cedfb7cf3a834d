#!/usr/bin/env bash
# Every policy of `colo simulate` over a large queue on many simulated GPUs:
# the wall time and peak memory of each, one policy per command (issue 15:
# fixed-degree policies once scaled quadratically). Needs no GPU.
#
#   bench/scale_policies.sh OUTPUT_DIR [JOB_FILE] [GPUS]
#     JOB_FILE default bench/scale/queue-100k.toml, GPUS default 64;
#     COLO=path/to/colo (default build-release/colo)
set -euo pipefail
cd "$(dirname "$0")/.."
COLO="${COLO:-build-release/colo}"
OUT_DIR="${1:?usage: bench/scale_policies.sh OUTPUT_DIR [JOB_FILE] [GPUS]}"
JOB_FILE="${2:-bench/scale/queue-100k.toml}"
GPUS="${3:-64}"
if [ ! -x "$COLO" ]; then
  echo "bench/scale_policies.sh: no $COLO; build it: cmake -S . -B build-release -G Ninja" \
    "-DCMAKE_BUILD_TYPE=Release -DCOLO_BUILD_TESTS=OFF && cmake --build build-release" >&2
  exit 2
fi
mkdir -p "$OUT_DIR"
out="$OUT_DIR/scale-policies-$(basename "$JOB_FILE" .toml)-${GPUS}gpus.txt"
{
  echo "job file: $JOB_FILE, $GPUS simulated GPUs, colo: $COLO"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  printf '%-10s %10s %12s  %s\n' POLICY WALL_S PEAK_RSS_MB RESULT
  for policy in exclusive naive-all mps-all mps-2 mps-4 mps-8 mps-16 auto; do
    /usr/bin/time -f '%e %M' -o "$OUT_DIR/.time" \
      "$COLO" simulate "$JOB_FILE" --gpus "$GPUS" --policies "$policy" --no-store \
      >"$OUT_DIR/.sim" 2>&1 || true
    read -r wall rss_kb <"$OUT_DIR/.time"
    result=$(grep -E "^$policy " "$OUT_DIR/.sim" | awk '{print "makespan " $2 ", ok " $6 ", failed " $7}')
    printf '%-10s %10s %12d  %s\n' "$policy" "$wall" $((rss_kb / 1024)) "$result"
  done
  rm -f "$OUT_DIR/.time" "$OUT_DIR/.sim"
} 2>&1 | tee "$out"
