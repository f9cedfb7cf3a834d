#!/usr/bin/env bash
# What a long history costs colo (issue 37, item 2), on the simulated backend:
# a store holding a service's DAYS days on GPUS GPUs (bench/scale_history.py:
# about 3,800 jobs, 115,000 epoch ends and 3.5 million GPU samples for 10 days
# on 8 GPUs), and then, each on a fresh copy of it (the cold case) and once
# more on the same copy (warm: what colo kept of the history the first time):
#   - `colo run` of 4 jobs: the time from the command to its first job's
#     start (each job prints the time it started, `date +%s%N`, to its log);
#   - `colo show` of the service's run.
# Wall, CPU and RSS from /usr/bin/time; each command pinned to core CPU.
# Keeps the outputs and the table in OUTPUT_DIR.
#
#   bench/scale-history.sh OUTPUT_DIR   (COLO=path/to/colo, default build-release/colo;
#                                        DAYS=10, GPUS=8, JOB_MINUTES=30, EPOCH_S=60, CPU=1)
# JOB_MINUTES=1 EPOCH_S=20 makes the service's run one of about 115,000 jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
COLO="$(realpath "${COLO:-build-release/colo}")"
OUT_DIR="${1:?usage: bench/scale-history.sh OUTPUT_DIR}"
days=${DAYS:-10}
gpus=${GPUS:-8}
job_minutes=${JOB_MINUTES:-30}
epoch_s=${EPOCH_S:-60}
cpu=${CPU:-1}
mkdir -p "$OUT_DIR"
OUT_DIR=$(realpath "$OUT_DIR")
work=$(mktemp -d /tmp/colo-scale-history.XXXXXX)
trap 'rm -rf "$work"' EXIT
export COLO_HOME="$work/home"

{
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs);" \
    "each command pinned to core $cpu (taskset)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "colo: $("$COLO" --version 2>/dev/null || echo unknown)"
  echo "history: bench/scale_history.py --days $days --gpus $gpus --job-minutes $job_minutes" \
    "--epoch-s $epoch_s"
} | tee "$OUT_DIR/machine.txt"

printf '[[job]]\nname = "t"\ncommand = ["date", "+%%s%%N"]\nrepeat = 4\n' >"$work/four.toml"
# The schema (and run 1, the four jobs), then the service's history (run 2).
"$COLO" run "$work/four.toml" --backend sim --plain --db "$work/pristine.db" \
  --logs "$work/logs0" >/dev/null 2>&1
history_run=$(python3 bench/scale_history.py "$work/pristine.db" --days "$days" --gpus "$gpus" \
  --job-minutes "$job_minutes" --epoch-s "$epoch_s" 2>"$OUT_DIR/history.txt")
cat "$OUT_DIR/history.txt"

timed() {  # OUT_FILE COMMAND...: runs it pinned, /usr/bin/time's line last in OUT_FILE
  local out=$1
  shift
  echo "command: $*" >"$out"
  /usr/bin/time -f "time: %e s wall, %U s user, %S s system, %M KB max RSS" \
    taskset -c "$cpu" "$@" >>"$out" 2>&1
}
wall_of() { sed -n 's/^time: \([0-9.]*\) s wall.*/\1/p' "$1"; }
rss_mb_of() { sed -n 's/.* \([0-9]*\) KB max RSS/\1/p' "$1" | awk '{printf "%d", $1 / 1024}'; }

rows=()
for state in cold warm; do
  [ $state = cold ] && cp "$work/pristine.db" "$work/run.db"
  logs="$work/logs-run-$state"
  t0=$(date +%s%N)
  timed "$OUT_DIR/run-$state.txt" "$COLO" run "$work/four.toml" --backend sim --plain \
    --db "$work/run.db" --logs "$logs"
  # The check, from outside colo: the jobs' own clocks against the shell's.
  starts=$(find "$logs" -name '*.log' -exec cat {} + | grep -E '^[0-9]{19}$' | sort -n | xargs)
  start_s=$(awk -v a="${starts%% *}" -v b="$t0" 'BEGIN{printf "%.3f", (a - b) / 1e9}')
  {
    echo "command issued at (date +%s%N): $t0"
    echo "the jobs' own start times (date +%s%N, their logs): $starts"
    echo "first job started: $start_s s after the command"
  } >>"$OUT_DIR/run-$state.txt"
  rows+=("| \`colo run\` of 4 jobs, $state | $start_s s to the first start | $(wall_of "$OUT_DIR/run-$state.txt") s | $(rss_mb_of "$OUT_DIR/run-$state.txt") MB |")
done
for state in cold warm; do
  [ $state = cold ] && cp "$work/pristine.db" "$work/show.db"
  timed "$OUT_DIR/show-$state.txt" "$COLO" show "${history_run:?}" --db "$work/show.db"
  rows+=("| \`colo show $history_run\` (the ${days}-day run), $state | - | $(wall_of "$OUT_DIR/show-$state.txt") s | $(rss_mb_of "$OUT_DIR/show-$state.txt") MB |")
done
# The show's output is long (a row per job): keep its head and the time.
for state in cold warm; do
  f="$OUT_DIR/show-$state.txt"
  { head -40 "$f"; echo "[... $(($(wc -l <"$f") - 41)) lines cut ...]"; tail -1 "$f"; } >"$f.cut"
  mv "$f.cut" "$f"
done
# No path of this machine in what is kept.
sed -i -e "s|$work|<work>|g" -e "s|$PWD|<repo>|g" "$OUT_DIR"/*.txt
{
  echo "| case | start | wall | max RSS |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | tee "$OUT_DIR/table.md"
