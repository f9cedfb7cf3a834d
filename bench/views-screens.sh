#!/usr/bin/env bash
# Issue 12's GPU captures: colo serve on the real GPU with three collocated
# training jobs (two ResNet26, one ResNet50 on ImageNet64-shaped data, all
# started at once under MPS where it is available), and while they run, what
# `colo top` shows (as text), what the JSON API answers and what /metrics
# says, a few times. Then the finished jobs' pages and their run's report
# page (the dashboard's own HTML). Under 3 minutes on an H100. It changes no
# GPU setting.
#
#   bench/views-screens.sh OUTPUT_DIR      (COLO=path/to/colo, default build-release/colo)
#
# Without a GPU: BACKEND=sim (jobs are bench/sim_train.py with the same arguments).
#
# Leaves in OUTPUT_DIR: machine.txt; serve.log; at each capture N (1-3, ~20 s
# apart while the jobs run): top-N.txt (`colo top --once`), snapshot-N.json
# (/api/snapshot), metrics-N.txt (/metrics); after the jobs end: job-ID.json
# (/api/jobs/ID: epochs, attempts, log tail), snapshot-end.json, dashboard.html
# and echarts.min.js (/dashboard/), report/index.html (/dashboard/runs/RUN/: `colo report`'s
# page for the service's run), wait.txt, colo.db (the store).
# On a machine with Chromium, bench/views-replay.py OUTPUT_DIR serves these
# captures to the dashboard page so it can be looked at and screenshot there.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
COLO="$(realpath -m "${COLO:-build-release/colo}")"
BACKEND="${BACKEND:-nvml}"
PORT="${PORT:-18470}"
OUT_DIR="$(realpath -m "${1:?usage: bench/views-screens.sh OUTPUT_DIR}")"
mkdir -p "$OUT_DIR"
export COLO_HOME="$OUT_DIR/home"
export COLO_LOCK_DIR="$OUT_DIR/locks"
export COLO_SOCKET="$OUT_DIR/home/colo.sock"
DB="$OUT_DIR/colo.db"
BASE="http://127.0.0.1:$PORT"
TRAIN=bench/train.py
[ "$BACKEND" = sim ] && TRAIN=bench/sim_train.py

{
  date -u +"%Y-%m-%d %H:%M UTC"
  nvidia-smi --query-gpu=name,memory.total,driver_version,mig.mode.current --format=csv,noheader
  echo "cpus: $(nproc)"
  python3 -c 'import torch, timm; print("torch", torch.__version__, "timm", timm.__version__)'
  echo "backend: $BACKEND"
} >"$OUT_DIR/machine.txt" 2>&1

cat >"$OUT_DIR/jobs.toml" <<EOF
# Three trainings that share the GPU: two ResNet26 on CIFAR-10-shaped data
# and one ResNet50 on ImageNet64-shaped data, about a minute each together.
[defaults]
workdir = "$REPO"
env = { PYTHONUNBUFFERED = "1" }

[[job]]
name = "resnet26"
command = ["python3", "$TRAIN", "--model", "resnet26", "--dataset", "cifar10",
           "--batch-size", "128", "--epochs", "10", "--epoch-samples", "40960"]
repeat = 2

[[job]]
name = "resnet50-in64"
command = ["python3", "$TRAIN", "--model", "resnet50", "--dataset", "imagenet64",
           "--batch-size", "128", "--epochs", "16", "--epoch-samples", "12800"]
EOF

mechanism=naive
command -v nvidia-cuda-mps-control >/dev/null && mechanism=mps
[ "$BACKEND" = sim ] && mechanism=naive
echo "=== colo serve --backend $BACKEND --mechanism $mechanism --policy fixed --http 127.0.0.1:$PORT --http-logs"
"$COLO" serve --backend "$BACKEND" --mechanism "$mechanism" --policy fixed --db "$DB" \
  --http "127.0.0.1:$PORT" --http-logs >"$OUT_DIR/serve.log" 2>&1 &
serve_pid=$!
stop_service() {
  kill -TERM "$serve_pid" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$serve_pid" 2>/dev/null || return 0; sleep 0.2; done
  kill -KILL "$serve_pid" 2>/dev/null
}
trap stop_service EXIT

fetch() {  # fetch PATH FILE: GET the service's PATH into FILE
  python3 - "$BASE$1" "$2" <<'PY'
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=30) as r, open(sys.argv[2], "wb") as out:
    out.write(r.read())
PY
}
running() {  # how many jobs run now
  "$COLO" queue --json 2>/dev/null | python3 -c '
import json, sys
try:
    print(sum(1 for j in json.load(sys.stdin)["jobs"] if j["state"] == "running"))
except Exception:
    print(-1)'
}

for _ in $(seq 1 100); do "$COLO" queue >/dev/null 2>&1 && break; sleep 0.2; done
ids=$("$COLO" submit --json "$OUT_DIR/jobs.toml" | python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["ids"])))')
echo "submitted: $ids"
for _ in $(seq 1 150); do [ "$(running)" -ge 3 ] && break; sleep 0.2; done

for n in 1 2 3; do
  sleep 20
  echo "=== capture $n ($(running) jobs running)"
  "$COLO" top --once --width 160 >"$OUT_DIR/top-$n.txt" 2>&1
  fetch /api/snapshot "$OUT_DIR/snapshot-$n.json"
  fetch /metrics "$OUT_DIR/metrics-$n.txt"
  head -12 "$OUT_DIR/top-$n.txt"
done

echo "=== waiting for the jobs to end"
# shellcheck disable=SC2086  # ids: one argument each
timeout 100 "$COLO" wait $ids >"$OUT_DIR/wait.txt" 2>&1
echo "wait: exit $?"
cat "$OUT_DIR/wait.txt"
for id in $ids; do fetch "/api/jobs/$id" "$OUT_DIR/job-$id.json"; done
fetch /api/snapshot "$OUT_DIR/snapshot-end.json"
fetch /dashboard/ "$OUT_DIR/dashboard.html"
fetch /dashboard/echarts.min.js "$OUT_DIR/echarts.min.js"
run=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["service"]["run_id"])' "$OUT_DIR/snapshot-end.json")
mkdir -p "$OUT_DIR/report"
fetch "/dashboard/runs/$run/" "$OUT_DIR/report/index.html"
stop_service
trap - EXIT
python3 - "$OUT_DIR" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
for path in sorted(glob.glob(os.path.join(out, "job-*.json"))):
    d = json.load(open(path))
    j = d["job"]
    print("job %s %-16s %-8s epochs %2d attempts %d" % (j["id"], j["name"], j["state"],
          len(d["epochs"]), len(d["attempts"])))
PY
