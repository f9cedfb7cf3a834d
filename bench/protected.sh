#!/usr/bin/env bash
# Issue 56 on a GPU: a heavy job protected at a floor of its solo speed, three
# opportunistic neighbours filling the rest, under `colo run --mechanism mps`.
#   1. exclusive pass (a fresh store): the main job, then one neighbour, each
#      alone: their solo rates, in the store (what the floor is judged against)
#      and in their logs (what the check reads);
#   2. the protected pass, on that store (a WARM case: the floor is judged
#      against the solo rate the exclusive pass taught it): main qos = "protected" (min_speed =
#      FLOOR), three neighbours qos = "opportunistic", all submitted together;
#   3. bench/check-protected.py, from the jobs' own epoch lines only: the main
#      job's steady speed over its solo, and the neighbours' harvest.
#
#   bench/protected.sh RESULTS_DIR    (RUNS=1 FLOOR=0.9 CASE=heavy|light)
#
# heavy: main resnet50 bs 96 on 224 px (imagenet), neighbours resnet26 bs 128
#   on 64 px (imagenet64; the issue's neighbours were 128 px, which train.py
#   has no dataset for).
# light: main and neighbours resnet26 bs 128 on 32 px (cifar10; about 10,000 img/s alone
#   on an H100, launch-bound: epochs of 64,000 samples).
# Leaves per run in RESULTS_DIR/runN: the job files, colo's output, the jobs'
# logs and check.txt; RESULTS_DIR/summary.txt has a line per run.
set -euo pipefail
out=${1:?usage: bench/protected.sh RESULTS_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
colo=${COLO:-$root/build/colo}
py=${PYTHON:-python3}
floor=${FLOOR:-0.9}
case ${CASE:-heavy} in
  heavy) main_args="--model resnet50 --dataset imagenet --batch-size 96 --epoch-samples 28800 --epochs ${MAIN_EPOCHS:-8}"
         nb_args="--model resnet26 --dataset imagenet64 --batch-size 128 --epoch-samples 64000 --epochs ${NB_EPOCHS:-12}" ;;
  light) main_args="--model resnet26 --dataset cifar10 --batch-size 128 --epoch-samples 64000 --epochs ${MAIN_EPOCHS:-8}"
         nb_args="--model resnet26 --dataset cifar10 --batch-size 128 --epoch-samples 64000 --epochs ${NB_EPOCHS:-10}" ;;
  *) echo "protected.sh: CASE is heavy or light" >&2; exit 2 ;;
esac
mkdir -p "$out"
out=$(cd "$out" && pwd)
train=$root/bench/train.py
job() {  # NAME ARGS QOS-LINES
  printf '[[job]]\nname = "%s"\ncommand = ["%s", "%s", %s]\n%s\n' "$1" "$py" "$train" \
    "$(printf '"%s", ' $2 | sed 's/, $//')" "$3"
}
for run in $(seq 1 "${RUNS:-1}"); do
  dir=$out/run$run
  mkdir -p "$dir"
  export COLO_HOME=$dir/home COLO_LOCK_DIR=$dir/locks
  db=$dir/colo.db  # a fresh store each run: cold but for the exclusive pass
  { job main "$main_args" ""; job neighbour "$nb_args" ""; } >"$dir/solo.toml"
  { job main "$main_args" "qos = \"protected\"
min_speed = $floor"
    for i in 1 2 3; do job "neighbour$i" "$nb_args --seed $i" 'qos = "opportunistic"'; done
  } >"$dir/protected.toml"
  "$colo" run "$dir/solo.toml" --mechanism exclusive --db "$db" >"$dir/solo.out" 2>&1
  "$colo" run "$dir/protected.toml" --mechanism mps --db "$db" >"$dir/protected.out" 2>&1 || true
  # The logs where colo keeps them: runs/<store>/<run>/<NNN>-<name>[.attemptN].log;
  # run 1 is the exclusive pass, run 2 the protected one.
  runs=$(ls -d "$dir"/home/runs/*/ | head -1)
  cp -r "$runs/1" "$dir/solo-logs" && cp -r "$runs/2" "$dir/protected-logs"
  "$py" "$root/bench/check-protected.py" --solo-main "$dir"/solo-logs/001-main.log \
    --solo-neighbour "$dir"/solo-logs/002-neighbour.log --main "$dir"/protected-logs/001-main.log \
    --neighbour "$dir"/protected-logs/*-neighbour[123]*.log \
    --floor "$floor" --min-harvest "${MIN_HARVEST:-0.1}" | tee "$dir/check.txt" || true
  echo "run $run: $(tail -n 1 "$dir/check.txt")" >>"$out/summary.txt"
done
cat "$out/summary.txt"
