#!/usr/bin/env bash
# The collocation study (the paper's suites) on one GPU, in parts that each fit
# one device command of under 8 minutes on an H100, with colo's steady
# speed-ups printed beside bench/verify-speedup.py's (from the jobs' logs
# alone) after every part.
#
#   bench/study.sh OUTPUT_DIR PART...        bench/study.sh --list
#
# Every part runs `colo bench` (4 epochs per job, 5 or 6 for mixed jobs; solo
# epochs of at least 5 s: the planner's minimum) into OUTPUT_DIR/colo.db, appending to a store left
# there by earlier parts (carry it over when the machine is a fresh one), and
# includes the exclusive case of each of its workloads, so that its speed-ups
# and their checks stand alone. Part `report` writes one `colo report` over
# every experiment the store holds (all five guidelines on one page) into
# OUTPUT_DIR/report.
#
# The fewest parts that give every guideline a verdict (MIG's aside: colo
# never turns MIG mode on): small-naive, small-mps, large-cait-x23, report.
#
# COLO=path/to/colo (default build-release/colo). Without a GPU:
# BACKEND=sim (bench/sim_train.py plays every model; MPS needs a control
# program on PATH). Leaves OUTPUT_DIR/<part>.log (colo bench's output),
# <part>-compare.txt (colo beside the check) and machine.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
COLO="$(realpath -m "${COLO:-build-release/colo}")"
BACKEND="${BACKEND:-nvml}"
EPOCHS="${EPOCHS:-4}"

# part -> "suite|case globs[|epochs]" entries separated by ";". Mixed jobs
# of different speeds get more epochs: the fastest must not finish before the
# slowest has run two steady epochs beside it. Estimates (H100, from the H200
# and H100 runs in docs/results scaled by each model's rate) in the comments;
# `colo bench ... --dry-run` prints the planner's upper bound.
declare -A PARTS=(
  # ~5 min
  [small-naive]="paper-uniform|small/resnet26/exclusive/*,small/resnet26/naive/x[237]/*"
  # ~3.5 min
  [small-mps]="paper-uniform|small/resnet26/exclusive/*,small/resnet26/mps/x[237]/*"
  # ~4.5 min
  [recsys]="paper-recsys|recsys/*/exclusive/*,recsys/*/naive/*,recsys/*/mps/*|6"
  # ~6 min each
  [medium-resnet50-naive]="paper-uniform|medium/resnet50/exclusive/*,medium/resnet50/naive/x[237]/*"
  [medium-resnet50-mps]="paper-uniform|medium/resnet50/exclusive/*,medium/resnet50/mps/x[237]/*"
  [medium-efficientnet-naive]="paper-uniform|medium/efficientnetv2_s/exclusive/*,medium/efficientnetv2_s/naive/x[237]/*"
  [medium-efficientnet-mps]="paper-uniform|medium/efficientnetv2_s/exclusive/*,medium/efficientnetv2_s/mps/x[237]/*"
  # ~5.5 min, ~6.5 min
  [large-resnet152-x23]="paper-uniform|large/resnet152/exclusive/*,large/resnet152/naive/x[23]/*,large/resnet152/mps/x[23]/*"
  [large-resnet152-x7]="paper-uniform|large/resnet152/exclusive/*,large/resnet152/naive/x7/*,large/resnet152/mps/x7/*"
  # ~5 min, ~6 min
  [large-cait-x23]="paper-uniform|large/cait_xxs24_224/exclusive/*,large/cait_xxs24_224/naive/x[23]/*,large/cait_xxs24_224/mps/x[23]/*"
  [large-cait-x7]="paper-uniform|large/cait_xxs24_224/exclusive/*,large/cait_xxs24_224/naive/x7/*,large/cait_xxs24_224/mps/x7/*"
  # ~5.5 min; ~4 and ~3.5 min; ~4 and ~3.5 min
  [mixed-1]="paper-mixed|mixed/S+M+M/serial/*,mixed/S+M+M/naive/*,mixed/S+M+M/mps/*|5"
  [mixed-2-serial]="paper-mixed|mixed/S+S+M+M/serial/*|5"
  [mixed-2-together]="paper-mixed|mixed/S+S+M+M/naive/*,mixed/S+S+M+M/mps/*|5"
  [mixed-3-serial]="paper-mixed|mixed/S+M+M+M/serial/*|5"
  [mixed-3-together]="paper-mixed|mixed/S+M+M+M/naive/*,mixed/S+M+M+M/mps/*|5"
)
ORDER=(small-naive small-mps recsys medium-resnet50-naive medium-resnet50-mps
       medium-efficientnet-naive medium-efficientnet-mps large-resnet152-x23 large-resnet152-x7
       large-cait-x23 large-cait-x7 mixed-1 mixed-2-serial mixed-2-together mixed-3-serial
       mixed-3-together report)

if [ "${1:-}" = --list ]; then
  for part in "${ORDER[@]}"; do echo "$part  ${PARTS[$part]:-one colo report over every experiment in the store}"; done
  exit 0
fi
OUT="$(realpath -m "${1:?usage: bench/study.sh OUTPUT_DIR PART... (--list shows the parts)}")"
shift
[ $# -gt 0 ] || { echo "study.sh: name at least one part (--list shows them)" >&2; exit 2; }
for part in "$@"; do
  [ "$part" = report ] || [ -n "${PARTS[$part]:-}" ] || {
    echo "study.sh: unknown part '$part' (--list shows them)" >&2; exit 2; }
done
mkdir -p "$OUT"
export COLO_HOME="$OUT/home"
DB="$OUT/colo.db"
{
  date -u +"%Y-%m-%d %H:%M UTC"
  nvidia-smi --query-gpu=name,memory.total,driver_version,mig.mode.current --format=csv,noheader
  echo "cpus: $(nproc)"
  python3 -c 'import torch, timm; print("torch", torch.__version__, "timm", timm.__version__)'
  echo "colo: $COLO; backend $BACKEND; $EPOCHS epochs per job"
} >>"$OUT/machine.txt" 2>&1

status=0
for part in "$@"; do
  if [ "$part" = report ]; then
    mapfile -t ids < <(grep -ho '^experiment [0-9]*:' "$OUT"/*.log 2>/dev/null | awk '{print "exp:" $2+0}' | sort -u -t: -k2n)
    [ ${#ids[@]} -gt 0 ] || { echo "study.sh: no experiments in $OUT/*.log yet" >&2; status=1; continue; }
    echo "=== report over ${ids[*]}"
    "$COLO" report "${ids[@]}" --db "$DB" --out "$OUT/report" --no-png || status=1
    sed -n '/^Guideline/,$p' "$OUT/report/summary.txt"
    continue
  fi
  log="$OUT/$part.log"
  : >"$log"
  IFS=';' read -ra entries <<<"${PARTS[$part]}"
  for entry in "${entries[@]}"; do
    IFS='|' read -r suite cases epochs <<<"$entry"
    epochs="${epochs:-$EPOCHS}"
    echo "=== $part: colo bench --suite $suite --cases '$cases' --epochs $epochs" | tee -a "$log"
    "$COLO" bench --suite "$suite" --cases "$cases" --epochs "$epochs" --backend "$BACKEND" \
      --db "$DB" --logs "$OUT/logs" --plain 2>&1 | tee -a "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  done
  echo "=== $part: colo beside bench/verify-speedup.py" | tee "$OUT/$part-compare.txt"
  python3 bench/compare-speedups.py --colo "$COLO" --db "$DB" --max-diff 10 "$log" \
    --solo-from "$OUT"/*.log \
    | tee -a "$OUT/$part-compare.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done
exit $status
