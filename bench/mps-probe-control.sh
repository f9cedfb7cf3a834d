#!/usr/bin/env bash
# Issue 57: the control for colo serve's multi-user probe (sharing/mps_user_probe.h).
# The same two clients the probe runs (`colo mps-probe-client`: one first
# piece of CUDA work), under MPS's default daemon (no -M) with a private pipe
# directory: root's client keeps its context, then a client of uid 65534
# gets 20 s. Under the default daemon it should still be waiting when they run
# out (MPS runs different users' servers one after another), which is what
# the probe reads as "not together"; under colo serve's multi-user daemon it
# answered in 0.1 s. Stops the daemon it started.
#
#   bench/mps-probe-control.sh RESULTS_DIR    (as root, on a GPU; COLO=build/colo)
set -uo pipefail
out=${1:?usage: bench/mps-probe-control.sh RESULTS_DIR}
colo=${COLO:-build/colo}
mkdir -p "$out"
work=$(mktemp -d /tmp/colo-probe-control.XXXXXX)
chmod 755 "$work"
mkdir -p "$work/pipe" "$work/log"
chmod 777 "$work/pipe"  # the other user's client must reach the sockets
export CUDA_MPS_PIPE_DIRECTORY=$work/pipe CUDA_MPS_LOG_DIRECTORY=$work/log
nvidia-cuda-mps-control -d || { echo "cannot start the MPS daemon" >&2; exit 2; }
mkfifo "$work/hold"
"$colo" mps-probe-client --hold <"$work/hold" >"$out/root.txt" 2>&1 &
root_pid=$!
exec 3>"$work/hold"  # root's client keeps its context while this is open
for _ in $(seq 1 120); do grep -q ready "$out/root.txt" && break; sleep 0.5; done
start=$(date +%s.%N)
timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups "$colo" mps-probe-client \
  >"$out/nobody.txt" 2>&1
rc=$?
end=$(date +%s.%N)
exec 3>&-
wait "$root_pid"
echo quit | nvidia-cuda-mps-control
sleep 2
rm -rf "$work"
{
  echo "root's client: $(cat "$out/root.txt")"
  echo "uid 65534's client: exit $rc after $(python3 -c "print(round($end - $start, 1))") s: $(cat "$out/nobody.txt")"
  if [ "$rc" = 124 ]; then echo "not together: the default daemon kept it waiting (as the probe would read it)"
  else echo "together or failed: see above"; fi
} | tee "$out/summary.txt"
