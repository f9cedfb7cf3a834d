#!/usr/bin/env bash
# The first command after a service run (issue 59, item 3), on the simulated
# backend: a real `colo serve` (PRODUCER) runs POINTS jobs of `true` (50 signatures) on
# 64 simulated GPUs and is killed (SIGKILL) as soon as the last one ended, as a
# crash or a power cut would leave it; then, on fresh copies of that store,
# `colo run` of 4 jobs, the first command after it, SAMPLES times with each
# binary (BEFORE and AFTER, alternately), each pinned to core CPU, and a
# second command on the same copy (warm). Measured from outside colo:
#   - CPU (user + system), wall and peak RSS from /usr/bin/time;
#   - the time from the command to its first job's start, from the jobs' own
#     clocks (each prints `date +%s%N` to its log) against the shell's.
# Also records what the killed service had kept of its run (run_derived).
#
#   first-command.sh OUTPUT_DIR   (PRODUCER, BEFORE, AFTER: colo binaries;
#                                  POINTS=115200, SAMPLES=5, CPU=1;
#                                  KILL_AFTER_S: kill the service then, if
#                                  not all ended; PRISTINE=DB: measure after
#                                  the store DB, a killed service's, instead)
set -euo pipefail
OUT_DIR="${1:?usage: first-command.sh OUTPUT_DIR}"
PRODUCER=$(realpath "${PRODUCER:?}") BEFORE=$(realpath "${BEFORE:?}") AFTER=$(realpath "${AFTER:?}")
points=${POINTS:-115200}
samples=${SAMPLES:-5}
cpu=${CPU:-1}
mkdir -p "$OUT_DIR"
OUT_DIR=$(realpath "$OUT_DIR")
work=$(mktemp -d /tmp/colo-first-command.XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
export COLO_HOME="$work/home" COLO_SOCKET="$work/colo.sock"

{
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs);" \
    "each measured command pinned to core $cpu (taskset); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "producer: $PRODUCER; before: $BEFORE; after: $AFTER"
  echo "service: colo serve --backend sim --sim-devices 64 --policy fixed --max-per-gpu 4;" \
    "$points jobs of \`true\` (a grid of 50 points, repeated); killed with SIGKILL once the last ended"
} | tee "$OUT_DIR/machine.txt"

# 50 signatures (as bench/scale_history.py's history has), submitted 9,600
# jobs at a time (a submission takes 10,000 at most): POINTS / 9600 times.
printf '[[job]]\nname = "p"\ncommand = ["true", "{lr}"]\ngrid = { lr = [%s] }\nrepeat = 192\n' \
  "$(seq -s, 1 50)" >"$work/sweep.toml"
printf '[[job]]\nname = "t"\ncommand = ["date", "+%%s%%N"]\nrepeat = 4\n' >"$work/four.toml"

ended_jobs() {
  sqlite3 "$work/colo.db" "SELECT count(*) FROM jobs WHERE state NOT IN ('queued', 'running')" \
    2>/dev/null || echo 0
}
if [ -n "${PRISTINE:-}" ]; then
  sqlite3 "$PRISTINE" ".backup '$work/colo.db'"
  echo "store: $PRISTINE (a killed service's), $(ended_jobs 2>/dev/null || true)" >>"$OUT_DIR/machine.txt"
else
"$PRODUCER" serve --backend sim --sim-devices 64 --policy fixed --max-per-gpu 4 \
  --db "$work/colo.db" --logs "$work/serve-logs" --lock-dir "$work/locks" \
  --max-jobs-per-user $((points + 100)) >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 600); do [ -S "$COLO_SOCKET" ] && break; sleep 0.1; done
t0=$(date +%s)
submissions() {
  sqlite3 "$work/colo.db" "SELECT count(*) FROM service_submissions" 2>/dev/null || echo 0
}
# Each submission once the service has all but 2,000 of the earlier ones
# done. A service this busy (150 jobs ending a second) may answer a client
# after its 5 s timeout (main's alike): a submission the store does not hold
# 30 s later is sent again.
for k in $(seq $((points / 9600))); do
  while [ "$(ended_jobs)" -lt $(((k - 1) * 9600 - 2000)) ]; do sleep 1; done
  while [ "$(submissions)" -lt "$k" ]; do
    "$PRODUCER" submit "$work/sweep.toml" >>"$OUT_DIR/submit.txt" 2>&1 || true
    for _ in $(seq 30); do [ "$(submissions)" -ge "$k" ] && break; sleep 1; done
  done
done
while [ "$(ended_jobs)" -lt "$points" ]; do
  [ -n "${KILL_AFTER_S:-}" ] && [ $(($(date +%s) - t0)) -ge "$KILL_AFTER_S" ] && break
  sleep 1
done
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
pid=
echo "service: $(ended_jobs) jobs ended in $(($(date +%s) - t0)) s, then killed" | tee -a "$OUT_DIR/machine.txt"
gzip -c "$work/serve.log" >"$OUT_DIR/serve.log.gz"
rm -rf "$work/serve-logs"
fi
echo "jobs ended in the store: $(ended_jobs)" >"$OUT_DIR/kept-by-the-service.txt"
sqlite3 "$work/colo.db" "SELECT run_id, kind, version, length(body) FROM run_derived" \
  >>"$OUT_DIR/kept-by-the-service.txt"
sqlite3 "$work/colo.db" "SELECT json_extract(body, '\$.through_id'), json_array_length(body, '\$.head'), json_array_length(body, '\$.rest') FROM run_derived WHERE kind = 'learning-part'" \
  >>"$OUT_DIR/kept-by-the-service.txt" 2>/dev/null || true
echo "jobs of the service's run after the last id kept: $(sqlite3 "$work/colo.db" "SELECT count(*) FROM jobs WHERE id > coalesce((SELECT json_extract(body, '\$.through_id') FROM run_derived WHERE kind = 'learning-part'), 0)")" \
  >>"$OUT_DIR/kept-by-the-service.txt"
# A consistent copy (what the WAL holds included).
sqlite3 "$work/colo.db" ".backup '$work/pristine.db'"

run_once() {  # LABEL BINARY K: a first and a second `colo run` on a fresh copy
  local label=$1 bin=$2 k=$3 state out t0 starts start_s
  cp "$work/pristine.db" "$work/run.db"
  rm -f "$work/run.db-wal" "$work/run.db-shm"
  for state in first second; do
    out="$OUT_DIR/$label-$k-$state.txt"
    rm -rf "$work/logs"
    echo "command: $bin run four.toml --backend sim --plain (pinned to core $cpu)" >"$out"
    t0=$(date +%s%N)
    /usr/bin/time -f "time: %e s wall, %U s user, %S s system, %M KB max RSS" \
      taskset -c "$cpu" "$bin" run "$work/four.toml" --backend sim --plain --db "$work/run.db" \
      --logs "$work/logs" >>"$out" 2>&1
    starts=$(find "$work/logs" -name '*.log' -exec cat {} + | grep -E '^[0-9]{19}$' | sort -n | xargs)
    start_s=$(awk -v a="${starts%% *}" -v b="$t0" 'BEGIN{printf "%.3f", (a - b) / 1e9}')
    echo "first job started: $start_s s after the command (its own clock)" >>"$out"
  done
}
for k in $(seq "$samples"); do
  run_once before "$BEFORE" "$k"
  run_once after "$AFTER" "$k"
done

# The table: one row per binary and state, each sample's figures.
{
  echo "| binary | command | CPU (user + system), s | wall, s | first job started, s | max RSS, MB |"
  echo "|---|---|---|---|---|---|"
  for label in before after; do
    for state in first second; do
      cpu_s=() wall=() start=() rss=()
      for k in $(seq "$samples"); do
        f="$OUT_DIR/$label-$k-$state.txt"
        cpu_s+=("$(sed -n 's/^time: .* s wall, \([0-9.]*\) s user, \([0-9.]*\) s system.*/\1 \2/p' "$f" | awk '{printf "%.2f", $1 + $2}')")
        wall+=("$(sed -n 's/^time: \([0-9.]*\) s wall.*/\1/p' "$f")")
        start+=("$(sed -n 's/^first job started: \([0-9.]*\) s.*/\1/p' "$f")")
        rss+=("$(sed -n 's/.* \([0-9]*\) KB max RSS/\1/p' "$f" | awk '{printf "%d", $1 / 1024}')")
      done
      echo "| $label | $state | ${cpu_s[*]} | ${wall[*]} | ${start[*]} | ${rss[*]} |"
    done
  done
} | tee "$OUT_DIR/table.md"
