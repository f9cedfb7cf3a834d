#!/usr/bin/env bash
# Issue 22's overcommit benchmark, cold and without hints: eight recommender
# jobs (bench/dlrm.py) whose memory together is about twice the GPU's, run by
# `colo run` twice, each on a fresh store: one at a time (exclusive), then
# under the default policy (auto over MPS), which has never seen them and must
# measure them where they run. None may be lost; only the attempts of jobs
# colo had not measured yet may fail (out of memory under their MPS limits);
# the makespan should be at most 0.85x of exclusive.
#
#   [COLO=build-release/colo] [BACKEND=sim] [JOB_GIB=...] [COLO_ARGS=--gpus 0] \
#     bench/overcommit.sh RESULTS_DIR
#
# JOB_GIB: each job's embedding tables (it holds about that, plus the CUDA
# context: its sparse gradients touch only the rows it looked up); default a
# quarter of the GPU's memory, so that eight hold about twice the GPU. Prints and
# keeps in RESULTS_DIR: summary.txt (colo's makespans and attempts beside the
# same from the jobs' own logs: bench/check-makespans.py on the stores), the
# two stores and the jobs' logs (home/runs/). BACKEND=sim runs it on colo's
# simulated GPU with bench/sim_train.py (nothing measured).
set -uo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
COLO="$(realpath -m "${COLO:-build-release/colo}")"
OUT="$(realpath -m "${1:?usage: bench/overcommit.sh RESULTS_DIR}")"
mkdir -p "$OUT"
export COLO_HOME="$OUT/home"
[ -x "$COLO" ] || { echo "bench/overcommit.sh: no colo binary at $COLO (set COLO)" >&2; exit 2; }
BACKEND_ARGS=()
script=bench/dlrm.py
if [ "${BACKEND:-}" = sim ]; then
  mkdir -p "$OUT/sim/bin"
  cp "$REPO/tests/integration/fake-mps-control" "$OUT/sim/bin/nvidia-cuda-mps-control"
  export PATH="$OUT/sim/bin:$PATH"
  BACKEND_ARGS=(--backend sim --gpu-model H100)
  script=bench/sim_train.py
  echo "BACKEND=sim: simulated GPU, bench/sim_train.py; nothing here is measured"
fi
gpu_gib=$("$COLO" devices --json "${BACKEND_ARGS[@]}" 2>/dev/null | python3 -c \
  'import json,sys; d=json.load(sys.stdin); print(d["devices"][0]["memory_total_bytes"] / 2**30)')
job_gib="${JOB_GIB:-$(python3 -c "print(round($gpu_gib / 4, 1))")}"
extra=""
[ "$script" = bench/sim_train.py ] && extra='"--model", "dlrm", "--dataset", "criteo", '
cat >"$OUT/overcommit.toml" <<TOML
# Eight recommender jobs of ${job_gib} GiB of tables each (about that held):
# about twice the GPU's ${gpu_gib} GiB together. No memory hints.
[defaults]
workdir = "$REPO"
env = { PYTHONUNBUFFERED = "1" }

[[job]]
name = "dlrm"
command = ["python3", "$script", ${extra}"--memory-gib", "$job_gib", "--epochs", "3",
           "--epoch-samples", "262144"]
repeat = 8
TOML
echo "GPU: ${gpu_gib} GiB; jobs: 8 x dlrm with ${job_gib} GiB tables"
for pass in exclusive auto; do
  rm -f "$OUT/$pass.db"*
  args=(--mechanism exclusive)
  [ "$pass" = auto ] && args=(--mechanism mps --policy auto)
  echo "=== $pass: colo run overcommit.toml ${args[*]} (fresh store $pass.db)"
  # shellcheck disable=SC2086  # COLO_ARGS: more `colo run` flags (--gpus 0), split on spaces
  "$COLO" run "$OUT/overcommit.toml" "${args[@]}" "${BACKEND_ARGS[@]}" ${COLO_ARGS:-} --plain \
    --db "$OUT/$pass.db" >"$OUT/$pass.txt" 2>&1
  echo "exit $?" >>"$OUT/$pass.txt"
  tail -3 "$OUT/$pass.txt"
  "$COLO" show --json --db "$OUT/$pass.db" >"$OUT/$pass.json"
done
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, os, subprocess, sys
out = sys.argv[1]
rows = {}
for name in ("exclusive", "auto"):
    s = json.load(open(os.path.join(out, name + ".json")))
    jobs = s["jobs"]
    check = subprocess.run([sys.executable, "bench/check-makespans.py", "--json",
                            os.path.join(out, name + ".db")], capture_output=True, text=True)
    try:
        from_records = json.loads(check.stdout)["runs"][0]["makespan_s"]
    except (ValueError, KeyError, IndexError):
        from_records = None
    rows[name] = {"makespan": (s.get("makespan_ms") or 0) / 1000, "records": from_records,
                  "ok": sum(j["state"] == "ok" for j in jobs), "jobs": len(jobs),
                  "attempts": sum(j.get("attempts", 1) for j in jobs),
                  "failed_attempts": sum(j.get("attempts", 1) - 1 for j in jobs)}
print("%-10s %8s %16s %22s %9s" % ("pass", "jobs ok", "makespan (colo)",
                                   "makespan (job records)", "retries"))
for name, r in rows.items():
    print("%-10s %5d/%-2d %15.1fs %21s %9d" % (
        name, r["ok"], r["jobs"], r["makespan"],
        "%.1fs" % r["records"] if r["records"] else "-", r["failed_attempts"]))
e, a = rows["exclusive"], rows["auto"]
lost = a["jobs"] - a["ok"]
ratio = a["makespan"] / e["makespan"] if e["makespan"] else float("nan")
ratio_records = a["records"] / e["records"] if a["records"] and e["records"] else None
print("auto over exclusive: makespan %.2fx (colo), %s (job records); lost %d of %d; "
      "out-of-memory retries %d" % (ratio, "%.2fx" % ratio_records if ratio_records else "-",
                                    lost, a["jobs"], a["failed_attempts"]))
print("%s: 0 lost and makespan <= 0.85x of exclusive (by the job records)" % (
    "PASS" if lost == 0 and ratio_records and ratio_records <= 0.85 else "FAIL"))
PY
grep -E "out of GPU memory|requeued|measured" "$OUT/auto.txt" | cut -c1-220 | head -20
