#!/usr/bin/env bash
# Benchmark for `colo run`: seven identical ResNet-26 trainings (CIFAR-10-shaped
# synthetic data, batch 128, 5 epochs of 40960 samples) under exclusive, mps
# and naive, in one go on one GPU, so the ratios compare like with like. Each
# collocated run's steady speed-up is printed beside bench/verify-speedup.py's,
# computed from the jobs' logs alone with the exclusive run's jobs as the
# solo rate (bench/compare-speedups.py).
#
#   bench/resnet26x7.sh OUTPUT_DIR        (COLO=path/to/colo, default build-release/colo)
#
# Without a GPU: BACKEND=sim JOB_FILE=<a job file of bench/sim_train.py jobs>
# (and an MPS control program on PATH).
#
# Leaves in OUTPUT_DIR: colo.db (the run store), run-<mechanism>.txt (colo's
# own output), show-<mechanism>.json, compare.txt (colo beside the check),
# memory.txt (bench/memory_check.py) and machine.txt (GPU, driver, host).
set -uo pipefail
cd "$(dirname "$0")/.."
COLO="$(realpath -m "${COLO:-build-release/colo}")"
BACKEND="${BACKEND:-nvml}"
JOB_FILE="${JOB_FILE:-examples/resnet26x7.toml}"
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
declare -A run_of
for mechanism in exclusive mps naive; do
  echo "=== $mechanism"
  "$COLO" run "$JOB_FILE" --backend "$BACKEND" --mechanism "$mechanism" --plain --db "$DB" 2>&1 | tee "$OUT_DIR/run-$mechanism.txt"
  "$COLO" show --db "$DB" --json >"$OUT_DIR/show-$mechanism.json"
  run_of[$mechanism]=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["run"]["id"])' <"$OUT_DIR/show-$mechanism.json")
done
echo "=== colo beside bench/verify-speedup.py (solo rates: the exclusive run's jobs)"
python3 bench/compare-speedups.py --colo "$COLO" --db "$DB" --max-diff 10 \
  --pair "${run_of[exclusive]}" "${run_of[mps]}" --pair "${run_of[exclusive]}" "${run_of[naive]}" \
  | tee "$OUT_DIR/compare.txt"
python3 bench/memory_check.py "$DB" | tee "$OUT_DIR/memory.txt"
