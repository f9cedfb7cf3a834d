#!/usr/bin/env bash
# A profiling window's trace, downloaded from `colo serve`'s HTTP API as the
# dashboard's link does (bench/serve_bench.py trace-download): JOBS resnet26
# trainings under MPS, each with a torch window of 20 steps after its first
# epoch; each trace fetched from GET /api/jobs/ID/profiles/N/trace and
# compared, byte for byte, with the file its job wrote (no colo code in the
# check); the service's peak RSS before and after (the file is streamed).
#
#   bench/serve-trace-download.sh RESULTS_DIR   (COLO=build-release/colo,
#                                                BACKEND=nvml|sim, JOBS=2, PROFILE=the
#                                                job file's profile, default
#                                                '{ tool = "torch", after_epoch = 1, steps = 20 }')
# BACKEND=sim: the jobs write stand-in traces; nothing it prints is measured.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?usage: bench/serve-trace-download.sh RESULTS_DIR}"
default_profile='{ tool = "torch", after_epoch = 1, steps = 20 }'
exec python3 bench/serve_bench.py trace-download "$OUT" --colo "${COLO:-build-release/colo}" \
  --backend "${BACKEND:-nvml}" --jobs "${JOBS:-2}" --profile "${PROFILE:-$default_profile}"
