#!/usr/bin/env bash
# Issue 11's arrival benchmark: 12 jobs (the study's small, medium and large
# models: resnet26 on CIFAR-10 shapes, resnet50 on 64 px ImageNet shapes,
# resnet152 on 224 px ImageNet shapes; and the dlrm recommender) submitted to
# `colo serve` with `colo submit` at Poisson-spaced times over about two
# minutes: first to a first-come-first-served exclusive service (one job on
# the GPU at a time), then, with the same arrivals, to the default service
# (auto policy over MPS, knowing the jobs from the first pass as it would
# from any earlier run). Mean job completion time (submission to end) and
# makespan (first submission to last end) of each, from colo (`colo wait`)
# and, independently, from this script's submission clock and the last epoch
# line each job printed. About 7 minutes on an H100 80GB (each job about 20 s
# alone, mostly start-up).
#
#   bench/serve-poisson.sh RESULTS_DIR
#
# COLO=path/to/colo (default build-release/colo); BACKEND=sim runs it without
# a GPU (bench/sim_train.py, the fake MPS control program; nothing measured);
# SPAN=seconds (120), SEED (11), SCALE (samples per epoch, 1.0), EPOCHS (2).
# Leaves in RESULTS_DIR: summary.txt (the table), <pass>.json and
# <pass>-jobs.txt (per job: submission, state, attempts, both JCTs, its log),
# the job files, each service's log and job logs, colo.db (both runs),
# machine.txt. Exit status 1 when a job did not end ok or its log is incomplete.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?usage: bench/serve-poisson.sh RESULTS_DIR}"
exec python3 bench/serve_bench.py poisson "$OUT" --colo "${COLO:-build-release/colo}" \
  --backend "${BACKEND:-nvml}" --span "${SPAN:-120}" --seed "${SEED:-11}" \
  --scale "${SCALE:-1}" --epochs "${EPOCHS:-2}"
