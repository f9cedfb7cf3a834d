#!/usr/bin/env bash
# Benchmark for `colo run`: seven identical ResNet-26 trainings (CIFAR-10-shaped
# synthetic data, batch 128, 3 epochs of 80000 samples) under exclusive, mps
# and naive, in one go on one GPU, so the ratios compare like with like.
#
#   bench/resnet26x7.sh OUTPUT_DIR        (COLO=path/to/colo to use another binary)
#
# Leaves in OUTPUT_DIR: colo.db (the run store), run-<mechanism>.txt (colo's
# own output), show-<mechanism>.json, memory.txt (bench/memory_check.py) and
# machine.txt (GPU, driver, host).
set -uo pipefail
cd "$(dirname "$0")/.."
COLO="${COLO:-build/colo}"
OUT_DIR="$(realpath -m "${1:?usage: bench/resnet26x7.sh OUTPUT_DIR}")"
mkdir -p "$OUT_DIR"
export COLO_HOME="$OUT_DIR/home"
DB="$OUT_DIR/colo.db"
{
  date -u +"%Y-%m-%d %H:%M UTC"
  nvidia-smi --query-gpu=name,memory.total,driver_version,mig.mode.current --format=csv,noheader
  echo "cpus: $(nproc)"
  python3 -c 'import torch, timm; print("torch", torch.__version__, "timm", timm.__version__)'
} >"$OUT_DIR/machine.txt" 2>&1
for mechanism in exclusive mps naive; do
  echo "=== $mechanism"
  "$COLO" run examples/resnet26x7.toml --mechanism "$mechanism" --plain --db "$DB" 2>&1 | tee "$OUT_DIR/run-$mechanism.txt"
  "$COLO" show --db "$DB" --json >"$OUT_DIR/show-$mechanism.json"
done
python3 bench/memory_check.py "$DB" | tee "$OUT_DIR/memory.txt"
