#!/usr/bin/env bash
# Issues 11 and 22's arrival benchmark: jobs of the study's models submitted to
# `colo serve` with `colo submit` at Poisson-spaced times, three passes with the
# same arrivals, each on a store of its own unless named warm:
#
#   fcfs-exclusive  first come, first served, one job on the GPU at a time
#   auto-cold       the default service (auto policy over MPS) on a fresh
#                   store: it has never seen these jobs (the common case on a
#                   shared machine)
#   auto-warm       the default service again on auto-cold's store, which now
#                   knows every job
#
# Mean job completion time (submission to end) and makespan (first submission
# to last end) of each, from colo (`colo wait`) and, independently, from this
# script's submission clock and the last epoch line each job printed; and the
# normalized throughput of the auto passes, from colo and recomputed from the
# jobs' logs by bench/verify-speedup.py (solo rates: the exclusive pass's
# logs). MIX=cold (default): two each of resnet26, resnet50, resnet152 and
# cait_xxs24 (8 jobs, about 20 s each alone, mostly start-up) over SPAN=33 s;
# MIX=study: issue 11's 12 jobs over SPAN=120 s.
#
#   bench/serve-poisson.sh RESULTS_DIR
#
# COLO=path/to/colo (default build-release/colo); BACKEND=sim runs it without
# a GPU (bench/sim_train.py, the fake MPS control program; nothing measured);
# COLO_SERVE_ARGS adds flags to every `colo serve` ("--gpus 0");
# SPAN=seconds, SEED (11), SCALE (samples per epoch, 1.0), EPOCHS (2), PASSES
# (a comma-separated subset). Leaves in RESULTS_DIR: summary.txt (the table and
# the criteria: cold mean JCT <= 0.5x and makespan <= 0.8x of FCFS, warm mean
# JCT <= 0.35x), <pass>.json and <pass>-jobs.txt (per job: submission, state,
# attempts, both JCTs, its log), check-<pass>.txt (verify-speedup.py), the job
# files, each service's log and job logs, the stores (fcfs-exclusive.db,
# auto.db), machine.txt. Exit status 1 when a job did not end ok or its log is
# incomplete.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?usage: bench/serve-poisson.sh RESULTS_DIR}"
MIX="${MIX:-cold}"
default_span=33
[ "$MIX" = study ] && default_span=120
exec python3 bench/serve_bench.py poisson "$OUT" --colo "${COLO:-build-release/colo}" \
  --backend "${BACKEND:-nvml}" --mix "$MIX" --span "${SPAN:-$default_span}" \
  --seed "${SEED:-11}" --scale "${SCALE:-1}" --epochs "${EPOCHS:-2}" --passes "${PASSES:-}"
