#!/usr/bin/env bash
# What one MPS client's device-side assert does to the other clients of the
# same server, with no colo at all (issue 31: does the fault reach them, do
# they fail, hang or run on?).
#
#   bench/mps-fault-reach.sh RESULTS_DIR
#
# Each repeat starts a private MPS control daemon (its own pipe and log
# directories under RESULTS_DIR, stopped at the end by its own "quit"), three
# healthy resnet26 trainings (bench/train.py, 12 epochs) and, DELAY_S seconds
# later, a fourth whose labels go out of range in its epoch BAD_EPOCH. Once the
# buggy one has exited, the healthy ones get HANG_S seconds to end by
# themselves; those still alive then are recorded as hung and killed (by the
# process ids this script started). It prints one line per job and repeat and
# keeps every log, and the MPS server's log, under RESULTS_DIR.
#
# Knobs (environment): GPU (0), REPEATS (2), DELAY_S ("0 12": one pass per
# value), BAD_EPOCH (3), EPOCHS (12), HANG_S (60), PYTHON (python3).
# THREAD_PCT and PINNED_MEM (unset: none) give every client the MPS limits
# colo gives its clients (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, and
# CUDA_MPS_PINNED_DEVICE_MEM_LIMIT as "0=<PINNED_MEM>", e.g. 16G): under colo
# 14 of 42 healthy clients hung after a neighbour's assert, without it 1 of 12;
# these knobs test whether the limits are why (they are not: on an H200, 8 of
# 24 clients hung with the memory limit, 6 of 24 without it; see
# docs/results/2026-11-28-h200-mps-fault-reach). CHECKPOINT=1 makes every job
# save a checkpoint after each epoch, as colo's bench jobs do
# (--checkpoint-every-epoch, COLO_CHECKPOINT_DIR under RESULTS_DIR, removed
# at the end of the repeat). QUIET_S (15): a healthy job still alive whose log
# has not grown for QUIET_S seconds after the buggy job's exit counts as hung
# at once, without waiting out HANG_S; it is sent SIGABRT first, so that
# Python's fault handler (PYTHONFAULTHANDLER) writes its threads' stacks to
# its log, then SIGKILL. The last line counts the hung clients.
set -u
results=${1:?usage: bench/mps-fault-reach.sh RESULTS_DIR}
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
epochs=${EPOCHS:-12}
hang_s=${HANG_S:-60}
train=("$python" "$here/train.py" --model resnet26 --dataset cifar10 --batch-size 128
  --epoch-samples 12800 --epochs "$epochs" --device cuda)

quiet_s=${QUIET_S:-15}
hung_total=0
clients_total=0

alive() { kill -0 "$1" 2>/dev/null; }
# Seconds since FILE last changed.
quiet_for() { echo $(($(date +%s) - $(stat -c %Y "$1"))); }

for delay in ${DELAY_S:-0 12}; do
  for r in $(seq 1 "${REPEATS:-2}"); do
    d="$results/delay$delay-r$r"
    mkdir -p "$d/pipe" "$d/log"
    export CUDA_VISIBLE_DEVICES=${GPU:-0} CUDA_MPS_PIPE_DIRECTORY="$d/pipe" \
      CUDA_MPS_LOG_DIRECTORY="$d/log"
    nvidia-cuda-mps-control -d || { echo "cannot start an MPS daemon" >&2; exit 1; }
    if [ -n "${THREAD_PCT:-}" ]; then export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$THREAD_PCT; fi
    if [ -n "${PINNED_MEM:-}" ]; then export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="0=$PINNED_MEM"; fi
    # Each job's checkpoint directory, when CHECKPOINT=1.
    start_job() {
      local name=$1
      shift
      if [ "${CHECKPOINT:-0}" = 1 ]; then
        mkdir -p "$d/ckpt-$name"
        COLO_CHECKPOINT_DIR="$d/ckpt-$name" "${train[@]}" --checkpoint-every-epoch "$@" \
          >"$d/$name.log" 2>&1 &
      else
        "${train[@]}" "$@" >"$d/$name.log" 2>&1 &
      fi
    }
    export PYTHONFAULTHANDLER=1
    pids=()
    for i in 1 2 3; do
      start_job "healthy-$i"
      pids+=($!)
    done
    sleep "$delay"
    start_job buggy --bad-labels-at-epoch "${BAD_EPOCH:-3}"
    buggy=$!
    wait "$buggy"
    buggy_rc=$?
    buggy_end=$(date +%s.%N)
    deadline=$((SECONDS + hang_s))
    while ((SECONDS < deadline)); do
      busy=0
      for i in 1 2 3; do
        alive "${pids[$((i - 1))]}" || continue
        (($(quiet_for "$d/healthy-$i.log") >= quiet_s)) || busy=1
      done
      ((busy)) || break
      sleep 1
    done
    echo "=== delay $delay s, repeat $r: buggy exited $buggy_rc at $buggy_end"
    for i in 1 2 3; do
      p=${pids[$((i - 1))]}
      if alive "$p"; then
        silent=$(quiet_for "$d/healthy-$i.log")
        kill -ABRT "$p" 2>/dev/null
        for _ in 1 2 3 4 5 6; do alive "$p" || break; sleep 0.5; done
        state="HUNG (alive, log silent for $silent s, $((SECONDS - deadline + hang_s)) s after the buggy job's exit; killed)"
        hung_total=$((hung_total + 1))
        kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
      else
        wait "$p"
        state="exited $?"
      fi
      last_epoch=$(grep -o 'epoch [0-9]*/[0-9]*' "$d/healthy-$i.log" | tail -1)
      err=$(grep -m1 -E 'Error|error:|CUDA error' "$d/healthy-$i.log" | cut -c1-160)
      clients_total=$((clients_total + 1))
      echo "healthy-$i: $state; last: ${last_epoch:-none}; first error line: ${err:-none}"
    done
    echo quit | nvidia-cuda-mps-control
    for _ in $(seq 1 20); do [ -e "$d/pipe/control" ] || break; sleep 0.5; done
    echo "--- MPS server log (last 15 lines)"
    tail -n 15 "$d/log/server.log" 2>/dev/null
    echo "--- MPS control log (last 8 lines)"
    tail -n 8 "$d/log/control.log" 2>/dev/null
    rm -rf "$d"/ckpt-*
  done
done
echo "=== hung: $hung_total of $clients_total healthy clients (THREAD_PCT=${THREAD_PCT:-none} PINNED_MEM=${PINNED_MEM:-none} CHECKPOINT=${CHECKPOINT:-0})"
