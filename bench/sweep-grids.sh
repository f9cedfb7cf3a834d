#!/usr/bin/env bash
# Issues 17 and 22's GPU benchmark, one command: sweeps under --policy auto.
#
#   [COLO=build-release/colo] [BACKEND=sim] bench/sweep-grids.sh RESULTS_DIR
#
# 1. Grid: twelve resnet26 trainings, learning rate x seed
#    (bench/sweeps/grid-resnet26.toml, no hints), run one policy after another
#    on every GPU of the machine: fixed MPS degrees (mps-K; mps-K-after runs
#    the same degree again, to bracket the noise), exclusive, auto-cold (a
#    fresh store: the grid is one family colo has never seen; its first
#    instance is measured where it runs) and auto-warm (the same file again on
#    auto-cold's store: the family is known). For each: colo's makespan, the
#    makespan from the jobs' own logs (bench/sweep_check.py makespan: no colo
#    code), the newcomers measured, the jobs that ended ok. Then the criteria,
#    from the jobs' logs: auto-cold within 1.15x of the best fixed MPS degree
#    (issue 22), auto-warm within 1.1x (issue 17), and auto at least 5x faster
#    than exclusive.
# 2. Batch sizes: resnet50 at 64 px with batch sizes 32 to 512
#    (bench/sweeps/batch-resnet50.toml) under auto on a fresh store. Each job
#    placed by an estimate: the estimate beside the peak memory NVML showed
#    for its processes and what its allocator reported (bench/sweep_check.py
#    estimates): within 15%, and no job out of memory.
#
# Leaves in RESULTS_DIR: <policy>.txt (colo's output), grid-summary.txt,
# batch-estimates.txt, *-profiles.txt (`colo profiles` with each job file),
# the stores (grid-fixed.db, grid-auto.db, batch.db) and the jobs' logs
# (home/runs/). GRID_POLICIES overrides the grid's list (default: exclusive
# mps-12 mps-6 auto-cold auto-warm; auto-warm needs auto-cold before it;
# issue 22's bracket: GRID_POLICIES="mps-12 auto-cold mps-12-after auto-warm"),
# GRID_ONLY=1 skips part 2; COLO_ARGS adds flags to every `colo run` (--gpus 0).
#
# BACKEND=sim runs all of it on colo's simulated GPU, with bench/sim_train.py
# in place of bench/train.py and the fake MPS control program the tests use:
# an end-to-end test of this script; nothing it prints is measured.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
COLO="$(realpath -m "${COLO:-build-release/colo}")"
OUT="$(realpath -m "${1:?usage: bench/sweep-grids.sh RESULTS_DIR}")"
read -r -a POLICIES <<<"${GRID_POLICIES:-exclusive mps-12 mps-6 auto-cold auto-warm}"
mkdir -p "$OUT"
export COLO_HOME="$OUT/home"
GRID="$REPO/bench/sweeps/grid-resnet26.toml"
BATCH="$REPO/bench/sweeps/batch-resnet50.toml"
BACKEND_ARGS=()
if [ "${BACKEND:-}" = sim ]; then
  mkdir -p "$OUT/sim/bin"
  cp "$REPO/tests/integration/fake-mps-control" "$OUT/sim/bin/nvidia-cuda-mps-control"
  export PATH="$OUT/sim/bin:$PATH"
  for f in "$GRID" "$BATCH"; do
    sed -e 's#bench/train.py#bench/sim_train.py#' -e "s#^workdir = \"../..\"#workdir = \"$REPO\"#" \
      "$f" >"$OUT/sim/$(basename "$f")"
  done
  GRID="$OUT/sim/grid-resnet26.toml"
  BATCH="$OUT/sim/batch-resnet50.toml"
  BACKEND_ARGS=(--backend sim)
  echo "BACKEND=sim: simulated GPU, bench/sim_train.py; nothing here is measured"
fi
[ -x "$COLO" ] || { echo "bench/sweep-grids.sh: no colo binary at $COLO (set COLO)" >&2; exit 2; }

# run_policy NAME DB FILE ARGS...: one `colo run`, then one summary line
# (TSV: name, colo makespan s, logs makespan s, wall s, ok, jobs, probes, run id).
run_policy() {
  local name="$1" db="$2" file="$3"
  shift 3
  echo "=== $name: colo run $(basename "$file") $* --db $(basename "$db")"
  local t0 t1
  t0=$(date +%s.%N)
  local sampler=""
  if [ -z "${BACKEND:-}" ] && [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ]; then
    python3 bench/sweep_check.py sample "$OUT/$name-nvidia-smi.csv" &
    sampler=$!
  fi
  # shellcheck disable=SC2086  # COLO_ARGS: more `colo run` flags (--gpus 0), split on spaces
  "$COLO" run "$file" "$@" "${BACKEND_ARGS[@]}" ${COLO_ARGS:-} --plain --db "$db" >"$OUT/$name.txt" 2>&1
  echo "exit $?" >>"$OUT/$name.txt"
  if [ -n "$sampler" ]; then
    kill "$sampler"
    wait "$sampler" 2>/dev/null
  fi
  t1=$(date +%s.%N)
  tail -4 "$OUT/$name.txt"
  "$COLO" show --db "$db" --json >"$OUT/$name.json" 2>>"$OUT/$name.txt"
  local probes
  probes=$(grep -c "(new: measured where it runs)" "$OUT/$name.txt")
  if [ -n "$sampler" ]; then
    python3 bench/sweep_check.py idle "$OUT/$name-nvidia-smi.csv" $(python3 -c 'import json,sys
print(" ".join(j["log_path"] for j in json.load(open(sys.argv[1]))["jobs"] if j.get("log_path")))' \
      "$OUT/$name.json") >"$OUT/idle-$name.txt"
    cat "$OUT/idle-$name.txt"
  fi
  python3 - "$OUT/$name.json" "$name" "$t0" "$t1" "$probes" "$REPO" >>"$OUT/grid-runs.tsv" <<'PY'
import json, subprocess, sys
show_path, name, t0, t1, probes, repo = sys.argv[1:]
s = json.load(open(show_path))
logs = [j["log_path"] for j in s["jobs"] if j.get("log_path")]
check = subprocess.run([sys.executable, repo + "/bench/sweep_check.py", "makespan"] + logs,
                       capture_output=True, text=True)
from_logs = json.loads(check.stdout or "{}").get("makespan_s")
ok = sum(1 for j in s["jobs"] if j["state"] == "ok")
print("%s\t%.1f\t%s\t%.1f\t%d\t%d\t%s\t%s" % (
    name, (s.get("makespan_ms") or 0) / 1000, "%.1f" % from_logs if from_logs else "-",
    float(t1) - float(t0), ok, len(s["jobs"]), probes, s["run"]["id"]))
PY
}

rm -f "$OUT/grid-runs.tsv"
for policy in "${POLICIES[@]}"; do
  case "$policy" in
    # The fixed policy: without it the job file's default (auto) would place
    # the grid, capped at K per GPU.
    exclusive) run_policy exclusive "$OUT/grid-fixed.db" "$GRID" --mechanism exclusive \
      --policy fixed ;;
    mps-*) degree="${policy#mps-}"
      run_policy "$policy" "$OUT/grid-fixed.db" "$GRID" --mechanism mps --policy fixed \
      --max-per-gpu "${degree%-after}" ;;
    auto-cold) rm -f "$OUT"/grid-auto.db*
      run_policy auto-cold "$OUT/grid-auto.db" "$GRID" --mechanism mps --policy auto ;;
    auto-warm) run_policy auto-warm "$OUT/grid-auto.db" "$GRID" --mechanism mps --policy auto ;;
    *) echo "bench/sweep-grids.sh: unknown policy '$policy'" >&2; exit 2 ;;
  esac
done
python3 - "$OUT/grid-runs.tsv" >"$OUT/grid-summary.txt" <<'PY'
import sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
print("%-13s %16s %16s %9s %8s %9s" % ("policy", "makespan (colo)", "makespan (logs)", "wall",
                                      "jobs ok", "measured"))
span = {}
for name, colo, logs, wall, ok, jobs, probes, run in rows:
    print("%-13s %15ss %15ss %8ss %4s/%-3s %9s   run %s" % (name, colo, logs, wall, ok, jobs,
                                                            probes, run))
    if ok == jobs and float(colo) > 0 and logs != "-":
        span[name] = float(logs)
print("(the ratios below are of makespans from the jobs' own logs)")
fixed = {k: v for k, v in span.items() if k.startswith("mps-")}
if fixed:
    best = min(fixed, key=fixed.get)
    same = ["%.1f s (%s)" % (v, k) for k, v in fixed.items()
            if k != best and k.replace("-after", "") == best.replace("-after", "")]
    print("best fixed MPS degree: %s (%.1f s)%s" % (
        best, fixed[best], "; the same degree also ran " + ", ".join(same) if same else ""))
    for auto, bound, issue in (("auto-cold", 1.15, 22), ("auto-warm", 1.1, 17)):
        if auto not in span:
            continue
        ratio = span[auto] / fixed[best]
        line = "%s: %.2fx the best fixed degree's makespan (issue %d: at most %.2fx: %s)" % (
            auto, ratio, issue, bound, "MET" if ratio <= bound else "NOT MET")
        if "exclusive" in span:
            gain = span["exclusive"] / span[auto]
            line += "; %.2fx faster than exclusive (at least 5x: %s)" % (
                gain, "MET" if gain >= 5 else "NOT MET")
        print(line)
PY
cat "$OUT/grid-summary.txt"
"$COLO" profiles "$GRID" --db "$OUT/grid-auto.db" >"$OUT/grid-profiles.txt" 2>&1

[ -n "${GRID_ONLY:-}" ] && exit 0  # GRID_ONLY=1: part 1 alone
rm -f "$OUT"/batch.db*
echo "=== batch: colo run $(basename "$BATCH") --mechanism mps --policy auto"
"$COLO" run "$BATCH" --mechanism mps --policy auto "${BACKEND_ARGS[@]}" --plain \
  --db "$OUT/batch.db" >"$OUT/batch.txt" 2>&1
echo "exit $?" >>"$OUT/batch.txt"
grep -E "auto: |probe" "$OUT/batch.txt" | cut -c1-200
run_id=$("$COLO" show --db "$OUT/batch.db" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["run"]["id"])')
python3 bench/sweep_check.py estimates "$OUT/batch.db" "$run_id" | tee "$OUT/batch-estimates.txt"
"$COLO" profiles "$BATCH" --db "$OUT/batch.db" >"$OUT/batch-profiles.txt" 2>&1
