#!/usr/bin/env bash
# The control plane's scale benchmark (issues 4 and 37): `colo simulate`
# under the auto policy, on one core, at sizes a tenth apart, so that growth
# shows. Needs no GPU. Cases:
#   grid-1k, grid-10k on 8 GPUs, grid-100k on 64 GPUs (bench/scale/grid-*.toml:
#     every point of a sweep is a signature of its own);
#   grid-1k-unhinted, grid-10k-unhinted on 8 GPUs: the same grids without hint
#     lines (issue 59): one point is measured, the rest estimated from it;
#   queue-100k on 8 GPUs (four kinds of job, 100,000 of them: few signatures);
#   true-100, true-1k, true-10k: `colo run` of that many `true` jobs (repeats)
#     on 8 simulated GPUs, 8 at a time on each, a fresh store: what colo itself
#     costs per job (its own CPU time, without its children's: bench/cpu-of.py).
# Prints one table row per case: the command's wall time (bash's clock) and
# CPU time (user + system, the kernel's count to the microsecond through
# bench/cpu-of.py; for true-*, colo's own CPU time and that per job), the
# scheduler's time as colo reports it, and the ratio of each to the case a
# tenth its size. The simulate cases run SAMPLES times each (default 5): the
# table gives the median of each figure. Keeps the
# output of each case (and sample), the command and the machine in OUTPUT_DIR.
#
#   bench/scale.sh OUTPUT_DIR   (COLO=path/to/colo; default build-release/colo;
#                                CPU=1: the core it runs on; CASES="grid-1k ...";
#                                SAMPLES=5)
set -euo pipefail
cd "$(dirname "$0")/.."
COLO="${COLO:-build-release/colo}"
OUT_DIR="${1:?usage: bench/scale.sh OUTPUT_DIR}"
if [ ! -x "$COLO" ]; then
  echo "bench/scale.sh: no $COLO; build it: cmake -S . -B build-release -G Ninja" \
    "-DCMAKE_BUILD_TYPE=Release -DCOLO_BUILD_TESTS=OFF && cmake --build build-release" >&2
  exit 2
fi
mkdir -p "$OUT_DIR"
cpu=${CPU:-1}
samples=${SAMPLES:-5}
cases=${CASES:-grid-1k grid-10k grid-100k grid-1k-unhinted grid-10k-unhinted queue-100k true-100 true-1k true-10k}
gpus_of() { case $1 in grid-100k) echo 64 ;; *) echo 8 ;; esac; }
# The case a tenth the size of $1, if it is run too.
smaller_of() {
  case $1 in
    grid-10k) echo grid-1k ;; grid-100k) echo grid-10k ;;
    grid-10k-unhinted) echo grid-1k-unhinted ;;
    true-1k) echo true-100 ;; true-10k) echo true-1k ;;
  esac
}
# The number of jobs of a true-* case.
jobs_of() { case $1 in true-100) echo 100 ;; true-1k) echo 1000 ;; true-10k) echo 10000 ;; esac; }

{
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs);" \
    "each case pinned to core $cpu (taskset)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "colo: $("$COLO" --version 2>/dev/null || echo unknown)"
} | tee "$OUT_DIR/machine.txt"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1fx", a / (b > 0 ? b : 0.01)}'; }
# What starting a command costs by the same clock (bench/cpu-of.py's wall
# time of true on the same core, the least of five): the wall ratios take it
# off both sizes, as it is no part of colo's cost.
floor=9
for _ in 1 2 3 4 5; do
  took=$(bench/cpu-of.py taskset -c "$cpu" true 2>&1 | sed -n 's/^cpu-of: .* \([0-9.]*\) s wall.*/\1/p')
  floor=$(awk -v d="$took" -v f="$floor" 'BEGIN{printf "%.4f", d < f ? d : f}')
done
echo "start-up floor (bench/cpu-of.py's wall time of true): $floor s" | tee -a "$OUT_DIR/machine.txt"
less_floor() { awk -v a="$1" -v f="$floor" 'BEGIN{printf "%.4f", a - f}'; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
declare -A wall cpu sched per_job
rows=()
true_rows=()
for c in $cases; do
  gpus=$(gpus_of "$c")
  out="$OUT_DIR/$c.txt"
  small=$(smaller_of "$c")
  if [[ $c == true-* ]]; then
    n=$(jobs_of "$c")
    work="$OUT_DIR/$c.work"
    rm -rf "$work" && mkdir -p "$work"
    printf '[[job]]\nname = "t"\ncommand = ["true"]\nrepeat = %s\ngpu_memory = "100MiB"\n' "$n" \
      >"$work/jobs.toml"
    cmd=(taskset -c "$cpu" bench/cpu-of.py "$COLO" run "$work/jobs.toml" --backend sim
      --sim-devices "$gpus" --policy fixed --max-per-gpu 8 --mechanism naive --local --plain
      --db "$work/colo.db" --logs "$work/logs" --lock-dir "$work/locks")
    echo "command: ${cmd[*]}" >"$out"
    COLO_HOME="$work/home" "${cmd[@]}" >>"$out" 2>&1
    line=$(grep '^own-cpu:' "$out")
    own=$(sed -n 's/^own-cpu: \([0-9.]*\) s own.*/\1/p' <<<"$line")
    wall[$c]=$(sed -n 's/.* \([0-9.]*\) s wall$/\1/p' <<<"$line")
    per_job[$c]=$(awk -v a="$own" -v n="$n" 'BEGIN{printf "%.2f", a * 1000 / n}')
    ratio_job=-
    [ -n "$small" ] && [ -n "${per_job[$small]:-}" ] && ratio_job=$(ratio "${per_job[$c]}" "${per_job[$small]}")
    true_rows+=("$(printf '| %s | %s | %s s | %s s | %s ms | %s |' "$c" "$n" "${wall[$c]}" "$own" \
      "${per_job[$c]}" "$ratio_job")")
    rm -rf "$work/logs"
  else
    # --no-store: the cold case, whatever a store on this machine has learned.
    cmd=(taskset -c "$cpu" "$COLO" simulate "bench/scale/$c.toml" --gpu-count "$gpus" --policies auto
      --no-store)
    echo "command: ${cmd[*]}" >"$out"
    walls="" cpus="" scheds="" rsss=""
    for s in $(seq 1 "$samples"); do
      sample="$OUT_DIR/$c.sample$s.txt"
      echo "command: ${cmd[*]}" >"$sample"
      # CPU time to the microsecond (bench/cpu-of.py: the kernel's count, by
      # wait4), as the 1,000-point cases take about 0.015 s of it; the wall
      # time from its spawn to its end, by the same script.
      bench/cpu-of.py "${cmd[@]}" >>"$sample" 2>&1
      walls+=" $(sed -n 's/^cpu-of: .* \([0-9.]*\) s wall.*/\1/p' "$sample")"
      cpus+=" $(sed -n 's/^cpu-of: \([0-9.]*\) s CPU.*/\1/p' "$sample")"
      rsss+=" $(sed -n 's/^cpu-of: .* \([0-9]*\) KB max RSS/\1/p' "$sample")"
      scheds+=" $(sed -n 's/.*auto scheduler: [0-9]* events, \([0-9.]*\) ms in all.*/\1/p' "$sample" | head -1)"
    done
    wall[$c]=$(median <<<"$walls")
    cpu[$c]=$(median <<<"$cpus")
    rss=$(median <<<"$rsss")
    sched[$c]=$(median <<<"$scheds")
    {
      echo "samples: $samples; wall (bench/cpu-of.py):$walls s; CPU (user + system):$cpus s;" \
        "scheduler:$scheds ms; max RSS:$rsss KB"
      echo "median: ${wall[$c]} s wall, ${cpu[$c]} s CPU, ${sched[$c]} ms scheduler, $rss KB max RSS"
      cat "$OUT_DIR/$c.sample1.txt" | tail -n +2
    } >>"$out"
    ratio_wall=- ratio_cpu=- ratio_sched=-
    if [ -n "$small" ] && [ -n "${wall[$small]:-}" ]; then
      ratio_wall=$(ratio "$(less_floor "${wall[$c]}")" "$(less_floor "${wall[$small]}")")
      ratio_cpu=$(ratio "${cpu[$c]}" "${cpu[$small]}")
      ratio_sched=$(ratio "${sched[$c]}" "${sched[$small]}")
    fi
    rows+=("$(printf '| %s | %s | %s s | %s s | %s MB | %s ms | %s | %s | %s |' "$c" "$gpus" "${wall[$c]}" \
      "${cpu[$c]}" "$((rss / 1024))" "${sched[$c]}" "$ratio_wall" "$ratio_cpu" "$ratio_sched")")
  fi
  echo "$c done: ${wall[$c]} s" >&2
done
{
  if [ ${#rows[@]} -gt 0 ]; then
    echo "| case | GPUs | wall | CPU | max RSS | scheduler | wall vs a tenth the size (less the floor) | CPU vs a tenth | scheduler vs a tenth |"
    echo "|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
  fi
  if [ ${#true_rows[@]} -gt 0 ]; then
    [ ${#rows[@]} -gt 0 ] && echo
    echo "| case | jobs | wall | colo's own CPU | per job | per job vs a tenth the size |"
    echo "|---|---|---|---|---|---|"
    printf '%s\n' "${true_rows[@]}"
  fi
} | tee "$OUT_DIR/table.md"
