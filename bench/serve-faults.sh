#!/usr/bin/env bash
# Issue 11's fault benchmark, against one `colo serve --mechanism mps` under
# the default policy (auto):
#   (a) 8 recommender jobs (bench/dlrm.py) with no memory hints, whose memory
#       together is 1.5 times the GPU's: none may be lost (colo measures the
#       first, then packs by measured memory; an out-of-memory end would be
#       retried with fewer neighbours);
#   (b) 4 resnet26 jobs running under MPS when this script SIGKILLs colo's
#       MPS server (nvidia-cuda-mps-server): colo names the failure, restarts
#       the daemon and runs the jobs again; all must end ok.
# Each is checked from colo (`colo wait`, GET /api/jobs/ID, the service's log)
# and from the jobs' own logs. About 4 minutes on an H100 80GB.
#
#   bench/serve-faults.sh RESULTS_DIR
#
# COLO=path/to/colo (default build-release/colo); BACKEND=sim runs it without
# a GPU (bench/sim_train.py; the fake MPS control program, whose daemon is
# killed in place of the server; the simulated GPU never runs out of memory).
# Leaves in RESULTS_DIR: summary.txt, the job files, the service's log and job
# logs (service/), colo.db, machine.txt. Exit status 1 unless both hold.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?usage: bench/serve-faults.sh RESULTS_DIR}"
exec python3 bench/serve_bench.py faults "$OUT" --colo "${COLO:-build-release/colo}" \
  --backend "${BACKEND:-nvml}" --scale "${SCALE:-1}"
