#!/usr/bin/env bash
# Soak test (issue 15): JOBS jobs that flood their progress file and stdout,
# split over RUNS concurrent `colo run` on one store, on the simulated backend
# (real child processes, a real SQLite store; no GPU needed). Some jobs fail,
# some die by a signal, some leave a grandchild and a daemon in a new session
# behind. Checks, and exits 1 when one fails:
#   - every job is in its true final state (state, exit code or signal, epochs),
#     every run's state follows from its jobs', and every colo exited as it should;
#   - each colo's peak RSS is under RSS_LIMIT_MB;
#   - no process of the jobs is left once the colos have ended;
#   - the store passes SQLite's integrity check.
# Writes OUTPUT_DIR/soak.txt (the command, the machine, one line per colo, the checks).
#
#   bench/soak.sh OUTPUT_DIR
#     JOBS=200 RUNS=6 LINES=20000 (progress or stdout lines per flooding job, written
#     in ROUNDS=20 bursts half a second apart)
#     RSS_LIMIT_MB=200 COLO=path/to/colo (default build-release/colo)
#     KEEP_WORK=1: keep the store, job files and logs (in a temporary directory, named)
set -euo pipefail
cd "$(dirname "$0")/.."
COLO="${COLO:-build-release/colo}"
OUT_DIR="${1:?usage: bench/soak.sh OUTPUT_DIR}"
JOBS="${JOBS:-200}"
RUNS="${RUNS:-6}"
LINES="${LINES:-20000}"
ROUNDS="${ROUNDS:-20}"
export LINES ROUNDS
RSS_LIMIT_MB="${RSS_LIMIT_MB:-200}"
for tool in /usr/bin/time python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "bench/soak.sh: needs $tool" >&2
    exit 2
  fi
done
if [ ! -x "$COLO" ]; then
  echo "bench/soak.sh: no $COLO; build it: cmake -S . -B build-release -G Ninja" \
    "-DCMAKE_BUILD_TYPE=Release -DCOLO_BUILD_TESTS=OFF && cmake --build build-release" >&2
  exit 2
fi
COLO="$(realpath "$COLO")"
mkdir -p "$OUT_DIR"
OUT_DIR="$(realpath "$OUT_DIR")"
work="$(mktemp -d)"
# The leftovers' marker: a sleep duration no other process uses.
marker="600.$$"
cleanup() {
  pkill -KILL -f "sleep ${marker//./[.]}" 2>/dev/null || true
  if [ -z "${KEEP_WORK:-}" ]; then rm -rf "$work"; else echo "kept $work" >&2; fi
}
trap cleanup EXIT

# Job i's kind is i mod 5; each kind has one true ending.
#   progress: LINES step events, an epoch_end every LINES/4, exit 0    -> ok, 4 epochs
#   stdout:   LINES lines on stdout, 4 of them matched by epoch_regex  -> ok, 4 epochs
#   fails:    a progress flood, then exit 3                             -> failed, exit code 3
#   leaky:    a grandchild and a setsid daemon left behind, 2 epochs    -> ok, 2 epochs
#   killed:   a progress flood, then SIGKILL from itself                -> killed, signal 9
# The jobs' shell bodies, verbatim (written into TOML literal strings).
read -r -d '' progress_flood <<'SH' || true
awk -v n=@LINES@ -v r=@ROUNDS@ 'BEGIN { q = int(n / 4); b = int(n / r); for (i = 1; i <= n; i++) { print "{\"event\":\"step\",\"step\":" i ",\"samples\":32}"; if (i % q == 0) print "{\"event\":\"epoch_end\",\"epoch\":" i / q ",\"samples\":" q * 32 "}"; if (i % b == 0) { fflush(); system("sleep 0.5") } } }' >> "$COLO_PROGRESS_FILE"
SH
read -r -d '' stdout_flood <<'SH' || true
awk -v n=@LINES@ -v r=@ROUNDS@ 'BEGIN { q = int(n / 4); b = int(n / r); for (i = 1; i <= n; i++) { print "step " i " loss 0.25"; if (i % q == 0) print "Epoch " i / q " done"; if (i % b == 0) { fflush(); system("sleep 0.5") } } }'
SH
read -r -d '' leaky <<'SH' || true
sleep @MARKER@ & setsid sh -c 'sleep @MARKER@ &'; printf '{"event":"epoch_end","epoch":1,"samples":32}\n' >> "$COLO_PROGRESS_FILE"; sleep 0.2; printf '{"event":"epoch_end","epoch":2,"samples":32}\n' >> "$COLO_PROGRESS_FILE"
SH
for v in progress_flood stdout_flood; do
  printf -v "$v" '%s' "$(sed "s/@LINES@/$LINES/; s/@ROUNDS@/$ROUNDS/" <<<"${!v}")"
done
leaky="${leaky//@MARKER@/$marker}"

for r in $(seq 0 $((RUNS - 1))); do
  file="$work/run$r.toml"
  printf '[run]\nmechanism = "naive"\n' > "$file"
  for i in $(seq "$r" "$RUNS" $((JOBS - 1))); do
    case $((i % 5)) in
      0) body="$progress_flood" ;;
      1) body="$stdout_flood" ;;
      2) body="$progress_flood; exit 3" ;;
      3) body="$leaky" ;;
      4) body="$progress_flood; kill -KILL \$\$" ;;
    esac
    printf "\n[[job]]\nname = \"j%03d\"\ncommand = [\"sh\", \"-c\", '''%s''']\n" "$i" "$body" >> "$file"
    if [ $((i % 5)) = 1 ]; then echo "epoch_regex = 'Epoch (\\d+) done'" >> "$file"; fi
  done
done
cp "$work/run0.toml" "$OUT_DIR/soak-run0.toml"

db="$work/soak.db"
start=$(date +%s.%N)
pids=()
for r in $(seq 0 $((RUNS - 1))); do
  COLO_HOME="$work/home" /usr/bin/time -f '%M %e' -o "$work/run$r.time" \
    "$COLO" run "$work/run$r.toml" --backend sim --sim-devices 2 --max-per-gpu 8 --plain \
    --db "$db" --logs "$work/logs" >"$work/run$r.out" 2>&1 &
  pids+=($!)
done
codes=()
for p in "${pids[@]}"; do
  set +e
  wait "$p"
  codes+=($?)
  set -e
done
end=$(date +%s.%N)
for r in $(seq 0 $((RUNS - 1))); do cp "$work/run$r.out" "$OUT_DIR/soak-run$r.out"; done

set +e
python3 - "$db" "$work" "$marker" "$RSS_LIMIT_MB" "$JOBS" "$RUNS" "${codes[*]}" \
  "$(python3 -c "print(round($end - $start, 1))")" <<'EOF' | tee "$OUT_DIR/soak.txt"
import os, sqlite3, sys
db, work, marker, rss_limit_mb, jobs, runs, codes, wall_s = sys.argv[1:9]
rss_limit_mb, jobs, runs = int(rss_limit_mb), int(jobs), int(runs)
codes = [int(c) for c in codes.split()]
failures = []
def check(ok, what):
    if not ok:
        failures.append(what)

print("command: JOBS=%d RUNS=%d LINES=%s ROUNDS=%s RSS_LIMIT_MB=%d bench/soak.sh OUTPUT_DIR"
      % (jobs, runs, os.environ.get("LINES", "20000"), os.environ.get("ROUNDS", "20"), rss_limit_mb))
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
mem_gb = int(next(l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal"))) // 2**20
print("machine: %d cores (%s), %d GiB memory, load %s" % (os.cpu_count(), cpu, mem_gb,
      " ".join(open("/proc/loadavg").read().split()[:3])))
print("wall: %ss for %d jobs in %d concurrent colo run on one store" % (wall_s, jobs, runs))
print("%-5s %5s %12s %8s" % ("run", "exit", "peak RSS MB", "wall s"))
peak = 0
for r in range(runs):
    rss_kb, wall = open(os.path.join(work, "run%d.time" % r)).read().split()[-2:]
    mb = int(rss_kb) / 1024
    peak = max(peak, mb)
    print("%-5d %5d %12.1f %8s" % (r, codes[r], mb, wall))
    check(mb < rss_limit_mb, "colo %d: peak RSS %.1f MB over %d MB" % (r, mb, rss_limit_mb))
    # Every run has a failing job: colo says so with exit code 1.
    check(codes[r] == 1, "colo %d exited %d, not 1 (jobs failed)" % (r, codes[r]))

con = sqlite3.connect(db)
integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
check(integrity == "ok", "integrity_check: " + integrity)
expected = {0: ("ok", None, None, 4), 1: ("ok", None, None, 4), 2: ("failed", 3, None, None),
            3: ("ok", None, None, 2), 4: ("killed", None, 9, None)}
rows = con.execute("""
    SELECT j.name, j.state, j.exit_code, j.signal, r.state, j.started_ms, j.ended_ms,
           (SELECT count(*) FROM job_events e WHERE e.job_id = j.id AND e.kind = 'epoch_end')
    FROM jobs j JOIN runs r ON j.run_id = r.id""").fetchall()
check(len(rows) == jobs, "%d jobs in the store, not %d" % (len(rows), jobs))
wrong = 0
for name, state, exit_code, signal, run_state, started, ended, epochs in rows:
    want_state, want_code, want_signal, want_epochs = expected[int(name[1:]) % 5]
    bad = [what for what, ok in (
        ("state %s" % state, state == want_state),
        ("exit code %s" % exit_code, want_code is None or exit_code == want_code),
        ("signal %s" % signal, want_signal is None or signal == want_signal),
        ("%s epochs" % epochs, want_epochs is None or epochs == want_epochs),
        ("no start or end", started is not None and ended is not None and ended >= started),
        ("run %s" % run_state, run_state == "failed")) if not ok]
    if bad:
        wrong += 1
        if wrong <= 10:
            failures.append("%s (kind %d): %s" % (name, int(name[1:]) % 5, ", ".join(bad)))
check(wrong == 0, "%d jobs not in their true final state" % wrong)
states = dict(con.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall())
print("job states: " + ", ".join("%s %d" % kv for kv in sorted(states.items())))
print("progress rows stored: %d" % con.execute("SELECT count(*) FROM job_events").fetchone()[0])

# Leftovers: any process whose environment names this soak's work directory
# (every job's COLO_PROGRESS_FILE does), or the marked sleeps.
left = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        env = open("/proc/%s/environ" % pid, "rb").read()
        cmd = open("/proc/%s/cmdline" % pid, "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        continue
    if work.encode() + b"/logs" in env or ("sleep " + marker) in cmd:
        left.append("%s %s" % (pid, cmd.strip()))
check(not left, "%d processes left: %s" % (len(left), "; ".join(left[:5])))

print("checks: peak RSS %.1f MB (limit %d); integrity %s; %d/%d jobs in their true final state; "
      "%d processes left" % (peak, rss_limit_mb, integrity, len(rows) - wrong, jobs, len(left)))
for f in failures:
    print("FAILED: " + f)
print("soak: " + ("FAILED" if failures else "passed"))
sys.exit(1 if failures else 0)
EOF
status=${PIPESTATUS[0]}
exit "$status"
