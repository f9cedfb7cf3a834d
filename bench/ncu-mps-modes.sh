#!/usr/bin/env bash
# Which of Nsight Compute's MPS modes profile one MPS client among others
# (issue 58, item 1)? ncu 2025.3 offers `--mps none|client|primary-client|control`
# (docs/results/2026-12-06-h100-ncu-outside-mps/explore): a `client` waits for
# an `ncu --mps control` to attach, and refuses `--export`. Each case below runs
# on a private MPS daemon (its own pipe and log directories, stopped at the end)
# beside one neighbour training under the same server, and keeps what ncu and
# the jobs printed, the reports written, and the neighbour's epoch lines (its
# rate beside each case: bench/check-ncu-mps.py's rule, by hand):
#   control-client   `ncu --mps control --mps-num-clients 1 --export R` then the
#                    job under `ncu --mps client`
#   primary-alone    the job under `ncu --mps primary-client --mps-num-clients 1
#                    --export R` (no control process), with and without the
#                    launch count and clock control
#   control-primary  `ncu --mps control --mps-num-clients 1 --export R` then the
#                    job under `ncu --mps primary-client`
#   outside          the job under plain ncu outside the server (what colo does now)
# Each case is bounded by CASE_S seconds (default 75).
#
#   bench/ncu-mps-modes.sh RESULTS_DIR   (PYTHON=python3 CASE_S=75)
set -uo pipefail
out=${1:?usage: bench/ncu-mps-modes.sh RESULTS_DIR}
cd "$(dirname "$0")/.." || exit 2
py=${PYTHON:-python3}
limit=${CASE_S:-75}
command -v ncu >/dev/null || { echo "ncu-mps-modes: ncu is not on PATH" >&2; exit 2; }
mkdir -p "$out"
out=$(realpath "$out")
ncu --version >"$out/ncu-version.txt" 2>&1
work=$(mktemp -d /tmp/colo-ncu-modes.XXXXXX)
export CUDA_MPS_PIPE_DIRECTORY=$work/pipe CUDA_MPS_LOG_DIRECTORY=$work/log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d || { echo "ncu-mps-modes: could not start a private MPS daemon" >&2; exit 2; }
cleanup() {
  echo quit | nvidia-cuda-mps-control
  rm -rf "$work"
}
trap cleanup EXIT
train=(bench/train.py --model resnet26 --dataset cifar10 --batch-size 128 --epoch-samples 32000)
# The neighbour trains through every case; its epoch lines carry their end times.
"$py" "${train[@]}" --epochs 400 >"$out/neighbour.log" 2>&1 &
neighbour=$!
sleep 20  # its start-up: the first cases should see it steady (a bench, not a test)
run_case() {  # NAME CONTROL-ARGS(or "") JOB-NCU-ARGS [PIPE-DIR]
  local name=$1 control=$2 job=$3 pipe=${4:-$CUDA_MPS_PIPE_DIRECTORY} dir=$out/$1 cpid=
  mkdir -p "$dir"
  date +%s.%N >"$dir/start"
  if [ -n "$control" ]; then
    # shellcheck disable=SC2086
    timeout "$limit" ncu $control >"$dir/control.txt" 2>&1 &
    cpid=$!
    sleep 2
  fi
  # shellcheck disable=SC2086
  CUDA_MPS_PIPE_DIRECTORY=$pipe timeout "$limit" ncu $job "$py" "${train[@]}" --epochs 3 \
    >"$dir/job.txt" 2>&1
  echo "job exit $?" >>"$dir/job.txt"
  [ -z "$cpid" ] || { wait "$cpid"; echo "control exit $?" >>"$dir/control.txt"; }
  date +%s.%N >"$dir/end"
  find "$dir" -name '*.ncu-rep' -printf '%f %s\n' >"$dir/reports.txt"
  echo "$name: $(tail -n 1 "$dir/job.txt"); reports: $(wc -l <"$dir/reports.txt")" | tee -a "$out/summary.txt"
}
# ncu refuses --clock-control and --export on a `--mps client`: what to
# profile is the control's to say there.
what="--launch-count 10 --clock-control none"
run_case control-client "--mps control --mps-num-clients 1 $what --export $out/control-client/report" "--mps client"
run_case primary-alone "" "--mps primary-client --mps-num-clients 1 $what --export $out/primary-alone/report"
run_case primary-alone-bare "" "--mps primary-client --mps-num-clients 1 --export $out/primary-alone-bare/report"
run_case control-primary "--mps control --mps-num-clients 1 $what --export $out/control-primary/report" "--mps primary-client"
# Outside: a pipe directory that names no daemon, so the job is no MPS client.
run_case outside "" "$what --export $out/outside/report" "$work/no-daemon"
kill "$neighbour" 2>/dev/null
wait "$neighbour" 2>/dev/null
cat "$out/summary.txt"
