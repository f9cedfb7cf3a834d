#!/usr/bin/env bash
# The steady speed-up checked against the jobs' own logs: seven identical
# ResNet-26 trainings (CIFAR-10-shaped synthetic data, batch 128, 6 epochs of
# 51200 samples: about 5 s each alone on an H100) under MPS, and one alone for
# the solo rate. colo's figure (`colo show`) is printed beside
# bench/verify-speedup.py's, which reads only the jobs' epoch lines.
#
#   bench/speedup-check.sh OUTPUT_DIR [client|regex|both]   (default both)
#
#   client  the script reports epochs through colo's Python client
#   regex   the script only prints (bench/train.py --no-progress-client) and the
#           job file reads its lines through epoch_regex, with the epoch number
#           and the samples in named groups
#
# COLO=path/to/colo (default build-release/colo); for a test without a GPU:
# BACKEND=sim TRAINER=bench/sim_train.py (and an MPS control program on PATH).
# Leaves in OUTPUT_DIR: colo.db, the job files, run-*.txt (colo's output),
# show-*.txt/json, compare-*.txt (colo beside the check), machine.txt.
# Exit status 1 when a figure and its check differ by more than 10%.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
COLO="$(realpath -m "${COLO:-build-release/colo}")"
OUT="$(realpath -m "${1:?usage: bench/speedup-check.sh OUTPUT_DIR [client|regex|both]}")"
MODE="${2:-both}"
BACKEND="${BACKEND:-nvml}"
TRAINER="${TRAINER:-bench/train.py}"
EPOCHS="${EPOCHS:-6}"
SAMPLES="${SAMPLES:-51200}"
case "$MODE" in client) modes=(client) ;; regex) modes=(regex) ;; both) modes=(client regex) ;;
  *) echo "speedup-check.sh: mode must be client, regex or both, not '$MODE'" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
export COLO_HOME="$OUT/home"
DB="$OUT/colo.db"
{
  date -u +"%Y-%m-%d %H:%M UTC"
  nvidia-smi --query-gpu=name,memory.total,driver_version,mig.mode.current --format=csv,noheader
  echo "cpus: $(nproc)"
  python3 -c 'import torch, timm; print("torch", torch.__version__, "timm", timm.__version__)'
  echo "colo: $COLO; backend $BACKEND; trainer $TRAINER; $EPOCHS epochs of $SAMPLES samples"
} >"$OUT/machine.txt" 2>&1

# job_file MODE REPEAT: the job file of MODE's jobs, REPEAT of them.
job_file() {
  local file="$OUT/$1-x$2.toml"
  local extra="" regex=""
  if [ "$1" = regex ]; then
    extra=', "--no-progress-client"'
    # bench/train.py's line: epoch 3/6: 5.1s, 10040 img/s, loss 2.30, 51200 samples, ended at ...
    regex="epoch_regex = 'epoch (?P<epoch>\\d+)/\\d+: .*, (?P<samples>\\d+) samples, ended at'"
  fi
  cat >"$file" <<EOF
[run]
max_per_gpu = 7

[defaults]
workdir = "$REPO"
env = { PYTHONUNBUFFERED = "1" }

[[job]]
name = "resnet26"
command = ["python3", "$TRAINER", "--model", "resnet26", "--dataset", "cifar10",
           "--batch-size", "128", "--epochs", "$EPOCHS", "--epoch-samples", "$SAMPLES"$extra]
$regex
EOF
  [ "$2" -gt 1 ] && echo "repeat = $2" >>"$file"
  echo "$file"
}

last_run() { "$COLO" show --db "$DB" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["run"]["id"])'; }

# run MODE REPEAT MECHANISM NAME: one colo run, its output to run-NAME.txt.
run() {
  "$COLO" run "$(job_file "$1" "$2")" --backend "$BACKEND" --mechanism "$3" --plain \
    --db "$DB" --logs "$OUT/logs" 2>&1 | tee "$OUT/run-$4.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ]
}

status=0
for mode in "${modes[@]}"; do
  echo "=== $mode: one alone (exclusive), then seven under MPS"
  if ! run "$mode" 1 exclusive "$mode-alone"; then
    echo "=== $mode: FAILED: colo run (see run-$mode-alone.txt)"; status=1; continue
  fi
  solo=$(last_run)
  if ! run "$mode" 7 mps "$mode-mps7"; then
    echo "=== $mode: FAILED: colo run (see run-$mode-mps7.txt)"; status=1; continue
  fi
  seven=$(last_run)
  "$COLO" show "$seven" --db "$DB" | tee "$OUT/show-$mode.txt"
  "$COLO" show "$seven" --db "$DB" --json >"$OUT/show-$mode.json"
  echo "=== $mode: colo beside bench/verify-speedup.py (solo: run $solo)"
  python3 bench/compare-speedups.py --colo "$COLO" --db "$DB" --pair "$solo" "$seven" \
    --max-diff 10 | tee "$OUT/compare-$mode.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done
exit $status
