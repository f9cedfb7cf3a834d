#!/usr/bin/env bash
# Issue 56 on a GPU: a job protected at a floor of its solo speed, three
# opportunistic neighbours filling the rest, under MPS.
#   1. one exclusive pass (a fresh store): the main job, then one neighbour,
#      each alone: their solo rates, in the store (what the floor is judged
#      against) and in their logs (what the check reads); SOLO_FROM=DIR takes
#      DIR/solo of an earlier invocation instead;
#   2. RUNS protected passes, each on its own copy of that store (a WARM case:
#      the floor is judged against the solo rate the exclusive pass taught it;
#      COLD=1: each on a fresh store instead, colo never saw the jobs, and the
#      exclusive pass's logs serve only the check):
#      main qos = "protected" (min_speed = FLOOR), three neighbours qos =
#      "opportunistic", all submitted together, under `colo run --mechanism mps`
#      or, with SERVE=1, a root `colo serve` (one user: root submits them all;
#      USERS=2: root submits main, nobody (uid 65534, through setpriv) the
#      three neighbours, under `--mps-users shared`: one MPS server for both).
#      The pass is stopped (Ctrl-C, or SIGTERM to the service) once the main
#      job's last epoch is in its log: the harvest counts only its window;
#   3. bench/check-protected.py, from the jobs' own lines only: the main job's
#      steady speed over its solo, the neighbours' harvest, and the MPS levers
#      each neighbour's process saw.
#
#   bench/protected.sh RESULTS_DIR  (RUNS=1 FLOOR=0.9 CASE=heavy|light SERVE=0 USERS=1 COLD=0 SOLO_FROM=)
#
# heavy: main resnet50 bs 96 on 224 px (imagenet), neighbours resnet26 bs 128
#   on 64 px (imagenet64; the issue's neighbours were 128 px, which train.py
#   has no dataset for).
# light: main and neighbours resnet26 bs 128 on 32 px (cifar10; about 10,000
#   img/s alone on an H100, launch-bound).
# Leaves RESULTS_DIR/solo (the exclusive pass), RESULTS_DIR/runN (the job files,
# colo's output, the jobs' logs, check.txt) and RESULTS_DIR/summary.txt.
set -euo pipefail
out=${1:?usage: bench/protected.sh RESULTS_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
colo=${COLO:-$root/build/colo}
py=$(command -v "${PYTHON:-python3}")
backend=${BACKEND:+--backend $BACKEND}  # BACKEND=sim: the plumbing without a GPU (PYTHON a stand-in)
floor=${FLOOR:-0.9}
case ${CASE:-heavy} in
  heavy) main_epochs=${MAIN_EPOCHS:-6} min_harvest=${MIN_HARVEST:-0.1}
         main_args="--model resnet50 --dataset imagenet --batch-size 96 --epoch-samples 14400"
         nb_args="--model resnet26 --dataset imagenet64 --batch-size 128 --epoch-samples 32000" ;;
  light) main_epochs=${MAIN_EPOCHS:-8} min_harvest=${MIN_HARVEST:-0.5}
         main_args="--model resnet26 --dataset cifar10 --batch-size 128 --epoch-samples 32000"
         nb_args="--model resnet26 --dataset cifar10 --batch-size 128 --epoch-samples 32000" ;;
  *) echo "protected.sh: CASE is heavy or light" >&2; exit 2 ;;
esac
main_args="$main_args --epochs $main_epochs"
mkdir -p "$out"
out=$(cd "$out" && pwd)
users=${USERS:-1}
work=$root
nobody_env=
if [ "$users" = 2 ]; then
  [ "${SERVE:-0}" = 1 ] || { echo "protected.sh: USERS=2 needs SERVE=1" >&2; exit 2; }
  [ "$(id -u)" -eq 0 ] || { echo "protected.sh: USERS=2 runs as root (colo serve runs nobody's jobs as nobody)" >&2; exit 2; }
  command -v setpriv >/dev/null || { echo "protected.sh: USERS=2 needs setpriv (util-linux)" >&2; exit 2; }
  nobody_group=$(getent group 65534 | cut -d: -f1)
  [ -n "$nobody_group" ] || { echo "protected.sh: no group of gid 65534" >&2; exit 2; }
  # What nobody's jobs and client read or write lives where they can reach it
  # (the checkout may be under a 0700 home): a world-readable copy under /tmp,
  # each user's torch and CUDA kernel caches below it.
  work=$(mktemp -d /tmp/colo-protected.XXXXXX)
  trap 'rm -rf "$work"' EXIT
  chmod 755 "$work"
  mkdir -p "$work/bench" "$work/cache/65534"
  chown 65534:65534 "$work/cache/65534"
  cp "$colo" "$work/colo"
  cp -r "$root/python" "$work/python"
  cp "$root/bench/train.py" "$root/bench/workload_end.py" "$work/bench/"
  chmod -R a+rX "$work"
  colo=$work/colo
  export COLO_PYTHON_DIR=$work/python
  nobody_env="env = { XDG_CACHE_HOME = \"$work/cache/65534\", CUDA_CACHE_PATH = \"$work/cache/65534/nv\" }"
fi
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
train=$work/bench/train.py
# One working directory for every pass: it is part of a job's signature, so
# the main job beside its neighbours is the one the exclusive pass measured.
job() {  # NAME ARGS QOS-LINES
  printf '[[job]]\nname = "%s"\nworkdir = "%s"\ncommand = ["%s", "%s", %s]\n%s\n' "$1" "$work" \
    "$py" "$train" "$(printf '"%s", ' $2 | sed 's/, $//')" "$3"
}
# Waits until FILE-GLOB names a log whose last epoch line is the main job's
# last (or PID is gone), for at most LIMIT seconds.
wait_main_done() {  # GLOB PID LIMIT
  local end=$((SECONDS + $3))
  while [ $SECONDS -lt $end ] && kill -0 "$2" 2>/dev/null; do
    # shellcheck disable=SC2086
    grep -qs "epoch $main_epochs/$main_epochs" $1 && return 0
    sleep 1
  done
}

solo=${SOLO_FROM:+$SOLO_FROM/solo}
if [ -z "$solo" ]; then
  solo=$out/solo
  mkdir -p "$solo"
  # The neighbour alone for 6 epochs: the same command as beside main but its --epochs.
  { job main "$main_args" ""; job neighbour "$nb_args --epochs 6" ""; } >"$solo/solo.toml"
  # shellcheck disable=SC2086
  COLO_HOME=$solo/home COLO_LOCK_DIR=$solo/locks \
    "$colo" run "$solo/solo.toml" $backend --mechanism exclusive --db "$solo/colo.db" >"$solo/solo.out" 2>&1
  cp -r "$(ls -d "$solo"/home/runs/*/ | head -1)1" "$solo/logs"
fi
if [ "$users" = 2 ]; then
  # nobody's kernel cache warmed by one short epoch of a neighbour (not judged),
  # so that no pass's neighbours spend their start compiling.
  as_nobody env HOME="$work/cache/65534" XDG_CACHE_HOME="$work/cache/65534" \
    CUDA_CACHE_PATH="$work/cache/65534/nv" COLO_PYTHON_DIR="$work/python" \
    "$py" "$train" $nb_args --epochs 1 --epoch-samples 3200 >"$out/nobody-warmup.out" 2>&1 || true
fi

for run in $(seq 1 "${RUNS:-1}"); do
  dir=$out/run$run
  mkdir -p "$dir"
  export COLO_HOME=$dir/home COLO_LOCK_DIR=$dir/locks
  # Two users: the MPS pipe directory below COLO_HOME must be reachable by nobody's clients.
  [ "$users" = 1 ] || export COLO_HOME=$work/home$run
  db=$dir/colo.db
  rm -f "$db"
  [ "${COLD:-0}" = 1 ] || cp "$solo/colo.db" "$db"  # warm: the exclusive pass's store, a copy per run
  main_job=$(job main "$main_args" "qos = \"protected\"
min_speed = $floor")
  # Epochs enough to outlast main: the pass is stopped when main ends.
  neighbours=$(for i in 1 2 3; do job "neighbour$i" "$nb_args --epochs 60 --seed $i" "qos = \"opportunistic\"
$nobody_env"; done)
  if [ "$users" = 2 ]; then  # two files: root's main, nobody's neighbours (readable by nobody's client)
    printf '%s\n' "$main_job" >"$dir/protected.toml"
    printf '%s\n' "$neighbours" >"$work/neighbours$run.toml"
    chmod a+r "$work/neighbours$run.toml"
    cp "$work/neighbours$run.toml" "$dir/neighbours.toml"
  else
    printf '%s\n%s\n' "$main_job" "$neighbours" >"$dir/protected.toml"
  fi
  if [ "${SERVE:-0}" = 1 ]; then
    logs=$dir/serve-logs
    sock=$dir/colo.sock serve_args=
    if [ "$users" = 2 ]; then
      sock=$work/colo$run.sock  # where nobody's client can reach it
      serve_args="--mps-users shared --socket-group $nobody_group"
    fi
    # shellcheck disable=SC2086
    "$colo" serve $backend --mechanism mps $serve_args --db "$db" --logs "$logs" --socket "$sock" \
      --grace 5s >"$dir/serve.out" 2>&1 &
    pid=$!
    for _ in $(seq 1 300); do "$colo" queue --socket "$sock" >/dev/null 2>&1 && break; sleep 0.2; done
    "$colo" submit --socket "$sock" "$dir/protected.toml" >"$dir/protected.out" 2>&1
    if [ "$users" = 2 ]; then
      as_nobody env HOME="$work/cache/65534" COLO_HOME="$work/cache/65534/colo" \
        "$colo" submit --socket "$sock" "$work/neighbours$run.toml" >>"$dir/protected.out" 2>&1
    fi
    wait_main_done "$logs/*/jobs/*-main*.log" "$pid" 600
    "$colo" queue --socket "$sock" >>"$dir/protected.out" 2>&1 || true
    kill -TERM "$pid"; wait "$pid" || true
    mkdir -p "$dir/protected-logs"
    for f in "$logs"/*/jobs/*.log; do  # <id>-<name>[.attemptN].log -> the names colo run uses
      cp "$f" "$dir/protected-logs/$(basename "$f" | sed 's/^[0-9]*-//')"
    done
    main_log=$dir/protected-logs/main.log
  else
    # shellcheck disable=SC2086
    "$colo" run "$dir/protected.toml" $backend --mechanism mps --db "$db" >"$dir/protected.out" 2>&1 &
    pid=$!
    # The logs where colo keeps them: runs/<store>/<run>/<NNN>-<name>[.attemptN].log;
    # run 1 of the copied store is the exclusive pass, run 2 this one (COLD: run 1).
    n=2; [ "${COLD:-0}" = 1 ] && n=1
    wait_main_done "$dir/home/runs/*/$n/001-main.log" "$pid" 600
    kill -INT "$pid" 2>/dev/null || true; wait "$pid" || true
    cp -r "$(ls -d "$dir"/home/runs/*/ | head -1)$n" "$dir/protected-logs"
    main_log=$dir/protected-logs/001-main.log
  fi
  python3 "$root/bench/check-protected.py" --solo-main "$solo"/logs/001-main.log \
    --solo-neighbour "$solo"/logs/002-neighbour.log --main "$main_log" \
    --neighbour "$dir"/protected-logs/*neighbour[123]*.log \
    --floor "$floor" --min-harvest "$min_harvest" | tee "$dir/check.txt" || true
  echo "run $run: $(tail -n 1 "$dir/check.txt")" >>"$out/summary.txt"
done
cat "$out/summary.txt"
