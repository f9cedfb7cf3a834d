#!/usr/bin/env bash
# A day of a 512-GPU cluster's submissions under every policy, in one
# `colo simulate` (issue 37, item 5). Needs no GPU: everything is simulated.
# bench/cluster-day.py writes the day (about 50,000 jobs along a diurnal
# curve, a quarter of them points of 100-point sweeps); colo simulates it on
# one core; /usr/bin/time gives the wall time, CPU time and peak memory
# independently of colo. Keeps the day, the output and the machine in
# OUTPUT_DIR.
#
#   bench/cluster-day.sh OUTPUT_DIR   (COLO=path/to/colo, default build-release/colo;
#                                      GPUS=512, JOBS=50000, POLICIES: default every
#                                      policy, CPU=1: the core it runs on;
#                                      SWEEPS=distinct-unhinted: every sweep point
#                                      a signature of its own, without hints: issue
#                                      59's day, 12,500 such points in 50,000 jobs)
set -euo pipefail
cd "$(dirname "$0")/.."
COLO="${COLO:-build-release/colo}"
OUT_DIR="${1:?usage: bench/cluster-day.sh OUTPUT_DIR}"
if [ ! -x "$COLO" ]; then
  echo "bench/cluster-day.sh: no $COLO; build it (see bench/scale.sh)" >&2
  exit 2
fi
gpus=${GPUS:-512}
mkdir -p "$OUT_DIR"
{
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs);" \
    "pinned to core ${CPU:-1} (taskset)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "colo: $("$COLO" --version 2>/dev/null || echo unknown)"
} | tee "$OUT_DIR/machine.txt"
sweeps=()
case ${SWEEPS:-} in
  "") ;;
  distinct-unhinted) sweeps=(--distinct-sweeps --unhinted-sweeps) ;;
  *) echo "bench/cluster-day.sh: SWEEPS is distinct-unhinted or unset" >&2; exit 2 ;;
esac
bench/cluster-day.py "$OUT_DIR/day" --jobs "${JOBS:-50000}" "${sweeps[@]}" | tee -a "$OUT_DIR/machine.txt"
policies=()
[ -n "${POLICIES:-}" ] && policies=(--policies "$POLICIES")
cmd=(taskset -c "${CPU:-1}" "$COLO" simulate "$OUT_DIR/day/jobs.toml" --arrivals "$OUT_DIR/day/trace.csv"
  --gpu-count "$gpus" --no-store "${policies[@]}")
echo "command: ${cmd[*]}" | tee "$OUT_DIR/simulate.txt"
/usr/bin/time -f "time: %e s wall, %U s user, %S s system, %M KB max RSS" "${cmd[@]}" \
  >>"$OUT_DIR/simulate.txt" 2>&1
grep -A40 '^POLICY' "$OUT_DIR/simulate.txt"
grep '^time:' "$OUT_DIR/simulate.txt"
