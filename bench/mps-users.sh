#!/usr/bin/env bash
# Issue 57 on a GPU: four resnet26 trainings (bench/train.py, bs 256 on 64 px
# imagenet64, about 10,000 img/s alone on an H100) under a root `colo serve`
# on one GPU, all four at once (the fixed policy, 4 per GPU, so that what is
# measured is how MPS shares the GPU, not where the policy puts jobs):
#   solo       one of them alone under --mechanism exclusive (colo run): the
#              solo rate the throughput is normalized by;
#   shared-1u  --mps-users shared, all four from root;
#   shared-2u  --mps-users shared, two from root and two from nobody (uid 65534,
#              submitted through setpriv);
#   separate-1u, separate-2u  the same under --mps-users separate (a daemon per
#              user: the two users' servers time-slice the GPU);
#   overrun    (OVERRUN=1, the default) shared: a job of nobody's with a 2 GiB
#              MPS memory limit (memory_limit) that asks for more, beside a
#              job of root's: it must fail alone, out of memory, while root's
#              trains on, one attempt.
# Each case runs on a fresh store (its own COLO_HOME). bench/check-mps-users.py
# then reads only the jobs' own logs (each prints `id -un` and its MPS pipe
# directory first, and one line per epoch): which user ran each job, which MPS
# server it was a client of, the makespan (first start to last epoch's end)
# and the normalized throughput (the sum of each job's steady rate over the
# solo rate) per case, and whether the shared two-user case is within 5% of
# the one-user case on both.
#
#   bench/mps-users.sh RESULTS_DIR        (as root, on a machine with a GPU)
#
# Environment: COLO=build/colo  PYTHON=python3  GPU=0  EPOCHS=20
#   EPOCH_SAMPLES=25600  BATCH=256  OVERRUN=1  CASES="shared-1u shared-2u
#   separate-1u separate-2u" (a subset runs only those)  POLICY=fixed (auto: the policy
#   decides where and when, too)  BACKEND (sim: a dry run of the script's own
#   plumbing, with the stand-in MPS control program on PATH and a PYTHON that
#   stands in for train.py; nothing it prints is a measurement). About 3
#   minutes on an H100 with EPOCHS=6 (2026-12-06: 185 s), longer with the default 20.
# Leaves in RESULTS_DIR/<case>/: the job files, serve.log (or solo.out), the
# jobs' logs; RESULTS_DIR/check.txt, the check's report; summary.txt its table.
set -euo pipefail
out=${1:?usage: bench/mps-users.sh RESULTS_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
colo_src=${COLO:-$root/build/colo}
py=$(command -v "${PYTHON:-python3}")
gpu=${GPU:-0}
epochs=${EPOCHS:-20}
samples=${EPOCH_SAMPLES:-25600}
batch=${BATCH:-256}
policy=${POLICY:-fixed}
backend=${BACKEND:+--backend $BACKEND}
[ "$(id -u)" -eq 0 ] || { echo "mps-users: run as root (colo serve as root runs jobs as nobody)" >&2; exit 2; }
command -v setpriv >/dev/null || { echo "mps-users: needs setpriv (util-linux)" >&2; exit 2; }
nobody_group=$(getent group 65534 | cut -d: -f1)
[ -n "$nobody_group" ] || { echo "mps-users: no group of gid 65534 (nogroup)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
# Everything nobody's jobs read or write lives where they can reach it (the
# checkout may be under a 0700 home): a world-readable directory under /tmp.
work=$(mktemp -d /tmp/colo-mpsu.XXXXXX)
chmod 755 "$work"
mkdir -p "$work/bin" "$work/cache"
chmod 1777 "$work/cache"  # each user's torch cache below it (XDG_CACHE_HOME)
cp "$colo_src" "$work/bin/colo"
cp -r "$root/python" "$work/python"
cp "$root/bench/train.py" "$root/bench/workload_end.py" "$work/"
chmod -R a+rX "$work/bin" "$work/python" "$work/train.py"
colo=$work/bin/colo
cd "$work"  # jobs start where they were submitted: nobody's must be able to
serve_pid=
cleanup() {
  [ -z "$serve_pid" ] || { kill -TERM "$serve_pid" 2>/dev/null; wait "$serve_pid" 2>/dev/null || true; }
  rm -rf "$work"
}
trap cleanup EXIT
export COLO_PYTHON_DIR=$work/python

# A job file of N jobs named PREFIX1.. with train.py's ARGS; each job prints
# its user and runs with a torch cache and a CUDA kernel cache of its own
# user's (nobody's home is /nonexistent: without CUDA_CACHE_PATH its kernels
# were compiled anew by every job, 30-40 s of start-up on the H100 against
# root's 4-5 s, so the first run's jobs never trained together).
jobs() {  # PREFIX N ARGS [EXTRA-LINES]
  local i
  for i in $(seq 1 "$2"); do
    printf '[[job]]\nname = "%s%d"\n' "$1" "$i"
    printf 'command = ["sh", "-c", "id -un; export XDG_CACHE_HOME=%s/cache/$(id -u) CUDA_CACHE_PATH=%s/cache/$(id -u)/nv; exec %s %s/train.py %s --seed %d"]\n' \
      "$work" "$work" "$py" "$work" "$3" "$i"
    [ -z "${4:-}" ] || printf '%s\n' "$4"
  done
}
train_args="--model resnet26 --dataset imagenet64 --batch-size $batch --epoch-samples $samples --epochs $epochs"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
submit_ids() {  # FILE [as_nobody]: the ids, one line
  local who=${2:-}
  $who env COLO_HOME="$COLO_HOME" "$colo" submit --json "$1" |
    "$py" -c 'import json,sys; print(" ".join(str(i) for i in json.load(sys.stdin)["ids"]))'
}

# One case: colo serve with FLAGS on a fresh store; root submits ROOT_FILE,
# nobody NOBODY_FILE (may be empty); the jobs' logs are copied to the case's
# directory.
serve_case() {  # NAME FLAGS ROOT_FILE [NOBODY_FILE]
  local name=$1 flags=$2 mine=$3 theirs=${4:-} dir=$out/$1 ids
  mkdir -p "$dir"
  export COLO_HOME=$work/home-$name COLO_LOCK_DIR=$work/locks-$name
  echo "mps-users: case $name ($flags)"
  # shellcheck disable=SC2086
  "$colo" serve $backend --gpus "$gpu" --mechanism mps $flags --policy "$policy" --max-per-gpu 4 \
    --socket-group "$nobody_group" --grace 5s >"$dir/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 1 300); do "$colo" queue >/dev/null 2>&1 && break; sleep 0.2; done
  cp "$mine" "$dir/"
  ids=$(submit_ids "$mine")
  if [ -n "$theirs" ]; then
    cp "$theirs" "$dir/"
    ids="$ids $(submit_ids "$theirs" as_nobody)"
  fi
  echo "  jobs $ids"
  # shellcheck disable=SC2086
  "$colo" wait $ids >"$dir/wait.txt" 2>&1 || true
  "$colo" queue --json >"$dir/queue.json" 2>/dev/null || true
  kill -TERM "$serve_pid"; wait "$serve_pid" || true; serve_pid=
  cp "$COLO_HOME"/serve/*/jobs/*.log "$dir/"
}

# Job files, readable by nobody's colo client.
jobs root 4 "$train_args" >"$work/root4.toml"
jobs root 2 "$train_args" >"$work/root2.toml"
jobs nobody 2 "$train_args" >"$work/nobody2.toml"
jobs solo 1 "$train_args" >"$work/solo.toml"
jobs keeper 1 "--model resnet26 --dataset imagenet64 --batch-size $batch --epoch-samples $samples --epochs 3" \
  >"$work/keeper.toml"
# 8192 64 px images of resnet26 at once: tens of GiB of activations, far past 2 GiB.
jobs hog 1 "--model resnet26 --dataset imagenet64 --batch-size 8192 --epoch-samples 8192 --epochs 1" \
  'memory_limit = "2GiB"' >"$work/hog.toml"
chmod a+r "$work"/*.toml

# The solo rate: one job alone.
mkdir -p "$out/solo"
export COLO_HOME=$work/home-solo COLO_LOCK_DIR=$work/locks-solo
echo "mps-users: case solo"
cp "$work/solo.toml" "$out/solo/"
# shellcheck disable=SC2086
"$colo" run "$work/solo.toml" $backend --gpus "$gpu" --mechanism exclusive --plain >"$out/solo/solo.out" 2>&1 || true
cp "$COLO_HOME"/runs/*/1/*.log "$out/solo/"

cases=" ${CASES:-shared-1u shared-2u separate-1u separate-2u} "
case $cases in *" shared-1u "*) # Each user's caches warmed first (one short job each, not judged), so that
# no case pays a first compile.
jobs warm 1 "--model resnet26 --dataset imagenet64 --batch-size $batch --epoch-samples $samples --epochs 1" \
  >"$work/warm.toml"
chmod a+r "$work/warm.toml"
serve_case warmup "--mps-users shared" "$work/warm.toml" "$work/warm.toml"
serve_case shared-1u "--mps-users shared" "$work/root4.toml" ;; esac
case $cases in *" shared-2u "*)
  serve_case shared-2u "--mps-users shared" "$work/root2.toml" "$work/nobody2.toml" ;; esac
case $cases in *" separate-1u "*) serve_case separate-1u "--mps-users separate" "$work/root4.toml" ;; esac
case $cases in *" separate-2u "*)
  serve_case separate-2u "--mps-users separate" "$work/root2.toml" "$work/nobody2.toml" ;; esac
if [ "${OVERRUN:-1}" = 1 ]; then
  serve_case overrun "--mps-users shared" "$work/keeper.toml" "$work/hog.toml"
fi

"$py" "$root/bench/check-mps-users.py" "$out" | tee "$out/check.txt"
