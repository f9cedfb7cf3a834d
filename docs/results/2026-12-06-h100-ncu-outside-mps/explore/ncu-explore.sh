#!/usr/bin/env bash
# exploration of ncu under MPS (not kept as a bench)
R=$1; mkdir -p $R
ncu --version > $R/ncu-version.txt 2>&1; ncu --help > $R/ncu-help.txt 2>&1
D=/tmp/ncumps; rm -rf $D; mkdir -p $D/pipe $D/log
export CUDA_MPS_LOG_DIRECTORY=$D/log
CUDA_MPS_PIPE_DIRECTORY=$D/pipe nvidia-cuda-mps-control -d
T="bench/train.py --model resnet26 --dataset cifar10 --batch-size 128 --epoch-samples 32000"
CUDA_MPS_PIPE_DIRECTORY=$D/pipe python3 $T --epochs 12 > $R/nb.txt 2>&1 &
nb=$!
sleep 10
echo "== A: primary + client" 
CUDA_MPS_PIPE_DIRECTORY=$D/pipe timeout 60 ncu --mps primary --export /tmp/A --force-overwrite --launch-count 10 > $R/A-primary.txt 2>&1 &
pp=$!
sleep 2
CUDA_MPS_PIPE_DIRECTORY=$D/pipe timeout 60 ncu --mps client --target-processes all python3 $T --epochs 2 > $R/A-client.txt 2>&1; echo "client rc=$?" >> $R/A-client.txt
wait $pp; echo "primary rc=$?" >> $R/A-primary.txt
ls -la /tmp/A* >> $R/A-primary.txt 2>&1
echo "== B: outside MPS while its server runs"
timeout 60 ncu --target-processes all --export /tmp/B --force-overwrite --launch-count 10 python3 $T --epochs 2 > $R/B.txt 2>&1; echo "rc=$?" >> $R/B.txt
ls -la /tmp/B* >> $R/B.txt 2>&1
wait $nb; echo "nb rc=$?" >> $R/nb.txt
echo quit | CUDA_MPS_PIPE_DIRECTORY=$D/pipe nvidia-cuda-mps-control
sleep 1
