#!/usr/bin/env bash
# Issue 23's GPU benchmark, on a machine with two GPUs (kind nvidia-h100-x2):
# a torchrun DDP training (resnet50, 2 ranks, NCCL) beside 4 one-GPU resnet26
# trainings under MPS, against the same jobs run one after another. See
# bench/gang_ddp.py for what runs, bench/check-gang.py for the independent
# check from the jobs' logs and nvidia-smi.
#
#   bench/gang-ddp.sh RESULTS_DIR
#
# Environment: COLO=build-release/colo  PYTHON=python3  BACKEND=nvml  DEVICE=cuda
#   GANG_MODEL=resnet50  SINGLE_MODEL=resnet26  SINGLES=4  DATASET=cifar10  BATCH=128
#   EPOCHS=6  SINGLE_EPOCHS=6  EPOCH_SAMPLES=40000  GANG_MEMORY=12GiB  SINGLE_MEMORY=6GiB
#   MAX_PER_GPU=3  MECHANISM=mps  LAUNCHER="python3 -m torch.distributed.run --standalone"
#   PASSES=alone,together; PASSES=cold,warm is issue 34's case: the same jobs without
#   hints under colo's defaults, on a fresh store, then again on it (each fresh pass
#   removes a store an earlier run left in RESULTS_DIR)
# A CPU-only check of the logic (no timm or torchrun needed: a stand-in model
# and bench/launch_ranks.py):
#   BACKEND=sim DEVICE=cpu MECHANISM=naive EPOCH_SAMPLES=256 BATCH=32 EPOCHS=3 SINGLE_EPOCHS=3 \
#   PYTHONPATH=<dir with a stand-in timm.py> LAUNCHER="python3 $PWD/bench/launch_ranks.py" \
#   bench/gang-ddp.sh /tmp/gang
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" bench/gang_ddp.py "${1:?usage: bench/gang-ddp.sh RESULTS_DIR}"
