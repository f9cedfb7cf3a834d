#!/usr/bin/env bash
# Issue 11's two-GPU benchmark: a sweep of 14 resnet26 trainings (CIFAR-10
# shapes, 4 epochs) submitted at once with `colo submit` to the default
# `colo serve` (auto over MPS) on every GPU of the machine. Every GPU must run
# some of them. Each job prints the CUDA_VISIBLE_DEVICES it was started with,
# so the check reads each job's GPU from the job's own log beside colo's
# record. Needs two or more GPUs (device kind nvidia-h200-x2); about 2
# minutes there.
#
#   bench/serve-spread.sh RESULTS_DIR
#
# COLO=path/to/colo (default build-release/colo); BACKEND=sim runs it without a
# GPU on 2 simulated GPUs (bench/sim_train.py, the fake MPS control program);
# JOBS (14), EPOCHS (4), SCALE (samples per epoch, 1.0).
# Leaves in RESULTS_DIR: summary.txt, sweep.toml, the service's log and job
# logs (service/), colo.db, machine.txt. Exit status 1 unless it passes.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?usage: bench/serve-spread.sh RESULTS_DIR}"
exec python3 bench/serve_bench.py spread "$OUT" --colo "${COLO:-build-release/colo}" \
  --backend "${BACKEND:-nvml}" --jobs "${JOBS:-14}" --epochs "${EPOCHS:-4}" \
  --scale "${SCALE:-1}"
