#!/usr/bin/env bash
# Issue 32's fair-share benchmark: two Unix users (this one and one it creates)
# send Poisson streams to one `colo serve` (a 24-job sweep against 6 single
# jobs of other models); first come, first served against fair share, each on
# a fresh store; Jain's index of their solo-equivalent shares while both had
# work, from colo and, independently, from the jobs' logs
# (bench/check-fairness.py). See bench/serve_fairness.py.
#
#   bench/serve-fairness.sh RESULTS_DIR
#
# Needs root and useradd. COLO=path/to/colo (default build-release/colo); BACKEND=sim runs
# it without a GPU (bench/sim_train.py; nothing measured); SPAN (30), SEED
# (32), EPOCHS (5), SCALE (1.0), MAX_PER_GPU (3), PASSES (calibrate,fcfs,fair-share).
# Leaves in RESULTS_DIR: summary.txt (the table and PASS or FAIL), plan.json,
# <pass>.json (per job: user, submission time, colo's start and end, its log;
# colo's usage once a second), each pass's service log, job logs and store,
# machine.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?usage: bench/serve-fairness.sh RESULTS_DIR}"
exec python3 bench/serve_fairness.py "$OUT" --colo "${COLO:-build-release/colo}" \
  --backend "${BACKEND:-nvml}" --span "${SPAN:-30}" --seed "${SEED:-32}" \
  --epochs "${EPOCHS:-5}" --scale "${SCALE:-1}" --max-per-gpu "${MAX_PER_GPU:-3}" \
  --passes "${PASSES:-calibrate,fcfs,fair-share}"
