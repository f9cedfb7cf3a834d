#!/usr/bin/env bash
# Issue 33 on a GPU: a sixteen-trial learning-rate sweep of a timm model
# (bench/sweeps/lr16-asha-resnet26.toml) under the default policy, first
# without its [early_stop] table (every trial runs its 9 epochs), then with
# ASHA, each on a fresh store; then bench/check-early-stop.py: the makespan,
# the time until the best configuration's final loss was known and the best lr,
# from the jobs' own logs beside colo's records, and the ratios of the two.
#
#   bench/early-stop.sh RESULTS_DIR
#
# Environment: COLO=build-release/colo  BACKEND=nvml  COLO_ARGS (more `colo run` flags)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/early-stop.sh RESULTS_DIR}
colo=${COLO:-build-release/colo}
sweep=bench/sweeps/lr16-asha-resnet26.toml
# The same sweep without [early_stop], beside it (its workdir is relative to the file).
full=bench/sweeps/.lr16-full-resnet26.toml
sed '/^\[early_stop\]/,/^$/d' "$sweep" >"$full"
trap 'rm -f "$full"' EXIT
status=0
for case in full asha; do
  dir=$out/$case
  rm -rf "$dir" && mkdir -p "$dir"
  file=$sweep && [ "$case" = full ] && file=$full
  echo "== $case: $file"
  # shellcheck disable=SC2086  # COLO_ARGS: split on spaces
  COLO_HOME=$dir/home "$colo" run "$file" --backend "${BACKEND:-nvml}" --plain --db "$dir/colo.db" \
    --logs "$dir/logs" ${COLO_ARGS:-} >"$dir/run.txt" 2>&1 || status=1
  tail -n 25 "$dir/run.txt"
  COLO_HOME=$dir/home "$colo" show --db "$dir/colo.db" >"$dir/show.txt"
  COLO_HOME=$dir/home "$colo" show --json --db "$dir/colo.db" >"$dir/show.json"
done
python3 bench/check-early-stop.py "$out/full" "$out/asha" | tee "$out/check.txt" || status=1
exit $status
