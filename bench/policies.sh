#!/usr/bin/env bash
# Issue 4's GPU benchmarks: one job file of bench/policies under several
# policies, one after another on one GPU. The fixed policies (exclusive,
# naive-all, mps-all, mps-K: --policy fixed, which places nothing by the
# store) run into one store, so that the ratios compare like with like; a
# protected job's floor (bench/policies/protected.toml) is judged against the
# solo rate that store holds, so after exclusive the fixed MPS policies are
# warm for the floor (a protected job's cold start is the `auto` case's). `auto` runs on a
# fresh store of its own (cold: it has never seen the jobs, the common case);
# `auto-warm` runs on the fixed policies' store, whose earlier runs taught it
# every job (put it after exclusive).
#
#   [COLO_ARGS='--gpus 0'] bench/policies.sh OUTPUT_DIR NAME [POLICY...]
#     NAME: sweep-resnet26 | cait4 | mixed | underestimate
#     POLICY: exclusive | naive-all | mps-all | mps-K | auto | auto-warm
#             (default: exclusive mps-all auto auto-warm)
#
# Leaves in OUTPUT_DIR: colo.db, <NAME>-auto-cold.db, <NAME>-<POLICY>.txt (colo's output),
# <NAME>-summary.txt (one line per policy: makespan, steady throughput, speed-up)
# and, when exclusive ran, <NAME>-compare.txt: each other run's steady
# speed-up beside bench/verify-speedup.py's from the jobs' logs (most runs that
# queue jobs have none: their jobs never all ran together).
set -uo pipefail
cd "$(dirname "$0")/.."
COLO="${COLO:-build/colo}"
OUT_DIR="$(realpath -m "${1:?usage: bench/policies.sh OUTPUT_DIR NAME [POLICY...]}")"
NAME="${2:?usage: bench/policies.sh OUTPUT_DIR NAME [POLICY...]}"
shift 2
POLICIES=("$@")
[ ${#POLICIES[@]} -gt 0 ] || POLICIES=(exclusive mps-all auto auto-warm)
FILE="bench/policies/$NAME.toml"
mkdir -p "$OUT_DIR"
export COLO_HOME="$OUT_DIR/home"
DB="$OUT_DIR/colo.db"
SUMMARY="$OUT_DIR/$NAME-summary.txt"
declare -A run_of
for policy in "${POLICIES[@]}"; do
  db="$DB"
  case "$policy" in
    exclusive) args=(--mechanism exclusive --policy fixed) ;;
    naive-all) args=(--mechanism naive --policy fixed --max-per-gpu 1000) ;;
    mps-all) args=(--mechanism mps --policy fixed --max-per-gpu 48) ;;
    mps-*) args=(--mechanism mps --policy fixed --max-per-gpu "${policy#mps-}") ;;
    auto) args=(--mechanism mps --policy auto)
      db="$OUT_DIR/$NAME-auto-cold.db"
      rm -f "$db"* ;;
    auto-warm) args=(--mechanism mps --policy auto) ;;
    *) echo "bench/policies.sh: unknown policy '$policy'" >&2; exit 2 ;;
  esac
  echo "=== $NAME $policy: colo run $FILE ${args[*]} ${COLO_ARGS:-} --db $(basename "$db")"
  # shellcheck disable=SC2086  # COLO_ARGS: more `colo run` flags, split on spaces
  "$COLO" run "$FILE" "${args[@]}" ${COLO_ARGS:-} --plain --db "$db" >"$OUT_DIR/$NAME-$policy.txt" 2>&1
  echo "exit $?" >>"$OUT_DIR/$NAME-$policy.txt"
  tail -8 "$OUT_DIR/$NAME-$policy.txt"
  {
    printf '%-10s ' "$policy"
    "$COLO" show --db "$db" --json | python3 -c '
import json, sys
s = json.load(sys.stdin)
steady = s.get("steady_throughput_per_s")
print("run %s makespan %.1f s, steady %s, jobs ok %d/%d" % (
    s["run"]["id"], (s.get("makespan_ms") or 0) / 1000,
    "%.0f samples/s" % steady if steady else "- (%s)" % s.get("steady_note", ""),
    sum(1 for j in s["jobs"] if j["state"] == "ok"), len(s["jobs"])))'
  } >>"$SUMMARY"
  [ "$db" = "$DB" ] &&
    run_of[$policy]=$("$COLO" show --db "$DB" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["run"]["id"])')
done
if [ -n "${run_of[exclusive]:-}" ]; then
  pairs=()
  for policy in "${POLICIES[@]}"; do
    [ "$policy" = exclusive ] || [ -z "${run_of[$policy]:-}" ] ||
      pairs+=(--pair "${run_of[exclusive]}" "${run_of[$policy]}")
  done
  [ ${#pairs[@]} -eq 0 ] || python3 bench/compare-speedups.py --colo "$COLO" --db "$DB" "${pairs[@]}" \
    >"$OUT_DIR/$NAME-compare.txt" 2>&1
  cat "$OUT_DIR/$NAME-compare.txt"
fi
"$COLO" profiles --db "$DB" >"$OUT_DIR/$NAME-profiles.txt" 2>&1
cat "$SUMMARY"
