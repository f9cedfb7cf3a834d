#!/usr/bin/env bash
# Issue 31's GPU benchmark, peaceful sharing under MPS: one job's device-side
# assert must not cost its neighbours (neighbour-assert, REPEATS=5 pairs of
# baseline and fault runs), a stalled job is found and run again (stall), and
# a gang whose rank crashed runs again whole (gang-rank-exit, two GPUs). See
# bench/faults.py for what runs, bench/check-faults.py for the independent
# check from the jobs' logs. `all` (neighbour-assert, then stall) takes about
# 8 minutes on an H100.
#
#   bench/faults.sh all|neighbour-assert|stall|gang-rank-exit RESULTS_DIR [--repeats N]
#
# Environment: COLO=build-release/colo (else build/colo)  BACKEND=nvml|sim  PYTHON=python3
#   DEVICE=cuda  MODEL=resnet26  BATCH=128  EPOCHS=12  EPOCH_SAMPLES=12800  REPEATS=5
#   BAD_EPOCH=3  MAKESPAN_RATIO=1.5  POLICY=auto|fixed  STALL_EPOCHS=8  STALL_AFTER=2
#   STALL_FLOOR_S=60  STALL_CASE_TIMEOUT_S=300  GANG_MODEL=resnet26  GANG_EPOCHS=5
#   EXIT_EPOCH=2  LAUNCHER="$PYTHON -m torch.distributed.run --standalone"
#   CASE_TIMEOUT_S=300  TIME_BUDGET_S=540  ASSERT_PATTERN=Assertion
# A CPU-only check of the logic (Debian's CPU torch, a stand-in timm that
# bench/faults.py writes, bench/launch_ranks.py for torchrun, the fake MPS
# control program):
#   BACKEND=sim PYTHON=/usr/bin/python3 bench/faults.sh all /tmp/faults
# Leaves in RESULTS_DIR/<case>/: the job file, colo's stdout and stderr, the
# jobs' logs, the store, the MPS daemon's logs, summary.txt. Exit status 1
# unless every check passed.
set -uo pipefail
cd "$(dirname "$0")/.."
usage="usage: bench/faults.sh all|neighbour-assert|stall|gang-rank-exit RESULTS_DIR"
: "${1:?$usage}" "${2:?$usage}"
exec python3 bench/faults.py "$@"
