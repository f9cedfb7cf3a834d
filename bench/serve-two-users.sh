#!/usr/bin/env bash
# Issue 53 on a GPU: a root `colo serve` (MPS, its default mechanism where
# nvidia-cuda-mps-control is found) and two real Unix users made for the run.
# User A trains resnet26 (bench/train.py) with a torch profiling window from
# its job file; user B trains through a shared data loader ([data.NAME]) of a
# generated JPEG dataset (bench/data_train.py). Each job prints `id -un` first.
# bench/check-two-users.py then checks, from the jobs' own logs and files
# only: each ran as its submitter, A's window wrote a trace with GPU kernels
# and a summary owned by A, B read batches through the loader on the GPU, and
# the directories a job reaches are 0711 on the way, its own owned by it.
#
#   bench/serve-two-users.sh RESULTS_DIR        (as root)
#
# Environment: COLO=build/colo  PYTHON=python3  EPOCHS=3  IMAGES=2000
# Leaves in RESULTS_DIR: serve.log, a.toml, b.toml, the jobs' logs, A's
# profile summary, B's trainer log, modes.txt, queue.json and check.txt.
set -euo pipefail
out=${1:?usage: bench/serve-two-users.sh RESULTS_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
colo_src=${COLO:-$root/build/colo}
py=${PYTHON:-python3}
[ "$(id -u)" -eq 0 ] || { echo "serve-two-users: run as root (it makes two users)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
# Everything the users' jobs read lives in a directory they can reach (the
# checkout may be under a 0700 home).
work=$(mktemp -d /tmp/colo-2u.XXXXXX)
chmod 755 "$work"
mkdir -p "$work/bin"
cp "$colo_src" "$work/bin/colo"
cp -r "$root/python" "$work/python"
cp "$root/bench/train.py" "$root/bench/workload_end.py" "$root/bench/data_train.py" "$work/"
chmod -R a+rX "$work"
tag=$$
ua=coloa$tag ub=colob$tag group=colog$tag
serve_pid=
cleanup() {
  [ -z "$serve_pid" ] || { kill -TERM "$serve_pid" 2>/dev/null; wait "$serve_pid" 2>/dev/null || true; }
  userdel "$ua" 2>/dev/null || true
  userdel "$ub" 2>/dev/null || true
  groupdel "$group" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
groupadd "$group"
useradd -M -d /nonexistent -G "$group" "$ua"
useradd -M -d /nonexistent -G "$group" "$ub"
export COLO_HOME=$work/home COLO_LOCK_DIR=$work/locks COLO_PYTHON_DIR=$work/python
colo=$work/bin/colo
"$colo" data make-synthetic "$work/data" --images "${IMAGES:-2000}" >"$out/dataset.txt"
chmod -R a+rX "$work/data"
mkdir -p "$work/b-out" && chown "$ub" "$work/b-out"
pybin=$(command -v "$py")
cat >"$work/a.toml" <<TOML
[[job]]
name = "windowed"
command = ["sh", "-c", "id -un; exec $pybin $work/train.py --model resnet26 --dataset cifar10 --batch-size 128 --epoch-samples 25600 --epochs ${EPOCHS:-3}"]
profile = { tool = "torch", after_epoch = 1, steps = 10 }
TOML
cat >"$work/b.toml" <<TOML
[data.syn]
path = "$work/data"
size = 64

[[job]]
name = "reader"
command = ["sh", "-c", "id -un; exec $pybin $work/data_train.py --loader shared --model resnet26 --batch-size 64 --device cuda --warmup 3 --duration 10 --tail 1 --log $work/b-out/trainer.json"]
dataset = "syn"
TOML
chmod a+r "$work/a.toml" "$work/b.toml"
cp "$work/a.toml" "$work/b.toml" "$out/"
"$colo" serve --socket-group "$group" --grace 5s >"$out/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 1 300); do "$colo" queue >/dev/null 2>&1 && break; sleep 0.2; done
as() { local who=$1; shift; runuser -u "$who" -- env COLO_HOME="$COLO_HOME" "$colo" "$@"; }
a_id=$(as "$ua" submit --json "$work/a.toml" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["ids"][0])')
b_id=$(as "$ub" submit --json "$work/b.toml" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["ids"][0])')
echo "submitted: A job $a_id ($ua), B job $b_id ($ub)"
"$colo" wait "$a_id" "$b_id" || true
"$colo" queue --json >"$out/queue.json"
svc=$(ls -d "$COLO_HOME"/serve/*)
cp "$svc"/jobs/"$a_id"-*.log "$out/a.log"
cp "$svc"/jobs/"$b_id"-*.log "$out/b.log"
cp "$work/b-out/trainer.json" "$out/b-trainer.json" 2>/dev/null || true
prof=$svc/profiles/$a_id
cp "$prof"/torch-summary-*.json "$out/" 2>/dev/null || true
{
  stat -c '%a %U %n' "$COLO_HOME" "$svc" "$svc/jobs" "$svc/checkpoints" "$svc/profiles" "$svc/data"
  stat -c '%a %U %n' "$prof" "$prof"/* "$svc/data/$(id -u "$ub")"
} >"$out/modes.txt" 2>&1 || true
kill -TERM "$serve_pid"; wait "$serve_pid" || true; serve_pid=
"$py" "$root/bench/check-two-users.py" "$out" "$ua" "$ub" "$prof" | tee "$out/check.txt"
