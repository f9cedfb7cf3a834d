#!/usr/bin/env bash
# Issue 58 on a GPU: a job under `tool = "ncu"` beside two others under MPS.
# Two passes on fresh stores, three ResNet-26 trainings (bench/train.py,
# CIFAR-10-shaped synthetic data) at once on one GPU under `colo run
# --mechanism mps --policy fixed --max-per-gpu 3`:
#   plain  no profiler: the neighbours' rates beside two plain jobs;
#   ncu    the jobs named in PROFILED (default: a) under `profile = { tool =
#          "ncu", steps = 10 }` (each an MPS client under ncu's `--mps client`
#          with ncu's control beside it, `colo ncu-mps-pair`), the others as before.
# Then bench/check-ncu-mps.py, from the jobs' own logs and the files on disk
# only: each profiled job trained all its epochs, its report exists, and the
# process its control attached to is its own; the other jobs' steady rates in
# the ncu pass are within 10% of theirs in the plain pass.
#
#   bench/profile-ncu-mps.sh RESULTS_DIR   (COLO=build/colo PYTHON=python3 EPOCHS=6 GPU=0 PROFILED=a)
# Leaves RESULTS_DIR/<pass>/{jobs.toml,run.txt,logs/,home/} and RESULTS_DIR/check.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/profile-ncu-mps.sh RESULTS_DIR}
colo=$(realpath "${COLO:-build/colo}")
py=${PYTHON:-python3}
epochs=${EPOCHS:-6}
profiled=" ${PROFILED:-a} "
command -v ncu >/dev/null || { echo "profile-ncu-mps: ncu is not on PATH" >&2; exit 2; }
mkdir -p "$out"
out=$(realpath "$out")
train="\"$py\", \"bench/train.py\", \"--model\", \"resnet26\", \"--dataset\", \"cifar10\", \"--batch-size\", \"128\", \"--epoch-samples\", \"32000\", \"--epochs\", \"$epochs\""
for pass in plain ncu; do
  dir=$out/$pass
  rm -rf "$dir" && mkdir -p "$dir"
  {
    echo "[defaults]"
    echo "workdir = \"$PWD\""
    echo 'env = { PYTHONUNBUFFERED = "1" }'
    for name in a b c; do
      printf '[[job]]\nname = "%s"\ncommand = [%s]\n' "$name" "$train"
      if [ "$pass" = ncu ] && [[ $profiled == *" $name "* ]]; then echo 'profile = { tool = "ncu", steps = 10 }'; fi
    done
  } >"$dir/jobs.toml"
  COLO_HOME=$dir/home COLO_LOCK_DIR=$dir/locks "$colo" run "$dir/jobs.toml" --gpus "${GPU:-0}" \
    --mechanism mps --policy fixed --max-per-gpu 3 --plain --db "$dir/colo.db" --logs "$dir/logs" \
    >"$dir/run.txt" 2>&1 || echo "colo run exited $? (pass $pass)" >>"$dir/run.txt"
done
python3 bench/check-ncu-mps.py "$out" | tee "$out/check.txt"
