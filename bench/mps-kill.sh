#!/usr/bin/env bash
# Issue 25's GPU check: the MPS server (nvidia-cuda-mps-server) SIGKILLed
# while one resnet26 job is its only client, and again while three are, under
# `colo run` and under `colo serve`. Every job must end ok after a retry, colo
# must name the server's death (its pid) in the reason, and the jobs' own logs
# must show each one cut short and then run whole after the kill. About 5
# minutes on an H100.
#
#   bench/mps-kill.sh RESULTS_DIR
#
# COLO=path/to/colo (default build-release/colo); BACKEND=sim runs it without a
# GPU (bench/sim_train.py and the fake MPS control program, whose server is
# killed); KILL_EPOCHS=12; FRONT_ENDS=run,serve. Leaves in RESULTS_DIR:
# summary.txt, and per case (run-1, run-3, serve-1, serve-3) the job file,
# colo's output, the jobs' logs and the store. Exit status 1 unless all hold.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?usage: bench/mps-kill.sh RESULTS_DIR}"
exec python3 bench/serve_bench.py mps-kill "$OUT" --colo "${COLO:-build-release/colo}" \
  --backend "${BACKEND:-nvml}" --scale "${SCALE:-1}" --kill-epochs "${KILL_EPOCHS:-12}" \
  --front-ends "${FRONT_ENDS:-run,serve}"
