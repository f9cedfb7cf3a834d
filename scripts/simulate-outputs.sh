#!/usr/bin/env bash
# Writes `colo simulate` output for every job file in bench/policies/ and
# examples/ on 1 and 4 GPUs (no store: hints and defaults only, so the output
# depends on the code alone) into OUTDIR as BASENAME.g1.txt / BASENAME.g4.txt,
# without the line that times the scheduler itself. A refactor must leave them
# byte-identical:
#   scripts/simulate-outputs.sh OLD/colo /tmp/before
#   scripts/simulate-outputs.sh build/colo /tmp/after && diff -r /tmp/before /tmp/after
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: scripts/simulate-outputs.sh COLO OUTDIR" >&2; exit 2; }
colo=$1 out=$2
cd "$(dirname "$0")/.."
mkdir -p "$out"
for f in bench/policies/*.toml examples/*.toml; do
  for g in 1 4; do
    "$colo" simulate "$f" --gpu-count "$g" --no-store 2>&1 | grep -v '  auto scheduler: ' \
      > "$out/$(basename "$f" .toml).g$g.txt" || true
  done
done
echo "simulate-outputs: $(ls "$out" | wc -l) outputs in $out"
