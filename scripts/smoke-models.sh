#!/usr/bin/env bash
# Runs bench/train.py briefly for each of the paper's models on a GPU machine,
# to check that every model, input size and batch size trains (no colo involved).
set -uo pipefail
cd "$(dirname "$0")/.."
run() { echo "== $*"; PYTHONUNBUFFERED=1 python3 bench/train.py --epochs 2 "$@" || echo "FAILED: $*"; }
run --model resnet26 --dataset cifar10 --batch-size 128 --epoch-samples 12800
run --model resnet50 --dataset imagenet64 --batch-size 128 --epoch-samples 6400
run --model efficientnetv2_s --dataset imagenet64 --batch-size 32 --epoch-samples 3200
run --model resnet152 --dataset imagenet --batch-size 32 --epoch-samples 1600
run --model cait_xxs24_224 --dataset imagenet --batch-size 128 --epoch-samples 2560
