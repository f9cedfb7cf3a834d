#!/usr/bin/env bash
# Issue 36 on a GPU: profiling windows of collocated jobs. Three ResNet-26
# trainings (bench/train.py, CIFAR-10-shaped synthetic data) share the GPU
# under the default policy on a fresh store: a and b take a torch window of
# their second epoch from the job file; c is asked for one by `colo profile`
# once it has ended its first epoch; where nsys is installed, d runs under it.
# Then `colo show` (its profiling section) and, beside each window, the checks
# from its trace alone (bench/check-profile-trace.py --summary) and from the
# job's own log (bench/check-profile-rates.py: the rates inside and after it,
# and how long writing its files took).
#
#   bench/profile-gpu.sh RESULTS_DIR       (COLO=build-release/colo, BACKEND=nvml)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/profile-gpu.sh RESULTS_DIR}
colo=$(realpath "${COLO:-build-release/colo}")
mkdir -p "$out"
out=$(realpath "$out")
rm -rf "$out/home" "$out/colo.db" "$out/logs"
export COLO_HOME=$out/home
train='"python3", "bench/train.py", "--model", "resnet26", "--dataset", "cifar10", "--batch-size", "128", "--epoch-samples", "20000"'
{
  echo "[defaults]"
  echo "workdir = \"$PWD\""
  echo 'env = { PYTHONUNBUFFERED = "1" }'
  for name in a b; do
    printf '[[job]]\nname = "%s"\ncommand = [%s, "--epochs", "3"]\nprofile = { tool = "torch", after_epoch = 1 }\n' "$name" "$train"
  done
  printf '[[job]]\nname = "c"\ncommand = [%s, "--epochs", "8"]\n' "$train"
  if command -v nsys >/dev/null; then
    printf '[[job]]\nname = "d"\ncommand = [%s, "--epochs", "3"]\nprofile = { tool = "nsys", after = "10s", duration = "3s" }\n' "$train"
  fi
} >"$out/jobs.toml"
echo "nsys: $(command -v nsys || echo 'not installed')" | tee "$out/tools.txt"
db=(--db "$out/colo.db")
"$colo" run "$out/jobs.toml" --backend "${BACKEND:-nvml}" --plain "${db[@]}" --logs "$out/logs" \
  >"$out/run.txt" 2>&1 &
run=$!
# c's first epoch ended: ask it for a window of 2 s.
for _ in $(seq 1 240); do
  epochs=$("$colo" show --json "${db[@]}" 2>/dev/null | python3 -c 'import json, sys
j = json.load(sys.stdin)
print(next((x["epochs"] for x in j["jobs"] if x["name"] == "c"), 0))' 2>/dev/null || echo 0)
  [ "${epochs:-0}" -ge 1 ] && break
  sleep 0.5
done
"$colo" profile c --run 1 --for 2s --wait 120s "${db[@]}" | tee "$out/profile-c.txt" || true
wait "$run" || true
tail -n 30 "$out/run.txt"
"$colo" show "${db[@]}" >"$out/show.txt"
"$colo" show --json "${db[@]}" >"$out/show.json"
sed -n '/^Profiling windows/,$p' "$out/show.txt"
echo "== each window against its trace (bench/check-profile-trace.py)"
for summary in "$out"/logs/*/1/*.profile/torch-summary-*.json; do
  python3 bench/check-profile-trace.py --summary "$summary" || true
done >"$out/check.txt"
cat "$out/check.txt"
ls -la "$out"/logs/*/1/*.profile/ >"$out/profile-files.txt" 2>&1 || true
echo "== what profiling cost, from the jobs' logs (bench/check-profile-rates.py)"
python3 bench/check-profile-rates.py "$out"/logs/*/1/*.profile/torch-summary-*.json \
  >"$out/check-rates.txt" || true
cat "$out/check-rates.txt"
grep -q PASS "$out/check.txt" && ! grep -q FAIL "$out/check.txt" "$out/check-rates.txt"
