#!/usr/bin/env bash
# colo serve with a long queue (issue 37, item 3), on the simulated backend:
# a service on SIM_GPUS simulated GPUs (default 64), one job per GPU
# (--max-per-gpu 1: the simulated GPU sees no memory of a `sleep`, so the
# auto policy would otherwise pack them), and a sweep of POINTS grid points (default 10,000)
# submitted at once, so that all but SIM_GPUS wait. Its jobs sleep, so the
# machine is quiet but for colo. Measures, from outside colo:
#   - the service's CPU while nothing changes (10 s, from /proc/PID/stat);
#   - `colo queue` (the first page) and a one-job `colo submit`, 5 times
#     each, their wall time as the client's (bash's $EPOCHREALTIME around it);
#   - the service's resident memory (/proc/PID/status VmRSS).
# Prints one table row per figure; keeps the outputs in OUTPUT_DIR.
# With IDLE_S set, it measures instead an idle service's memory (issue 59,
# item 4): no client at all after the sweep's submission, the service's RSS
# every SAMPLE_S seconds (default 10) for IDLE_S seconds from the moment the
# submission returned, into rss.tsv: VmRSS (/proc/PID/status) beside two
# independent readings of the same figure, the sum of Rss over
# /proc/PID/smaps and ps's RSS; table.md then gives the first (the
# submission's own memory, before the service's next look at its heap), the
# peak of the others, the last, and the process's peak (VmHWM).
#
#   bench/scale-serve.sh OUTPUT_DIR   (COLO=path/to/colo, default build-release/colo;
#                                      POINTS=10000, SIM_GPUS=64, CPU=1: the service's core;
#                                      IDLE_S=600 SAMPLE_S=10: the idle-memory case;
#                                      JOB_S=3600: how long each point sleeps)
set -euo pipefail
cd "$(dirname "$0")/.."
COLO="$(realpath "${COLO:-build-release/colo}")"
OUT_DIR="${1:?usage: bench/scale-serve.sh OUTPUT_DIR}"
points=${POINTS:-10000}
gpus=${SIM_GPUS:-64}
mkdir -p "$OUT_DIR"
OUT_DIR=$(realpath "$OUT_DIR")
work=$(mktemp -d /tmp/colo-scale-serve.XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
export COLO_HOME="$work/home" COLO_SOCKET="$work/colo.sock"

# The sweep: POINTS points of `sleep`, each its own signature.
seeds=$(seq -s, 0 $((points / 10 - 1)))
cat >"$work/sweep.toml" <<EOF
[[job]]
name = "sweep"
command = ["sleep", "${JOB_S:-3600}", "{lr}", "{seed}"]
grid = { lr = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], seed = [$seeds] }
gpu_memory = "100GiB"
EOF
printf '[[job]]\nname = "one"\ncommand = ["sleep", "3600"]\ngpu_memory = "100GiB"\n' >"$work/one.toml"

{
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs);" \
    "the service pinned to core ${CPU:-1} (taskset)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "colo: $("$COLO" --version 2>/dev/null || echo unknown)"
  echo "service: colo serve --backend sim --sim-devices $gpus --policy auto; $points grid points queued"
} | tee "$OUT_DIR/machine.txt"

taskset -c "${CPU:-1}" "$COLO" serve --backend sim --sim-devices "$gpus" --db "$work/colo.db" \
  --logs "$work/logs" --lock-dir "$work/locks" --max-jobs-per-user $((points + 100)) --max-per-gpu 1 \
  >"$OUT_DIR/serve.log" 2>&1 &
pid=$!
for _ in $(seq 600); do [ -S "$COLO_SOCKET" ] && break; sleep 0.1; done
# Wall times from bash's own clock ($EPOCHREALTIME, no process of its own:
# two `date` processes around a command added 12-15 ms on this VM, as much as
# the command). The floor row is /bin/true timed the same way.
ms() { local t=${EPOCHREALTIME/[.,]/}; echo $(( (t - $1) / 1000 )); }
t0=${EPOCHREALTIME/[.,]/}
"$COLO" submit "$work/sweep.toml" >"$OUT_DIR/submit-sweep.txt" 2>&1
echo "sweep of $points submitted in $(ms "$t0") ms" | tee -a "$OUT_DIR/machine.txt"
if [ -n "${IDLE_S:-}" ]; then
  # MB, rounded down, of kB figures.
  mb() { echo $(($1 / 1024)); }
  echo -e "elapsed_s\tvmrss_mb\tsmaps_rss_mb\tps_rss_mb" >"$OUT_DIR/rss.tsv"
  start=${EPOCHREALTIME/[.,]/}
  next=0
  while [ "$next" -le "$IDLE_S" ]; do
    now=$(( (${EPOCHREALTIME/[.,]/} - start) / 1000000 ))
    if [ "$now" -lt "$next" ]; then sleep $((next - now)); continue; fi
    vm=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
    sm=$(awk '/^Rss:/ {s += $2} END {print s}' "/proc/$pid/smaps")
    ps_rss=$(ps -o rss= -p "$pid" | tr -d ' ')
    echo -e "$now\t$(mb "$vm")\t$(mb "$sm")\t$(mb "$ps_rss")" | tee -a "$OUT_DIR/rss.tsv"
    next=$((next + ${SAMPLE_S:-10}))
  done
  read -r running queued < <("$COLO" queue --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(1 for j in d.get("jobs", []) if j.get("state") == "running"), d.get("queued_total", 0))' \
    2>/dev/null || echo 0 0)
  hwm=$(awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$pid/status")
  awk -F'\t' -v running="$running" -v gpus="$gpus" -v hwm="$hwm" -v ended=$((points - queued - running)) 'NR == 2 { first = $2 }
    NR > 2 {
      if ($2 > peak) { peak = $2; peak_at = $1 }
      last = $2; last_at = $1; smaps = $3; ps = $4 }
    END {
      print "| figure | measured | target |"
      print "|---|---|---|"
      printf "| RSS as the submission returned (0 s) | %d MB | - |\n", first
      printf "| peak RSS from the next sample to %d s, no client | %d MB (at %d s) | under 100 MB |\n", last_at, peak, peak_at
      printf "| last RSS (at %d s): VmRSS, smaps, ps | %d, %d, %d MB | under 100 MB |\n", last_at, last, smaps, ps
      printf "| the process'"'"'s peak RSS (VmHWM), the submission included | %d MB | - |\n", hwm
      printf "| jobs running at the end | %d of %d GPUs | all |\n", running, gpus
      printf "| jobs ended by the end | %d | - |\n", ended
    }' "$OUT_DIR/rss.tsv" | tee "$OUT_DIR/table.md"
  exit 0
fi
# Until the GPUs are full and the starts have settled.
for _ in $(seq 120); do
  n=$("$COLO" queue --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(1 for j in d.get("jobs", []) if j.get("state") == "running"))' 2>/dev/null || echo 0)
  [ "$n" -ge "$gpus" ] && break
  sleep 1
done
sleep 5
ticks=$(getconf CLK_TCK)
cpu_of() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
c0=$(cpu_of); t0=${EPOCHREALTIME/[.,]/}
sleep 10
c1=$(cpu_of); wall=$(ms "$t0")
idle=$(awk -v c=$((c1 - c0)) -v t="$ticks" -v w="$wall" 'BEGIN{printf "%.1f", 100 * c / t / (w / 1000)}')
queue_ms=() submit_ms=() floor_ms=()
for i in 1 2 3 4 5; do
  t0=${EPOCHREALTIME/[.,]/}; "$COLO" queue >"$OUT_DIR/queue.txt" 2>&1
  t1=${EPOCHREALTIME/[.,]/}; queue_ms+=($(((t1 - t0) / 1000)))
  t0=${EPOCHREALTIME/[.,]/}; "$COLO" submit "$work/one.toml" >>"$OUT_DIR/submit-one.txt" 2>&1
  t1=${EPOCHREALTIME/[.,]/}; submit_ms+=($(((t1 - t0) / 1000)))
  t0=${EPOCHREALTIME/[.,]/}; /bin/true; t1=${EPOCHREALTIME/[.,]/}; floor_ms+=($(((t1 - t0) / 1000)))
done
rss=$(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$pid/status")
{
  echo "| figure | measured | target |"
  echo "|---|---|---|"
  echo "| idle CPU of the service (10 s) | ${idle}% | at most 2% |"
  echo "| \`colo queue\`, first page (5 times) | ${queue_ms[*]} ms | at most 50 ms |"
  echo "| one-job \`colo submit\` (5 times) | ${submit_ms[*]} ms | at most 20 ms |"
  echo "| floor: \`/bin/true\` timed the same way (5 times) | ${floor_ms[*]} ms | - |"
  echo "| the service's RSS | ${rss} MB | at most 100 MB |"
} | tee "$OUT_DIR/table.md"
