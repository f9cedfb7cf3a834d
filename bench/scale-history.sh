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
# SERVICE=1 adds the first command after a service run (issue 59, item 3):
# a real `colo serve` (COLO) on GPUS simulated GPUs is given the same
# history as its own run (scale_history.py --into-run: as if it had run those
# jobs), keeps what its ended jobs taught as it does while it runs, runs TAIL
# `true` jobs (default 2,000) and is killed with SIGKILL once half of them
# ended; then, on fresh copies of its store, `colo run` of 4 jobs, the first
# command after it and a second, SAMPLES times (default 5) with each binary
# of COLO and COMPARE (another colo, say main's), alternately. Each of those
# commands is timed twice from outside colo: /usr/bin/time (CPU, wall, max
# RSS) and perf stat (task-clock), and its first job's start is read from
# the jobs' own clocks. Table: service-table.md.
#
#   bench/scale-history.sh OUTPUT_DIR   (COLO=path/to/colo, default build-release/colo;
#                                        DAYS=10, GPUS=8, JOB_MINUTES=30, EPOCH_S=60, CPU=1;
#                                        SERVICE=1 [COMPARE=path/to/colo SAMPLES=5 TAIL=2000];
#                                        SERVICE=only: that case alone;
#                                        KEEP_STORE=DB: a copy of the killed service's store)
# JOB_MINUTES=1 EPOCH_S=20 makes the service's run one of about 115,000 jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
COLO="$(realpath "${COLO:-build-release/colo}")"
COMPARE="${COMPARE:+$(realpath "$COMPARE")}"
service=${SERVICE:-}
OUT_DIR="${1:?usage: bench/scale-history.sh OUTPUT_DIR}"
days=${DAYS:-10}
gpus=${GPUS:-8}
job_minutes=${JOB_MINUTES:-30}
epoch_s=${EPOCH_S:-60}
cpu=${CPU:-1}
mkdir -p "$OUT_DIR"
OUT_DIR=$(realpath "$OUT_DIR")
work=$(mktemp -d /tmp/colo-scale-history.XXXXXX)
serve_pid=
cleanup() {
  [ -n "$serve_pid" ] && kill -KILL "$serve_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
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
cp "$work/pristine.db" "$work/schema.db"
[ "$service" = only ] || history_run=$(python3 bench/scale_history.py "$work/pristine.db" --days "$days" --gpus "$gpus" \
  --job-minutes "$job_minutes" --epoch-s "$epoch_s" 2>"$OUT_DIR/history.txt")
[ "$service" = only ] || cat "$OUT_DIR/history.txt"

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
[ "$service" = only ] || {
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
}

if [ -n "$service" ]; then
  samples=${SAMPLES:-5}
  tail_jobs=${TAIL:-2000}
  db="$work/serve.db"
  cp "$work/schema.db" "$db"
  # The store grown beforehand (600 MB of free pages), so that the history,
  # written beside the running service, fills free pages: a store file that
  # grows while another process checkpoints into it looks truncated to the
  # service's damage check (the header counts pages not written yet) for as
  # long as that checkpoint takes, and the service halts.
  sqlite3 "$db" "CREATE TABLE bench_pad (x BLOB);
    WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < 150000)
    INSERT INTO bench_pad SELECT zeroblob(3500) FROM n;
    DROP TABLE bench_pad; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
  export COLO_SOCKET="$work/colo.sock"
  sql() { sqlite3 -cmd ".timeout 60000" "$db" "$@"; }
  "$COLO" serve --backend sim --sim-devices "$gpus" --policy fixed --max-per-gpu 4 --db "$db" \
    --logs "$work/serve-logs" --lock-dir "$work/locks" >"$work/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 600); do [ -S "$COLO_SOCKET" ] && break; sleep 0.1; done
  serve_run=$(sql "SELECT max(id) FROM runs WHERE state = 'running'")
  python3 bench/scale_history.py "$db" --into-run "$serve_run" --days "$days" --gpus "$gpus" \
    --job-minutes "$job_minutes" --epoch-s "$epoch_s" 2>"$OUT_DIR/service-history.txt" >/dev/null
  cat "$OUT_DIR/service-history.txt"
  last_id=$(sql "SELECT max(id) FROM jobs WHERE run_id = $serve_run")
  kept_through() {
    sql "SELECT coalesce(max(json_extract(body, '\$.through_id')), 0) FROM run_derived
         WHERE run_id = $serve_run AND kind = 'learning-part'"
  }
  # The service keeps what ended jobs taught every 10 s while its writer is
  # idle: wait (up to 20 minutes) until it kept the whole history.
  t0=$(date +%s)
  while [ "$(kept_through)" -lt "$last_id" ] && [ $(($(date +%s) - t0)) -lt 1200 ]; do sleep 2; done
  echo "service: kept the history's facts through job $(kept_through) (its last: $last_id)" \
    "$(($(date +%s) - t0)) s after it was written" | tee -a "$OUT_DIR/service-history.txt"
  printf '[[job]]\nname = "p"\ncommand = ["true", "{lr}"]\ngrid = { lr = [%s] }\nrepeat = %d\n' \
    "$(seq -s, 1 50)" $(((tail_jobs + 49) / 50)) >"$work/tail.toml"
  "$COLO" submit "$work/tail.toml" >"$work/submit.txt" 2>&1 || cat "$work/submit.txt"
  ended_tail() {
    sql "SELECT count(*) FROM jobs WHERE run_id = $serve_run AND id > $last_id
         AND state NOT IN ('queued', 'running')"
  }
  t0=$(date +%s)
  while [ "$(ended_tail)" -lt $((tail_jobs / 2)) ] && [ $(($(date +%s) - t0)) -lt 600 ]; do
    sleep 0.2
  done
  kill -KILL "$serve_pid"
  wait "$serve_pid" 2>/dev/null || true
  serve_pid=
  {
    echo "service: killed with SIGKILL once $(ended_tail) of its $tail_jobs tail jobs ended"
    echo "kept by the service (run_derived): $(sql "SELECT kind, length(body) FROM run_derived
      WHERE run_id = $serve_run" | xargs)"
    echo "through job $(kept_through); jobs of its run after that: $(sql "SELECT count(*) FROM jobs
      WHERE run_id = $serve_run AND id > $(kept_through)")"
  } | tee -a "$OUT_DIR/service-history.txt"
  gzip -c "$work/serve.log" >"$OUT_DIR/service.log.gz"
  rm -rf "$work/serve-logs"
  sql ".backup '$work/killed.db'"
  [ -n "${KEEP_STORE:-}" ] && cp "$work/killed.db" "$KEEP_STORE"

  run_once() {  # LABEL BINARY K: a first and a second `colo run` on a fresh copy
    local label=$1 bin=$2 k=$3 state out t0 starts
    cp "$work/killed.db" "$work/run.db"
    rm -f "$work/run.db-wal" "$work/run.db-shm"
    for state in first second; do
      out="$OUT_DIR/service-$label-$k-$state.txt"
      rm -rf "$work/logs"
      echo "command: $label run four.toml --backend sim --plain (pinned to core $cpu)" >"$out"
      t0=$(date +%s%N)
      taskset -c "$cpu" /usr/bin/time -f "time: %e s wall, %U s user, %S s system, %M KB max RSS" \
        perf stat -x, -o "$out.perf" -e task-clock \
        "$bin" run "$work/four.toml" --backend sim --plain --db "$work/run.db" \
        --logs "$work/logs" >>"$out" 2>&1
      echo "perf task-clock: $(awk -F, '/task-clock/ {printf "%.1f", $1}' "$out.perf") ms" >>"$out"
      rm -f "$out.perf"
      starts=$(find "$work/logs" -name '*.log' -exec cat {} + | grep -E '^[0-9]{19}$' | sort -n | xargs)
      echo "first job started: $(awk -v a="${starts%% *}" -v b="$t0" \
        'BEGIN{printf "%.3f", (a - b) / 1e9}') s after the command (its own clock)" >>"$out"
    done
  }
  labels=(colo)
  [ -n "$COMPARE" ] && labels+=(compare)
  for k in $(seq "$samples"); do
    run_once colo "$COLO" "$k"
    [ -n "$COMPARE" ] && run_once compare "$COMPARE" "$k"
  done
  median() { tr ' ' '\n' | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
  {
    echo "| binary | command | CPU (user + system), s | perf task-clock, s | wall, s |" \
      "first job started, s | max RSS, MB |"
    echo "|---|---|---|---|---|---|---|"
    for label in "${labels[@]}"; do
      for state in first second; do
        cpu_s=() clock=() wall=() start=() rss=()
        for k in $(seq "$samples"); do
          f="$OUT_DIR/service-$label-$k-$state.txt"
          cpu_s+=("$(sed -n 's/^time: .* s wall, \([0-9.]*\) s user, \([0-9.]*\) s system.*/\1 \2/p' "$f" |
            awk '{printf "%.2f", $1 + $2}')")
          clock+=("$(sed -n 's/^perf task-clock: \([0-9.]*\) ms/\1/p' "$f" | awk '{printf "%.3f", $1 / 1000}')")
          wall+=("$(sed -n 's/^time: \([0-9.]*\) s wall.*/\1/p' "$f")")
          start+=("$(sed -n 's/^first job started: \([0-9.]*\) s.*/\1/p' "$f")")
          rss+=("$(sed -n 's/.* \([0-9]*\) KB max RSS/\1/p' "$f" | awk '{printf "%d", $1 / 1024}')")
        done
        echo "| $label | $state | ${cpu_s[*]} (median $(echo "${cpu_s[*]}" | median)) |" \
          "${clock[*]} (median $(echo "${clock[*]}" | median)) | ${wall[*]} |" \
          "${start[*]} (median $(echo "${start[*]}" | median)) | ${rss[*]} |"
      done
    done
  } | tee "$OUT_DIR/service-table.md"
fi
# No path of this machine in what is kept.
sed -i -e "s|$work|<work>|g" -e "s|$PWD|<repo>|g" "$OUT_DIR"/*.txt
[ "$service" = only ] || {
  echo "| case | start | wall | max RSS |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | tee "$OUT_DIR/table.md"
