#!/usr/bin/env bash
# Can two jobs under Nsight Compute be profiled at once as MPS clients (issue
# 58)? Each "pair" is what `colo ncu-mps-pair` starts: `ncu --mps control
# --mps-num-clients 1 --port P ...` and the job under `ncu --mps client --port
# P`, P its own. Three cases, each on private MPS daemons (own pipe and log
# directories, stopped at the end), each bounded by CASE_S seconds (default 90):
#   one-server-together  two pairs on one server at the same time
#   one-server-in-turn   two pairs on one server, the second after the first ended
#   two-servers-together two pairs at once, each on a server of its own (same GPU)
#   one-server-after-control  a second pair on a's server once a's control has
#                    ended (its report written) while a's job still trains
# Keeps what ncu and the jobs printed and the reports' sizes; summary.txt has
# each job's and control's exit code.
#
#   bench/ncu-mps-two.sh RESULTS_DIR   (PYTHON=python3 CASE_S=90 CASES="name ...", default all)
set -uo pipefail
out=${1:?usage: bench/ncu-mps-two.sh RESULTS_DIR}
cd "$(dirname "$0")/.." || exit 2
py=${PYTHON:-python3}
limit=${CASE_S:-90}
cases=" ${CASES:-one-server-together one-server-in-turn two-servers-together one-server-after-control} "
want() { [[ $cases == *" $1 "* ]]; }
command -v ncu >/dev/null || { echo "ncu-mps-two: ncu is not on PATH" >&2; exit 2; }
mkdir -p "$out"
out=$(realpath "$out")
ncu --version >"$out/ncu-version.txt" 2>&1
work=$(mktemp -d /tmp/colo-ncu-two.XXXXXX)
daemons=()
start_daemon() {  # NAME: a private MPS daemon; prints its pipe directory
  mkdir -p "$work/$1/pipe" "$work/$1/log"
  CUDA_MPS_PIPE_DIRECTORY=$work/$1/pipe CUDA_MPS_LOG_DIRECTORY=$work/$1/log nvidia-cuda-mps-control -d ||
    { echo "ncu-mps-two: could not start a private MPS daemon" >&2; exit 2; }
  daemons+=("$work/$1/pipe")
}
cleanup() {
  for pipe in "${daemons[@]}"; do echo quit | CUDA_MPS_PIPE_DIRECTORY=$pipe nvidia-cuda-mps-control; done
  rm -rf "$work"
}
trap cleanup EXIT
train=(bench/train.py --model resnet26 --dataset cifar10 --batch-size 128 --epoch-samples 8000)
pids=()
pair() {  # DIR NAME PIPE PORT [EPOCHS]: starts a control and its client in the background
  local dir=$1 name=$2 pipe=$3 port=$4 epochs=${5:-2}
  mkdir -p "$dir"
  timeout "$limit" ncu --mps control --mps-num-clients 1 --port "$port" --max-connections 1 \
    --clock-control none --launch-count 10 --export "$dir/$name" --force-overwrite \
    >"$dir/$name.control.txt" 2>&1 &
  pids+=("$!:$dir/$name.control.txt")
  sleep 2
  CUDA_MPS_PIPE_DIRECTORY=$pipe timeout "$limit" ncu --mps client --port "$port" --max-connections 1 \
    "$py" "${train[@]}" --epochs "$epochs" >"$dir/$name.job.txt" 2>&1 &
  pids+=("$!:$dir/$name.job.txt")
}
wait_all() {  # CASE: waits for every started process, records each exit code
  for entry in "${pids[@]}"; do
    wait "${entry%%:*}"
    echo "exit $?" >>"${entry#*:}"
    echo "$1 $(basename "${entry#*:}" .txt): exit $(tail -n 1 "${entry#*:}" | cut -d' ' -f2)" >>"$out/summary.txt"
  done
  pids=()
  find "$out/$1" -name '*.ncu-rep' -printf "$1 report %f %s bytes\n" >>"$out/summary.txt"
}
start_daemon one
start_daemon two
if want one-server-together; then
  pair "$out/one-server-together" a "${daemons[0]}" 47101
  pair "$out/one-server-together" b "${daemons[0]}" 47102
  wait_all one-server-together
fi
if want one-server-in-turn; then
  pair "$out/one-server-in-turn" a "${daemons[0]}" 47103
  wait_all one-server-in-turn
  pair "$out/one-server-in-turn" b "${daemons[0]}" 47104
  wait_all one-server-in-turn
fi
if want two-servers-together; then
  pair "$out/two-servers-together" a "${daemons[0]}" 47105
  pair "$out/two-servers-together" b "${daemons[1]}" 47106
  wait_all two-servers-together
fi
if want one-server-after-control; then
  pair "$out/one-server-after-control" a "${daemons[0]}" 47107 8
  control=${pids[0]%%:*}
  while kill -0 "$control" 2>/dev/null; do sleep 0.2; done
  if kill -0 "${pids[1]%%:*}" 2>/dev/null; then running=yes; else running=no; fi
  echo "one-server-after-control: a's job still running when its control ended: $running" >>"$out/summary.txt"
  pair "$out/one-server-after-control" b "${daemons[0]}" 47108
  wait_all one-server-after-control
fi
cat "$out/summary.txt"
