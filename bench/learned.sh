#!/usr/bin/env bash
# Issue 26 on a GPU: an eight-point learning-rate sweep (bench/sweeps/lr-resnet26.toml)
# under the default policy on a fresh store, then what colo says each job
# learned (colo show --sort loss, --csv, --json), the report, the MLflow
# export, and the checks beside them: bench/check-learned.py (the CSV against
# the jobs' own logs, no colo code), the JSON against the CSV, and
# scripts/check-mlflow-store.py (the export read as MLflow reads it; needs PyYAML).
#
#   bench/learned.sh RESULTS_DIR
#
# Environment: COLO=build-release/colo  BACKEND=nvml  COLO_ARGS (more `colo run` flags)
#   SWEEP=bench/sweeps/lr-resnet26.toml (another job file whose logs read the same)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/learned.sh RESULTS_DIR}
colo=${COLO:-build-release/colo}
mkdir -p "$out"
rm -rf "$out/home" "$out/colo.db" "$out/logs" "$out/report" "$out/mlruns"
export COLO_HOME=$out/home  # a fresh store: colo has never seen these jobs
db=(--db "$out/colo.db")
status=0

# shellcheck disable=SC2086  # COLO_ARGS: split on spaces
"$colo" run "${SWEEP:-bench/sweeps/lr-resnet26.toml}" --backend "${BACKEND:-nvml}" --plain "${db[@]}" \
  --logs "$out/logs" ${COLO_ARGS:-} | tee "$out/run.txt"
"$colo" show --sort loss "${db[@]}" | tee "$out/show.txt"
"$colo" show --sort loss --csv "${db[@]}" >"$out/show.csv"
"$colo" show --sort loss --json "${db[@]}" >"$out/show.json"
"$colo" report "${db[@]}" --out "$out/report" --no-png >"$out/report.txt"
"$colo" export mlflow last "${db[@]}" --to "$out/mlruns" | tee "$out/export.txt"

echo "== the CSV against the jobs' logs (bench/check-learned.py)"
mapfile -t logs < <(python3 -c 'import json, sys
for j in json.load(open(sys.argv[1]))["jobs"]:
    print(j["log_path"])' "$out/show.json")
python3 bench/check-learned.py --param lr --sorted --csv "$out/show.csv" "${logs[@]}" |
  tee "$out/check-learned.txt" || status=1

echo "== the JSON against the CSV"
python3 - "$out/show.json" "$out/show.csv" <<'PY' | tee "$out/check-json.txt" || status=1
import csv, json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
rows = list(csv.DictReader(open(sys.argv[2], newline="")))
bad = [r["id"] for j, r in zip(jobs, rows)
       if str(j["id"]) != r["id"] or float(j["params"]["lr"]) != float(r["lr"])
       or abs(j["metrics"]["loss"]["last"] - float(r["loss_last"])) > 1e-9
       or abs(j["metrics"]["loss"]["best"] - float(r["loss_best"])) > 1e-9]
print("%d jobs, same order, lr and loss: %s" % (len(jobs), "PASS" if not bad and len(jobs) == len(rows) else "FAIL %s" % bad))
sys.exit(1 if bad or len(jobs) != len(rows) else 0)
PY

echo "== the MLflow export (scripts/check-mlflow-store.py)"
if python3 -c 'import yaml' 2>/dev/null; then
  python3 scripts/check-mlflow-store.py "$out/mlruns" >"$out/check-mlflow.txt" && echo PASS || status=1
else
  echo "skipped: no PyYAML for python3" | tee "$out/check-mlflow.txt"
fi
exit $status
