#!/usr/bin/env bash
# Read-only MIG checks on a machine with an NVIDIA GPU whose MIG mode is OFF
# (it must stay off: this script never changes MIG mode, never creates an
# instance, never resets a GPU; it stops at once if MIG mode is on). It checks
# the NVML calls colo's mig mechanism resolves, the live profiles and
# placements against nvidia-smi, and that `colo run --mechanism mig` and
# `colo mig status` refuse or report clearly with MIG mode off.
#
#   scripts/mig-readonly-check.sh [OUTPUT_DIR]     (COLO=path/to/colo for another binary)
#
# Prints one PASS/FAIL line per check and exits non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
COLO="${COLO:-build/colo}"
OUT_DIR="$(realpath -m "${1:-mig-readonly-check-out}")"
mkdir -p "$OUT_DIR"
export COLO_HOME="$OUT_DIR/home"
failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

mode=$(nvidia-smi -i 0 --query-gpu=mig.mode.current --format=csv,noheader 2>&1 | tr -d ' ')
echo "MIG mode of GPU 0: $mode"
if [ "$mode" = "Enabled" ]; then
  echo "MIG mode is on here: this read-only script stops (a mig run would create instances)."
  exit 2
fi

# Which MIG functions the driver exports (colo resolves them with dlsym).
# (The symbol list goes to a file first: grep -q on a pipe would end nm early,
# and pipefail would count that as a miss.)
lib=$(ldconfig -p | awk '/libnvidia-ml.so.1 /{print $NF; exit}')
nm -D --defined-only "$lib" >"$OUT_DIR/nvml-symbols.txt" 2>&1 || fail "nm could not list $lib"
for fn in nvmlDeviceCreateGpuInstanceWithPlacement nvmlDeviceGetGpuInstances \
  nvmlDeviceGetGpuInstanceById nvmlGpuInstanceGetInfo nvmlGpuInstanceDestroy \
  nvmlGpuInstanceGetComputeInstanceProfileInfo nvmlGpuInstanceCreateComputeInstance \
  nvmlGpuInstanceGetComputeInstances nvmlGpuInstanceGetComputeInstanceById \
  nvmlComputeInstanceGetInfo_v2 nvmlComputeInstanceDestroy nvmlDeviceGetMaxMigDeviceCount \
  nvmlDeviceGetMigDeviceHandleByIndex nvmlDeviceGetGpuInstanceId nvmlDeviceGetComputeInstanceId \
  nvmlDeviceSetMigMode nvmlDeviceGetMigMode; do
  grep -qw "$fn" "$OUT_DIR/nvml-symbols.txt" && pass "driver exports $fn" || fail "driver lacks $fn"
done

nvidia-smi mig -lgip >"$OUT_DIR/lgip.txt" 2>&1
nvidia-smi mig -lgipp >"$OUT_DIR/lgipp.txt" 2>&1
"$COLO" mig profiles | tee "$OUT_DIR/colo-mig-profiles.txt" && pass "colo mig profiles" || fail "colo mig profiles"
# Each GPU instance profile nvidia-smi lists must be in colo's live list with
# the same id, instance count and memory.
while read -r name id total memory; do
  awk -v n="$name" -v i="$id" -v t="$total" -v m="$memory" \
    '$1 == n && $2 == i && $3 == t && $4 == m {found = 1} END {exit !found}' \
    "$OUT_DIR/colo-mig-profiles.txt" && pass "profile $name (id $id, x$total, $memory GiB) as nvidia-smi" ||
    fail "profile $name (id $id, x$total, $memory GiB) from nvidia-smi not in colo's list"
done < <(awk '$3 == "MIG" {split($6, n, "/"); print $4, $5, n[2], $7}' "$OUT_DIR/lgip.txt")
# Memory needs that fit both an 80 GB and a 141 GB GPU.
"$COLO" mig plan --memory 8GiB,16GiB,30GiB | tee "$OUT_DIR/colo-mig-plan.txt" && pass "colo mig plan (live)" || fail "colo mig plan"

# Read-only status: with MIG mode off it reads the mode only.
"$COLO" mig status 2>&1 | tee "$OUT_DIR/colo-mig-status.txt"
grep -q "MIG mode disabled" "$OUT_DIR/colo-mig-status.txt" && pass "colo mig status says MIG mode is off" || fail "colo mig status"

# A mig run must refuse before creating anything, saying how MIG mode is enabled.
printf '[[job]]\nname = "never"\ncommand = ["true"]\n' >"$OUT_DIR/never.toml"
"$COLO" run "$OUT_DIR/never.toml" --mechanism mig --plain --db "$OUT_DIR/colo.db" >"$OUT_DIR/run-mig.txt" 2>&1
code=$?
cat "$OUT_DIR/run-mig.txt"
[ "$code" -eq 3 ] && grep -q "MIG mode is disabled on GPU 0" "$OUT_DIR/run-mig.txt" &&
  grep -q -- "--yes-i-know" "$OUT_DIR/run-mig.txt" && pass "mig run refused with MIG mode off" || fail "mig run (exit $code)"

# enable without the flag must refuse without touching the GPU.
"$COLO" mig enable >"$OUT_DIR/enable.txt" 2>&1
[ $? -eq 2 ] && grep -q -- "--yes-i-know" "$OUT_DIR/enable.txt" && pass "mig enable needs --yes-i-know" || fail "mig enable"
after=$(nvidia-smi -i 0 --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader | tr -d ' ')
[ "$after" = "Disabled,Disabled" ] && pass "MIG mode unchanged ($after)" || fail "MIG mode now $after"
[ -z "$(ls -A "$COLO_HOME/mig" 2>/dev/null)" ] && pass "no MIG ownership record left" || fail "records left in $COLO_HOME/mig"

echo "outputs in $OUT_DIR"
[ "$failures" -eq 0 ] && echo "all MIG read-only checks passed" || echo "$failures check(s) failed"
exit $((failures > 0))
