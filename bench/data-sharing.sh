#!/usr/bin/env bash
# Issue 13's benchmark: one shared colo loader against K independent PyTorch
# DataLoaders, and against K independent colo loaders (the gain of sharing
# alone), under the same data-loading CPU budget, K = 1, 3, 7 trainers
# (ResNet-50 from timm on 224 px crops of a generated JPEG dataset), each
# configuration run by `colo run`. See bench/data_sharing.py for what is
# measured and checked.
#
#   bench/data-sharing.sh RESULTS_DIR
#
# Environment (defaults for an H100 machine with 16 cores, about 9 minutes):
#   COLO=build-release/colo  PYTHON=python3  DEVICE=cuda  BACKEND=nvml
#   MODEL=resnet50  KS="1 3 7"  BATCH=64  CROP=224
#   IMAGES=10000  IMAGE_SIZE=400  CLASSES=100  DATA_DIR=/tmp/colo-data-sharing-...
#   LOADER_CPUS=0-3 (the data-loading budget)  TRAINER_CPUS=4-15
#   WARMUP=8  DURATION=25  TAIL=2 (seconds per configuration)  COLO_ARGS=
#   MODES="independent colo-each shared" (a subset runs only those)
#   RING=bytes of the shared loader's ring (default: colo's, 512 MiB per
#   trainer; with RING set, each colo-each loader gets RING/K)
# A CPU-only check of the logic (what CI-like machines can run):
#   DEVICE=cpu BACKEND=sim MODEL=tiny KS="1 3" IMAGES=300 IMAGE_SIZE=64 CROP=32 \
#   BATCH=16 WARMUP=1 DURATION=4 bench/data-sharing.sh /tmp/ds
# Leaves in RESULTS_DIR: summary.txt and summary.json (every figure and its
# check), colo.db, and per configuration k<K>-<mode>/ (job file, colo's
# output, trainers' logs, colo show --json, nvidia-smi dmon).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" bench/data_sharing.py "${1:?usage: bench/data-sharing.sh RESULTS_DIR}"
