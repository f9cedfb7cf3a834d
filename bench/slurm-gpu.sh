#!/usr/bin/env bash
# Benchmark for `colo slurm`: a one-node Slurm started on this GPU machine
# from Debian packages unpacked into a private prefix (no Slurm installed, no
# network needed), and the same sweep three ways on the same GPU:
#
#   1. colo run --mechanism exclusive          (the baseline: one job at a time)
#   2. colo run --mechanism mps                (colo on the machine)
#   3. colo slurm submit --mechanism mps       (colo inside the Slurm allocation:
#      one shard on the node; then colo slurm collect)
#
# and prints both speed-ups over the baseline (makespan: first job start to
# last job end, as `colo show` reports it); they should agree within 10%.
#
#   scripts/fetch-slurm-debs.sh                 (on a Debian 12 machine with network: .slurm-debs/)
#   bench/slurm-gpu.sh OUTPUT_DIR               (on the GPU machine, as root)
#
# Environment: COLO (default build-release/colo), SLURM_DEBS (default
# .slurm-debs; when absent, Slurm's programs must be on PATH), SWEEP (default
# examples/resnet26x7.toml), COLO_BACKEND_ARGS (default "--backend nvml"; CI
# and dry runs: "--backend sim --sim-devices 1").
#
# Leaves in OUTPUT_DIR: colo.db (runs 1 and 2), slurm-sweep/ (the submission:
# plan, batch script, Slurm's output, shard store, merged colo.db),
# run-*.txt, show-*.json, speedups.txt, machine.txt, cluster/log/ (Slurm's logs).
set -uo pipefail
cd "$(dirname "$0")/.."
COLO="$(realpath "${COLO:-build-release/colo}")"
OUT_DIR="$(realpath -m "${1:?usage: bench/slurm-gpu.sh OUTPUT_DIR}")"
SLURM_DEBS="${SLURM_DEBS:-.slurm-debs}"
SWEEP="${SWEEP:-examples/resnet26x7.toml}"
read -r -a BACKEND <<<"${COLO_BACKEND_ARGS:---backend nvml}"
mkdir -p "$OUT_DIR"
export COLO_HOME="$OUT_DIR/home"
DB="$OUT_DIR/colo.db"
started=$(date +%s)
say() { echo "[$(($(date +%s) - started))s] $*"; }

{
  date -u +"%Y-%m-%d %H:%M UTC"
  nvidia-smi --query-gpu=name,memory.total,driver_version,mig.mode.current --format=csv,noheader
  echo "cpus: $(nproc)"
  grep PRETTY_NAME /etc/os-release
  ldd --version | head -n 1
  python3 -c 'import torch, timm; print("torch", torch.__version__, "timm", timm.__version__)'
} >"$OUT_DIR/machine.txt" 2>&1

# ---- Slurm: unpacked from the carried packages, started on this machine ------
if [ -d "$SLURM_DEBS" ]; then
  rm -rf "$OUT_DIR/slurm-prefix"
  scripts/local-slurm.sh unpack "$SLURM_DEBS" "$OUT_DIR/slurm-prefix" || exit 1
  export SLURM_PREFIX="$OUT_DIR/slurm-prefix"
elif ! command -v slurmctld >/dev/null; then
  echo "no $SLURM_DEBS and no Slurm on PATH: run scripts/fetch-slurm-debs.sh on a Debian 12" \
    "machine with network and carry .slurm-debs/ here" >&2
  exit 1
fi
CLUSTER="$OUT_DIR/cluster"
rm -rf "$CLUSTER"
trap 'scripts/local-slurm.sh stop "$CLUSTER"' EXIT
gpu_files=sim
[ -e /dev/nvidia0 ] && gpu_files=real
scripts/local-slurm.sh start "$CLUSTER" --nodes 1 --gpus-per-node 1 --gpu-files "$gpu_files" \
  --owner-pid $$ || exit 1
eval "$(scripts/local-slurm.sh env "$CLUSTER")"
say "Slurm up: $(sinfo --version)"

# ---- 1 and 2: colo run ---------------------------------------------------------
for mechanism in exclusive mps; do
  say "colo run --mechanism $mechanism"
  "$COLO" run "$SWEEP" --mechanism "$mechanism" --plain --db "$DB" "${BACKEND[@]}" \
    >"$OUT_DIR/run-$mechanism.txt" 2>&1
  "$COLO" show --db "$DB" --json >"$OUT_DIR/show-$mechanism.json"
done

# ---- 3: colo slurm submit, then collect ----------------------------------------
say "colo slurm submit --mechanism mps"
submitted=$(date +%s)
# Planned for this GPU's model, from the store of runs 1 and 2, whose profiles
# the shard's colo run reads (--profiles-from), as colo run's did from its store.
model=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 |
  grep -o 'H[12]00' || echo H200)
"$COLO" slurm submit "$SWEEP" --nodes 1 --gpus-per-node 1 --mechanism mps --db "$DB" \
  --gpu-model "$model" --dir "$OUT_DIR/slurm-sweep" "${BACKEND[@]}" 2>&1 |
  tee "$OUT_DIR/run-slurm-submit.txt"
array=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["array_job_id"])' \
  "$OUT_DIR/slurm-sweep/plan.json")
for _ in $(seq 1 480); do
  [ -z "$(squeue -h --array -j "$array" -o %i 2>/dev/null)" ] && break
  sleep 0.5
done
wall_slurm=$(($(date +%s) - submitted))
"$COLO" slurm status "$OUT_DIR/slurm-sweep" | tee "$OUT_DIR/run-slurm-status.txt"
"$COLO" slurm collect "$OUT_DIR/slurm-sweep" 2>&1 | tee "$OUT_DIR/run-slurm-collect.txt"
"$COLO" show --db "$OUT_DIR/slurm-sweep/colo.db" --json >"$OUT_DIR/show-slurm.json"
cp "$OUT_DIR/slurm-sweep/slurm/shard-0.out" "$OUT_DIR/run-slurm-shard.txt" 2>/dev/null

# ---- the speed-ups ---------------------------------------------------------------
python3 - "$OUT_DIR" "$wall_slurm" <<'EOF' | tee "$OUT_DIR/speedups.txt"
import json, sys
out, wall = sys.argv[1], int(sys.argv[2])
def run(name):
    s = json.load(open(f"{out}/show-{name}.json"))
    states = [j["state"] for j in s["jobs"]]
    return s["makespan_ms"], states, s["run"].get("slurm")
excl, excl_states, _ = run("exclusive")
mps, mps_states, _ = run("mps")
slurm, slurm_states, where = run("slurm")
print(f"jobs ok: exclusive {excl_states.count('ok')}/{len(excl_states)}, "
      f"mps {mps_states.count('ok')}/{len(mps_states)}, "
      f"slurm mps {slurm_states.count('ok')}/{len(slurm_states)} (Slurm: {where})")
if not (excl and mps and slurm):
    print("FAIL: a run has no makespan"); sys.exit(1)
a, b = excl / mps, excl / slurm
print(f"makespan: exclusive {excl/1000:.1f}s, colo run mps {mps/1000:.1f}s, "
      f"colo slurm mps {slurm/1000:.1f}s (submit to collected: {wall}s)")
print(f"speed-up over exclusive: colo run {a:.2f}x, colo slurm {b:.2f}x "
      f"(ratio {b/a:.3f})")
ok = abs(b / a - 1) <= 0.10 and all(s == "ok" for s in excl_states + mps_states + slurm_states)
print("PASS: the speed-ups agree within 10%" if ok else "FAIL: the speed-ups differ by more than 10% or a job failed")
sys.exit(0 if ok else 1)
EOF
status=$?
say "done"
exit $status
