#!/usr/bin/env bash
# Checks colo's real parts on a machine with an NVIDIA GPU, in under three
# minutes: the NVML backend (devices, monitor, per-process lists), a run under
# a real private MPS daemon, and recovery after colo is killed with SIGKILL
# (its run marked interrupted, its MPS daemon stopped by the next start).
#
#   scripts/gpu-check.sh [OUTPUT_DIR]      (COLO=path/to/colo to test another binary)
#
# Prints one PASS/FAIL line per check and exits non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
COLO="${COLO:-build/colo}"
OUT_DIR="$(realpath -m "${1:-gpu-check-out}")"
mkdir -p "$OUT_DIR"
export COLO_HOME="$OUT_DIR/home"
DB="$OUT_DIR/colo.db"
failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Processes whose environment names a pipe directory under our COLO_HOME.
our_mps_processes() {
  for p in $(pgrep -f nvidia-cuda-mps 2>/dev/null); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q "^CUDA_MPS_PIPE_DIRECTORY=$COLO_HOME/" && echo "$p"
  done
}

start=$(date +%s)
"$COLO" devices | tee "$OUT_DIR/devices.txt" && pass "colo devices" || fail "colo devices"
"$COLO" devices --json >"$OUT_DIR/devices.json" || fail "colo devices --json"
grep -q '"gpm_supported": true' "$OUT_DIR/devices.json" && pass "GPM supported" || echo "note: GPM not supported here"

"$COLO" monitor --count 4 --interval 500ms -p | tee "$OUT_DIR/monitor.txt" && pass "colo monitor" || fail "colo monitor"
"$COLO" monitor --count 2 --interval 200ms --json >"$OUT_DIR/monitor.jsonl" || fail "colo monitor --json"
grep -q '"simulated":true' "$OUT_DIR/monitor.jsonl" && fail "real backend labelled simulated"

# A real run under MPS: two short ResNet26 trainings at once.
"$COLO" run examples/gpu-check.toml --mechanism mps --plain --sample-period 250ms --db "$DB" 2>&1 | tee "$OUT_DIR/run-mps.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] && pass "mps run ended ok" || fail "mps run"
[ -z "$(our_mps_processes)" ] && pass "no MPS process of ours left after the run" || fail "MPS processes left: $(our_mps_processes)"
[ -z "$(ls -A "$COLO_HOME/mps" 2>/dev/null)" ] && pass "MPS state directory removed" || fail "MPS state left in $COLO_HOME/mps"
"$COLO" show --db "$DB" --json >"$OUT_DIR/show-mps.json" && pass "colo show --json" || fail "colo show --json"

# SIGKILL mid-run, then start again.
"$COLO" run examples/gpu-check.toml --mechanism mps --plain --db "$DB" >"$OUT_DIR/run-killed.txt" 2>&1 &
pid=$!
for _ in $(seq 1 60); do
  [ "$(grep -c ' started on ' "$OUT_DIR/run-killed.txt")" -ge 2 ] && break
  sleep 0.5
done
sleep 5   # let the jobs reach the GPU, so the MPS server is up too
kill -KILL "$pid"; wait "$pid" 2>/dev/null
sleep 1
left=$(our_mps_processes)
[ -n "$left" ] && pass "after SIGKILL the MPS daemon is still there (pids $left), as expected" ||
  fail "expected an orphaned MPS daemon after SIGKILL"
"$COLO" run examples/gpu-check-quick.toml --mechanism mps --plain --db "$DB" 2>&1 | tee "$OUT_DIR/run-after-kill.txt"
grep -q "interrupted" "$OUT_DIR/run-after-kill.txt" && pass "next start reports the killed run as interrupted" ||
  fail "no interrupted run reported"
grep -q "MPS daemon" "$OUT_DIR/run-after-kill.txt" && pass "next start stopped the stale MPS daemon" ||
  fail "stale MPS daemon not reported"
[ -z "$(our_mps_processes)" ] && pass "no MPS process of ours left at the end" || fail "MPS processes left: $(our_mps_processes)"
"$COLO" runs --db "$DB" | tee "$OUT_DIR/runs.txt"
grep -q interrupted "$OUT_DIR/runs.txt" && pass "store shows the killed run as interrupted" || fail "store state"

echo "gpu-check: $failures failed, $(( $(date +%s) - start ))s"
[ "$failures" -eq 0 ]
