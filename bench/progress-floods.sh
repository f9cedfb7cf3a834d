#!/usr/bin/env bash
# Issue 15's hostile jobs, one `colo run --backend sim` each (real child
# processes, a real store; no GPU needed): colo's peak RSS, the job's recorded
# duration against its own, and the rows colo stored. Keeps the job files, the
# outputs (temporary paths shown as <tmp>, OUTPUT_DIR as <results>), the
# command and the machine in OUTPUT_DIR (summary.txt).
#
#   bench/progress-floods.sh OUTPUT_DIR     (COLO=path/to/colo; default build-release/colo)
#
# colo runs under a 8 GiB address-space limit and a 150 s time limit, so that
# an older colo that hangs or balloons fails its row instead of the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
COLO="${COLO:-build-release/colo}"
OUT_DIR="${1:?usage: bench/progress-floods.sh OUTPUT_DIR}"
if [ ! -x "$COLO" ]; then
  echo "bench/progress-floods.sh: no $COLO; build it: cmake -S . -B build-release -G Ninja" \
    "-DCMAKE_BUILD_TYPE=Release -DCOLO_BUILD_TESTS=OFF && cmake --build build-release" >&2
  exit 2
fi
if [ ! -x /usr/bin/time ]; then
  echo "bench/progress-floods.sh: needs /usr/bin/time (Debian package 'time')" >&2
  exit 2
fi
COLO="$(realpath "$COLO")"
mkdir -p "$OUT_DIR"
OUT_DIR="$(realpath "$OUT_DIR")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Each job prints "true_ms N": how long it ran by its own clock.
timed() { echo "command = [\"sh\", \"-c\", '''s=\$(date +%s%N); $1; e=\$(date +%s%N); echo \"true_ms \$(( (e - s) / 1000000 ))\"''']"; }
declare -A jobs
jobs[progress-5M-lines]="$(timed "awk 'BEGIN { for (i = 1; i <= 5000000; i++) { print \"{\\\"event\\\":\\\"step\\\",\\\"step\\\":\" i \",\\\"samples\\\":128}\"; if (i % 100000 == 0) print \"{\\\"event\\\":\\\"epoch_end\\\",\\\"epoch\\\":\" i / 100000 \"}\" } }' >> \"\$COLO_PROGRESS_FILE\"; sleep 1")"
jobs[progress-1GiB]="$(timed "yes '{\"event\":\"step\",\"samples\":128}' | head -c 1073741824 >> \"\$COLO_PROGRESS_FILE\"; sleep 1")"
jobs[stdout-5M-epoch-regex]="epoch_regex = 'Epoch (\\d+) done'
$(timed "awk 'BEGIN { for (i = 1; i <= 5000000; i++) print \"Epoch \" i \" done\" }'; sleep 1")"
jobs[progress-fifo]="$(timed "rm -f \"\$COLO_PROGRESS_FILE\"; mkfifo \"\$COLO_PROGRESS_FILE\"; sleep 2")"
jobs[progress-link-to-dev-zero]="$(timed "rm -f \"\$COLO_PROGRESS_FILE\"; ln -s /dev/zero \"\$COLO_PROGRESS_FILE\"; sleep 2")"
jobs[catastrophic-epoch-regex]="epoch_regex = '(?:a|a)*b'
$(timed "for i in \$(seq 1 20); do head -c 4096 /dev/zero | tr '\\0' a; echo; done; sleep 1")"

{
  echo "colo: ${COLO#"$PWD/"}"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
    "$(free -g | awk '/Mem:/ {print $2}') GiB memory, load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "each: COLO_HOME=<tmp> colo run <name>.toml --backend sim --mechanism naive --plain --db <tmp>/<name>.db"
  printf '%-28s %5s %12s %11s %9s %10s  %s\n' scenario exit "colo RSS MB" recorded_s true_s "rows" note
  for name in progress-5M-lines progress-1GiB stdout-5M-epoch-regex progress-fifo \
              progress-link-to-dev-zero catastrophic-epoch-regex; do
    printf '[[job]]\nname = "%s"\n%s\n' "$name" "${jobs[$name]}" > "$OUT_DIR/$name.toml"
    db="$work/$name.db"
    set +e
    ( ulimit -v 8388608
      COLO_HOME="$work/home" /usr/bin/time -f '%M' -o "$work/$name.rss" \
        timeout -s KILL 150 "$COLO" run "$OUT_DIR/$name.toml" --backend sim --mechanism naive \
        --plain --db "$db" > "$OUT_DIR/$name.out" 2>&1 )
    code=$?
    set -e
    # Paths of this machine out of what is kept.
    sed -i -e "s|$OUT_DIR/|<results>/|g" -e "s|$work/|<tmp>/|g" "$OUT_DIR/$name.out"
    rss_kb="$(tail -n 1 "$work/$name.rss" 2>/dev/null || echo 0)"
    python3 - "$db" "$name" "$code" "$rss_kb" <<'EOF'
import json, re, sqlite3, sys
db, name, code, rss_kb = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
recorded = true_s = rows = "-"
note = ""
try:
    con = sqlite3.connect(db)
    started, ended, log, jid = con.execute(
        "SELECT started_ms, ended_ms, log_path, id FROM jobs").fetchone()
    if started and ended:
        recorded = "%.2f" % ((ended - started) / 1000)
    rows = str(con.execute("SELECT count(*) FROM job_events WHERE job_id = ?", (jid,)).fetchone()[0])
    with open(log, errors="replace") as f:
        text = f.read()
    m = re.search(r"true_ms (\d+)", text)
    if m:
        true_s = "%.2f" % (int(m.group(1)) / 1000)
    m = re.search(r"colo: (.*)", text)
    if m:
        note = m.group(1)[:90]
except Exception as e:  # no store, no job row: the run did not get that far
    note = "no record: %s" % e
rss = "%.1f" % (int(rss_kb or 0) / 1024) if rss_kb.isdigit() else "-"
print("%-28s %5s %12s %11s %9s %10s  %s" % (name, code, rss, recorded, true_s, rows, note))
EOF
  done
} 2>&1 | sed -e "s|$work/|<tmp>/|g" | tee "$OUT_DIR/summary.txt"
