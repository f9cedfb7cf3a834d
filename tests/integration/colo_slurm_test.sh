#!/bin/bash
# `colo slurm` end to end on a real Slurm (Debian's slurm-wlm and munge),
# started on this machine by scripts/local-slurm.sh: two nodes (two slurmd)
# with two stand-in GPUs each, the simulated GPU backend, a fake MPS control
# program.
#
#   1. `colo slurm submit` of a 12-job sweep as 2 shards (one per node, --mechanism mps);
#      while shard 0 runs, its node is killed (slurmd, slurmstepd and the
#      jobs, SIGKILL); Slurm requeues the shard, which runs again on the
#      other node; `colo slurm collect` merges the shards: `colo show` holds
#      12 ok jobs, each once; the dead attempt's MPS directory was cleaned up
#      by the next colo.
#   2. A shard cancelled with scancel: colo stops its jobs, stops its MPS
#      daemon (which Slurm does not track) and still publishes its store.
#   3. A shard cancelled with scancel while the other runs on, then run again
#      with `colo slurm resubmit` (issue 54, item 8): `colo slurm collect`
#      exits 4 while shards run; the resubmitted shard runs as attempt 1 of
#      an array of its own, `status` shows it, `collect` merges it whole, and
#      the cancelled attempt's files stay.
#
# Skipped (exit 77) where Slurm cannot start: not root, or Slurm not installed.
# Every daemon it started is stopped on every exit path (trap, and the
# cluster's watcher if this script is killed outright).
#
# Environment: COLO (the binary), COLO_SOURCE_DIR (the checkout),
# COLO_FAKE_MPS_CONTROL (tests/integration/fake-mps-control).
set -euo pipefail

COLO=${COLO:?set COLO to the colo binary}
SRC=${COLO_SOURCE_DIR:?set COLO_SOURCE_DIR to the checkout}
FAKE_MPS=${COLO_FAKE_MPS_CONTROL:-$SRC/tests/integration/fake-mps-control}
LOCAL_SLURM=$SRC/scripts/local-slurm.sh

skip() {
  echo "SKIPPED: $*"
  exit 77
}
[ "$(id -u)" = 0 ] || skip "a local Slurm needs root (slurmd runs jobs as their user)"
for prog in slurmctld slurmd munged sbatch; do
  command -v "$prog" >/dev/null || skip "$prog is not installed (scripts/install-deps.sh installs slurm-wlm and munge)"
done

started=$(date +%s)
work=$(mktemp -d /tmp/colo-slurm-it-XXXXXX)
cluster=$work/cluster
passed=0
cleanup() {
  "$LOCAL_SLURM" stop "$cluster" || true
  if [ "$passed" = 1 ]; then rm -rf "$work"; else echo "kept for a look: $work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "FAILED: $*"
  for f in "$work"/sub*/slurm/*.out; do
    [ -f "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }
  done
  exit 1
}
elapsed() { echo "$(($(date +%s) - started))s"; }
# wait_for SECONDS WHAT COMMAND...: polls COMMAND every half second. The bounds
# are generous (a loaded 2-core machine runs Slurm, colo and 12 jobs here):
# they only make a failing run slower.
wait_for() {
  local limit=$1 what=$2 i
  shift 2
  for i in $(seq 1 $((limit * 2))); do
    "$@" && return 0
    sleep 0.5
  done
  fail "waited ${limit}s for $what"
}

"$LOCAL_SLURM" start "$cluster" --nodes 2 --gpus-per-node 2 --owner-pid $$ ||
  skip "Slurm could not start here (see $cluster/log)"
eval "$("$LOCAL_SLURM" env "$cluster")"
mapfile -t nodes <"$cluster/nodes"
echo "cluster up with ${#nodes[@]} node(s) after $(elapsed)"

# What every job (and colo) inherits through sbatch: a private colo home and
# node-local directory, the fake MPS control program.
export COLO_HOME=$work/home
export COLO_LOCK_DIR=$work/locks
export TMPDIR=$work/tmp
export COLO_MPS_CONTROL=$FAKE_MPS
mkdir -p "$TMPDIR" "$COLO_HOME"

# 12 jobs of about 40 s each (5 epochs of 8 s), the sweep as 2 shards of 6:
# long enough that a loaded machine still kills shard 0 before its jobs end.
cat >"$work/sweep.toml" <<EOF
[defaults]
workdir = "$SRC"
env = { PYTHONUNBUFFERED = "1" }

[[job]]
name = "sim"
command = ["python3", "bench/sim_train.py", "--model", "resnet26", "--epochs", "5",
           "--epoch-samples", "127200", "--seed", "{seed}"]
grid = { seed = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] }
solo_time = "40s"
EOF

# ---- 1. a sweep whose node dies mid-run --------------------------------------
"$COLO" slurm submit "$work/sweep.toml" --nodes 2 --gpus-per-node 2 --mechanism mps \
  --backend sim --sim-devices 2 --dir "$work/sub" | tee "$work/submit.txt"
array=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["array_job_id"])' \
  "$work/sub/plan.json")
[ -n "$array" ] || fail "no array job id in the plan"
shard0_running() {
  squeue -h --array -j "$array" -o '%K %T %N' | awk '$1 == 0 && $2 == "RUNNING" {print $3}' | grep .
}
wait_for 240 "shard 0 to run" shard0_running >/dev/null
node=$(shard0_running)
# Its six jobs have started (colo prints a line for each).
jobs_started() {
  [ "$(grep -c ' started on gpu' "$work/sub/slurm/shard-0.out" 2>/dev/null || true)" -ge 6 ]
}
wait_for 240 "shard 0's jobs to start" jobs_started
# Killed mid-run: none of its jobs may have ended (else the test proves nothing).
if grep -q ' ok after' "$work/sub/slurm/shard-0.out" 2>/dev/null; then
  fail "shard 0's jobs ended before the node could be killed (a machine this slow needs longer jobs)"
fi
echo "killing node $node (shard 0, attempt 0) after $(elapsed)"
"$LOCAL_SLURM" kill-node "$cluster" "$node"
if [ "${#nodes[@]}" = 1 ]; then
  # One node only: it has to come back for the requeued shard to run.
  node_down() { sinfo -h -N -n "$node" -o '%T' | grep -q down; }
  wait_for 240 "node $node to be marked down" node_down
  "$LOCAL_SLURM" start-node "$cluster" "$node"
fi
array_done() { [ -z "$(squeue -h --array -j "$array" -o %i 2>/dev/null)" ]; }
wait_for 400 "the array to end" array_done
echo "array $array ended after $(elapsed)"
"$COLO" slurm status "$work/sub" | tee "$work/status.txt"

[ -f "$work/sub/shards/0/attempt-1.db" ] || fail "shard 0 was not rerun as attempt 1"
[ ! -f "$work/sub/shards/0/attempt-0.db" ] || fail "shard 0's killed attempt published a store"
[ -f "$work/sub/shards/1/attempt-0.db" ] || fail "shard 1 published no store"
grep -q 'attempt 1' "$work/sub/slurm/shard-0.out" || fail "shard 0's output shows no second attempt"

"$COLO" slurm collect "$work/sub" | tee "$work/collect.txt" || fail "colo slurm collect failed"
"$COLO" show --db "$work/sub/colo.db" | tee "$work/show.txt"
"$COLO" show --db "$work/sub/colo.db" --json >"$work/show.json"
python3 - "$work/show.json" <<'EOF' || fail "the merged store is not 12 ok jobs, each once"
import json, sys
run = json.load(open(sys.argv[1]))
jobs = run["jobs"]
names = [j["name"] for j in jobs]
states = {j["name"]: j["state"] for j in jobs}
assert len(jobs) == 12, f"{len(jobs)} jobs"
assert len(set(names)) == 12, f"duplicated: {sorted(names)}"
assert all(s == "ok" for s in states.values()), states
print("merged store: 12 ok jobs, each once")
EOF
grep -q 'shard 0 attempt 1' "$work/collect.txt" || fail "collect did not take shard 0's attempt 1"
# The MPS daemon of the killed attempt was left behind on the "node"; the next
# colo there (the requeued attempt: both nodes share this machine) removed it.
left=$(find "$TMPDIR" -path '*/mps/*' -name owner.json 2>/dev/null || true)
[ -z "$left" ] || fail "MPS directories left behind: $left"
grep -q 'left by colo pid' "$work"/sub/slurm/shard-*.out ||
  fail "no colo reported cleaning up the killed attempt's MPS daemon"

# ---- 2. scancel: colo stops its MPS daemon and publishes ---------------------
cat >"$work/long.toml" <<EOF
[defaults]
workdir = "$SRC"

[[job]]
name = "long"
command = ["python3", "bench/sim_train.py", "--model", "resnet26", "--epochs", "20",
           "--epoch-samples", "159000", "--seed", "{seed}"]
grid = { seed = [1, 2] }
EOF
"$COLO" slurm submit "$work/long.toml" --nodes 1 --gpus-per-node 2 --mechanism mps \
  --backend sim --sim-devices 2 --dir "$work/sub2" >/dev/null
array2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["array_job_id"])' \
  "$work/sub2/plan.json")
daemon_up() { [ -n "$(find "$TMPDIR" -path '*/mps/*' -name owner.json)" ]; }
wait_for 240 "the shard's MPS daemon" daemon_up
long_started() { grep -q 'epoch 1 done' "$work/sub2/slurm/shard-0.out" 2>/dev/null; }
wait_for 240 "the long jobs' first epoch" long_started
scancel "$array2"
array2_done() { [ -z "$(squeue -h --array -j "$array2" -o %i 2>/dev/null)" ]; }
wait_for 240 "the cancelled array to end" array2_done
published() { [ -f "$work/sub2/shards/0/attempt-0.db" ]; }
wait_for 120 "the cancelled shard's store" published
left=$(find "$TMPDIR" -path '*/mps/*' -name owner.json 2>/dev/null || true)
[ -z "$left" ] || fail "the cancelled shard left its MPS directory: $left"
for p in /proc/[0-9]*; do
  if { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -q "^CUDA_MPS_PIPE_DIRECTORY=$TMPDIR"; then
    fail "a process of the cancelled shard's MPS daemon survived: ${p#/proc/}"
  fi
done
"$COLO" slurm collect "$work/sub2" >"$work/collect2.txt" && fail "collect of cancelled jobs said ok"
"$COLO" show --db "$work/sub2/colo.db" --json >"$work/show2.json"
python3 - "$work/show2.json" <<'EOF' || fail "the cancelled shard's jobs are not recorded cancelled"
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
assert len(jobs) == 2 and all(j["state"] == "cancelled" for j in jobs), [(j["name"], j["state"]) for j in jobs]
print("cancelled shard: 2 jobs recorded cancelled")
EOF

# ---- 3. a cancelled shard resubmitted ----------------------------------------
# 4 jobs of about 16 s (2 epochs of 8 s) as 2 shards of 2.
cat >"$work/short.toml" <<EOF
[defaults]
workdir = "$SRC"
env = { PYTHONUNBUFFERED = "1" }

[[job]]
name = "short"
command = ["python3", "bench/sim_train.py", "--model", "resnet26", "--epochs", "2",
           "--epoch-samples", "127200", "--seed", "{seed}"]
grid = { seed = [1, 2, 3, 4] }
solo_time = "16s"
EOF
"$COLO" slurm submit "$work/short.toml" --nodes 2 --gpus-per-node 2 --mechanism naive \
  --backend sim --sim-devices 2 --dir "$work/sub3" >/dev/null
array3=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["array_job_id"])' \
  "$work/sub3/plan.json")
shard1_jobs_started() {
  [ "$(grep -c ' started on gpu' "$work/sub3/slurm/shard-1.out" 2>/dev/null || true)" -ge 2 ]
}
wait_for 240 "shard 1's jobs to start" shard1_jobs_started
code=0
"$COLO" slurm collect "$work/sub3" >"$work/collect3-early.txt" 2>&1 || code=$?
[ "$code" = 4 ] || fail "collect while shards run exited $code, not 4 (not yet): $(cat "$work/collect3-early.txt")"
scancel "${array3}_1"
array3_done() { [ -z "$(squeue -h --array -j "$array3" -o %i 2>/dev/null)" ]; }
wait_for 240 "the array to end" array3_done
cancelled_published() { [ -f "$work/sub3/shards/1/attempt-0.db" ]; }
wait_for 120 "the cancelled shard's store" cancelled_published
"$COLO" slurm resubmit "$work/sub3" 1 | tee "$work/resubmit.txt" || fail "colo slurm resubmit failed"
resubmitted=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["array_job_id"])' \
  "$work/sub3/shards/1/resubmission-1.json")
[ -n "$resubmitted" ] && [ "$resubmitted" != "$array3" ] ||
  fail "no array job recorded for the resubmission"
resubmission_done() {
  [ -f "$work/sub3/shards/1/attempt-1.db" ] &&
    [ -z "$(squeue -h --array -j "$resubmitted" -o %i 2>/dev/null)" ]
}
wait_for 300 "the resubmitted shard to end" resubmission_done
"$COLO" slurm status "$work/sub3" | tee "$work/status3.txt"
grep -q "resubmitted as array job $resubmitted, attempts from 1" "$work/status3.txt" ||
  fail "status does not show the resubmission"
grep -Eq '^1 +[^ ]+ +[^ ]+ +2 0,1 +ok ' "$work/status3.txt" ||
  fail "status does not show shard 1's attempt 1 ok"
"$COLO" slurm collect "$work/sub3" | tee "$work/collect3.txt" ||
  fail "collect after the resubmission failed"
grep -q "shard 1 attempt 1 (Slurm ${resubmitted}_1 " "$work/collect3.txt" ||
  fail "collect did not take shard 1's attempt 1"
grep -q "earlier attempt 0 ignored" "$work/collect3.txt" ||
  fail "collect does not list the cancelled attempt as ignored"
"$COLO" show --db "$work/sub3/colo.db" --json >"$work/show3.json"
python3 - "$work/show3.json" <<'EOF' || fail "the merged store is not 4 ok jobs, each once"
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
assert len(jobs) == 4 and len({j["name"] for j in jobs}) == 4, [j["name"] for j in jobs]
assert all(j["state"] == "ok" for j in jobs), [(j["name"], j["state"]) for j in jobs]
print("resubmitted shard: 4 ok jobs, each once")
EOF
[ -f "$work/sub3/shards/1/attempt-0.db" ] && [ -d "$work/sub3/shards/1/attempt-0/logs" ] ||
  fail "the cancelled attempt's files are gone"
grep -q 'colo shard 1, attempt 1' "$work/sub3/slurm/shard-1.out" ||
  fail "shard 1's output shows no attempt 1"

passed=1
echo "PASSED in $(elapsed)"
