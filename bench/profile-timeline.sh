#!/usr/bin/env bash
# Issue 36 on a GPU: one timeline across collocated jobs (`colo profile --gpu`).
# Three ResNet-26 trainings (bench/train.py, CIFAR-10-shaped synthetic data)
# share GPU 0 through MPS (fixed policy, three at once, a fresh store); once
# each has ended an epoch, `colo profile --gpu 0 --for 2s` asks all three for
# a torch window at once and draws their kernels on one clock. Then the same
# model alone (a second run, one job, in the same store) for its own window: the
# kernel families' time per kernel alone against beside the other two, as `colo
# show 1` pairs the windows itself (show.txt). Beside each figure, the
# check from the jobs' own files (bench/check-timeline.py: the kernels'
# spans and the windows' times, no colo code).
#
#   bench/profile-timeline.sh RESULTS_DIR   (COLO=build-release/colo, BACKEND=nvml, GPU=0)
# Traces (about 100 MB each) are deleted after the check, which also checks the
# spans against them; the spans
# (torch-kernels-N.tsv) and summaries stay. Then `colo report 1`'s profiling
# section against the same files (bench/check-report-windows.py).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/profile-timeline.sh RESULTS_DIR}
colo=$(realpath "${COLO:-build-release/colo}")
gpu=${GPU:-0}
mkdir -p "$out"
out=$(realpath "$out")
rm -rf "$out/together" "$out/alone" "$out/colo.db"*
train='"python3", "bench/train.py", "--model", "resnet26", "--dataset", "cifar10", "--batch-size", "128", "--epoch-samples", "20000", "--epochs", "12"'

# Runs `jobs` copies of the training under MPS on GPU $gpu in DIR, asks every
# job on it for a window once each ended an epoch, and waits for the run.
profiled_run() {  # DIR JOBS RUN (its id in the shared store)
  local dir=$1 jobs=$2 id=$3
  mkdir -p "$dir"
  export COLO_HOME=$dir/home
  {
    echo "[defaults]"
    echo "workdir = \"$PWD\""
    echo 'env = { PYTHONUNBUFFERED = "1" }'
    for i in $(seq 1 "$jobs"); do printf '[[job]]\nname = "r26-%s"\ncommand = [%s]\n' "$i" "$train"; done
  } >"$dir/jobs.toml"
  local db=(--db "$out/colo.db")  # one store: colo show pairs run 1's windows with run 2's alone
  "$colo" run "$dir/jobs.toml" --backend "${BACKEND:-nvml}" --gpus "$gpu" --mechanism mps \
    --policy fixed --max-per-gpu 3 --plain "${db[@]}" --logs "$dir/logs" >"$dir/run.txt" 2>&1 &
  local run=$!
  for _ in $(seq 1 480); do
    ended=$("$colo" show "$id" --json "${db[@]}" 2>/dev/null | python3 -c 'import json, sys
j = json.load(sys.stdin)
print(sum(1 for x in j["jobs"] if (x.get("epochs") or 0) >= 1))' 2>/dev/null || echo 0)
    [ "${ended:-0}" -ge "$jobs" ] && break
    sleep 0.5
  done
  "$colo" profile --gpu "$gpu" --run "$id" --for 2s --wait 180s "${db[@]}" >"$dir/timeline.txt" 2>&1 || true
  cat "$dir/timeline.txt"
  wait "$run" || true
  tail -n 12 "$dir/run.txt"
}

{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true
  python3 -c 'import torch; print("torch", torch.__version__)' 2>/dev/null || true
} | tee "$out/gpu.txt"
echo "== three together"
profiled_run "$out/together" 3 1
echo "== one alone"
profiled_run "$out/alone" 1 2
echo "== colo show 1: each job's kernels beside the others against the run alone, per family"
"$colo" show 1 --db "$out/colo.db" >"$out/show.txt" 2>&1 || true
"$colo" show 1 --json --db "$out/colo.db" >"$out/show.json" 2>/dev/null || true
sed -n '/Interference by kernel family/,$p' "$out/show.txt"
echo "== colo report 1: the same windows and table in the report"
rm -rf "$out/report"
"$colo" report 1 --no-png --out "$out/report" --db "$out/colo.db" >"$out/report.txt" 2>&1 || true
echo "== the check, from the jobs' own files (bench/check-timeline.py, bench/check-report-windows.py)"
python3 bench/check-timeline.py "$out/together" "$out/alone" "$out/show.json" | tee "$out/check.txt"
python3 bench/check-report-windows.py "$out/report" "$out/together/logs" "$out/show.txt" |
  tee -a "$out/check.txt"
python3 bench/check-profile-rates.py "$out"/together/logs/*/1/*.profile/torch-summary-*.json \
  "$out"/alone/logs/*/2/*.profile/torch-summary-*.json | tee -a "$out/check.txt"
# The traces only now, after the check read them.
for dir in "$out/together" "$out/alone"; do
  find "$dir/logs" -name 'torch-trace-*.json' -printf '%s %p\n' >"$dir/traces.txt" || true
  find "$dir/logs" -name 'torch-trace-*.json' -delete || true
done
! grep -q FAIL "$out/check.txt"
