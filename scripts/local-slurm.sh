#!/bin/bash
# A private Slurm cluster on this machine, for tests and benchmarks: munged,
# slurmctld and one slurmd per node (several slurmd on one host, each with its
# own NodeName and port), every file under one directory, nothing in /etc.
# Needs root (slurmd starts jobs as their user).
#
#   scripts/local-slurm.sh start DIR [--nodes N] [--gpus-per-node G] [--gpu-files sim|real]
#                                    [--owner-pid PID]
#   scripts/local-slurm.sh env DIR           # the exports that point Slurm's commands at it
#   scripts/local-slurm.sh kill-node DIR NODE
#   scripts/local-slurm.sh start-node DIR NODE   # its slurmd again (the node comes back)
#   scripts/local-slurm.sh stop DIR
#   scripts/local-slurm.sh unpack DEBS PREFIX   # Slurm from .deb files, see below
#
# start: GPUs are a gres "gpu" backed by stand-in device files (symlinks to
#   /dev/null; --gpu-files real: /dev/nvidia0..G-1, for a machine with GPUs).
#   Writes DIR/nodes (the nodes that came up, one per line); fails if none
#   did. With --owner-pid, a watcher stops the cluster once that process is
#   gone, so a test killed outright leaves nothing running.
# kill-node: the node dies as a machine would: its slurmd, and every
#   slurmstepd and job process of its jobs, are killed with SIGKILL.
# stop: cancels every job, stops the daemons (TERM, then KILL), then kills
#   what is left of this cluster's jobs; safe to call twice.
#
# Slurm's programs come from PATH, or, when SLURM_PREFIX is set, from a prefix
# made by `unpack`: every .deb of DEBS (scripts/fetch-slurm-debs.sh) extracted
# with dpkg -x (nothing installed, nothing written outside PREFIX), and
# PREFIX/bin holding one wrapper per program. The daemons' wrappers set
# LD_LIBRARY_PATH to the prefix's libraries; the commands' wrappers run the
# program through the system's dynamic loader with --library-path instead, so
# that sbatch does not pass LD_LIBRARY_PATH on to the jobs (a job's
# environment is sbatch's), whose own programs need the system's libraries.
# Only processes this cluster started are ever signalled: daemons by the pid
# files under DIR, the rest by their environment (see cluster_pids).
set -euo pipefail

usage() { sed -n '2,36p' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1
dir=$2
shift 2
slice=/sys/fs/cgroup/system.slice  # where slurmd puts its step daemons under cgroup v2

prefix_env() {
  if [ -n "${SLURM_PREFIX:-}" ]; then
    echo "export PATH='$SLURM_PREFIX/bin:$PATH'"
  fi
  echo "export SLURM_CONF='$dir/slurm.conf'"
}

# slurmd's -d: the step daemon of the prefix (slurmd would look in /usr/sbin).
stepd_option() {
  [ -z "${SLURM_PREFIX:-}" ] || echo "-d $SLURM_PREFIX/bin/slurmstepd"
}

do_unpack() {
  local debs=$1 prefix=$2 deb
  mkdir -p "$prefix/bin"
  prefix=$(cd "$prefix" && pwd)
  for deb in "$debs"/*.deb; do dpkg -x "$deb" "$prefix"; done
  local libs="$prefix/usr/lib/x86_64-linux-gnu:$prefix/usr/lib/x86_64-linux-gnu/slurm-wlm:$prefix/lib/x86_64-linux-gnu"
  local loader=/lib64/ld-linux-x86-64.so.2 name target
  for name in munged mungekey slurmctld slurmd slurmstepd; do
    target=$prefix/usr/sbin/$name
    # Debian installs slurmd-wlm etc. as slurmd through alternatives; the name
    # matters: a daemon reads its node's gres only when it runs as "slurmd".
    [ -x "$target-wlm" ] && ln -sf "$name-wlm" "$target"
    [ -x "$target" ] || { echo "local-slurm: no $name in $debs" >&2; return 1; }
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
      "$libs" "$target" >"$prefix/bin/$name"
    chmod +x "$prefix/bin/$name"
  done
  for name in sbatch squeue sinfo scancel sacct scontrol srun salloc; do
    target=$prefix/usr/bin/$name
    [ -x "$target" ] || continue
    printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' "$loader" "$libs" "$target" \
      >"$prefix/bin/$name"
    chmod +x "$prefix/bin/$name"
  done
  echo "local-slurm: $(SLURM_CONF=/dev/null "$prefix/bin/sinfo" --version 2>/dev/null) unpacked into $prefix"
}

# Pids of this cluster's slurmstepd processes (of node `$1`, or of every
# node): a step daemon rewrites its environment, but keeps its node's slurmd
# log open.
stepd_pids() {
  local p log want="$dir/log/slurmd-${1:-}"
  local -a argv
  for p in /proc/[0-9]*; do
    # Builtins only: a scan that forks per process takes seconds on a loaded
    # machine, while the jobs it is to kill run on.
    mapfile -d '' -t argv 2>/dev/null <"$p/cmdline" || continue
    [[ ${argv[0]:-} == slurmstepd* ]] || continue
    for log in "$p"/fd/*; do
      log=$(readlink "$log" 2>/dev/null) || continue
      if [[ $log == "$want"*.log ]]; then
        echo "${p#/proc/}"
        break
      fi
    done
  done
  return 0
}

# Pids of this cluster's processes: its daemons carry COLO_LOCAL_SLURM=DIR,
# its jobs SLURM_CONF=DIR/slurm.conf with a SLURM_JOB_ID (and, with `$1`,
# SLURMD_NODENAME=$1); a shell that merely points Slurm's commands here has
# no SLURM_JOB_ID. Then the step daemons.
cluster_pids() {
  local p e node=${1:-} colo conf job on
  local -a env
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = "$$" ] && continue
    mapfile -d '' -t env 2>/dev/null <"/proc/$p/environ" || continue
    colo=0 conf=0 job=0 on=0
    for e in "${env[@]}"; do
      case $e in
        "COLO_LOCAL_SLURM=$dir") colo=1 ;;
        "SLURM_CONF=$dir/slurm.conf") conf=1 ;;
        SLURM_JOB_ID=*) job=1 ;;
        "SLURMD_NODENAME=$node") on=1 ;;
      esac
    done
    if [ -z "$node" ] && ((colo)); then
      echo "$p"
    elif ((conf && job)) && { [ -z "$node" ] || ((on)); }; then
      echo "$p"
    fi
  done
  stepd_pids "$node"
}

stop_pidfile() {
  local f=$1 pid i
  [ -f "$f" ] || return 0
  pid=$(cat "$f" 2>/dev/null || true)
  rm -f "$f"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

do_stop() {
  [ -d "$dir" ] || return 0
  eval "$(prefix_env)"
  if [ -f "$dir/slurmctld.pid" ]; then
    local jobs
    jobs=$(timeout 10 squeue -h -o %A 2>/dev/null || true)
    [ -n "$jobs" ] && timeout 10 scancel $jobs 2>/dev/null || true
  fi
  local f
  for f in "$dir"/slurmd-*.pid "$dir/slurmctld.pid"; do stop_pidfile "$f"; done
  # Job steps outlive their slurmd: kill what is left of this cluster's jobs.
  local left
  left=$(cluster_pids)
  [ -n "$left" ] && kill -KILL $left 2>/dev/null || true
  stop_pidfile "$dir/munged.pid"
  if [ -f "$dir/watcher.pid" ] && [ "$(cat "$dir/watcher.pid")" != "${COLO_SLURM_WATCHER:-}" ]; then
    stop_pidfile "$dir/watcher.pid"
  fi
  rm -f "$dir/watcher.pid"
  # system.slice, if start made it: first the step daemons' scopes in it
  # (empty once their processes are gone; cgroups go with rmdir, deepest first).
  if [ -f "$dir/made-system-slice" ]; then
    find "$slice" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
    rmdir "$slice" 2>/dev/null || echo "local-slurm: $slice is not empty; left in place" >&2
    rm -f "$dir/made-system-slice"
  fi
  return 0
}

do_start() {
  local nodes=1 gpus=2 gpu_files=sim owner=""
  while [ $# -gt 0 ]; do
    case $1 in
      --nodes) nodes=$2; shift 2 ;;
      --gpus-per-node) gpus=$2; shift 2 ;;
      --gpu-files) gpu_files=$2; shift 2 ;;
      --owner-pid) owner=$2; shift 2 ;;
      *) usage ;;
    esac
  done
  if [ "$(id -u)" != 0 ]; then
    echo "local-slurm: needs root (slurmd runs jobs as their user)" >&2
    return 3
  fi
  eval "$(prefix_env)"
  local prog
  for prog in munged mungekey slurmctld slurmd sbatch squeue sinfo scancel; do
    command -v "$prog" >/dev/null || { echo "local-slurm: $prog not found" >&2; return 3; }
  done
  mkdir -p "$dir"/{state,spool,log,dev}
  chmod 755 "$dir"
  dir=$(cd "$dir" && pwd)
  eval "$(prefix_env)"

  # munge: its own key and socket.
  [ -f "$dir/munge.key" ] || mungekey --create --keyfile="$dir/munge.key"
  chmod 600 "$dir/munge.key"
  munged --force --key-file="$dir/munge.key" --socket="$dir/munge.sock" \
    --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munged.seed"

  # Ports from this process's id, so two clusters on one machine do not meet.
  local base=$((20000 + ($$ % 2000) * 16))
  local host plugindir=""
  host=$(hostname -s)
  if [ -n "${SLURM_PREFIX:-}" ]; then
    plugindir="PluginDir=$SLURM_PREFIX/usr/lib/x86_64-linux-gnu/slurm-wlm"
  fi
  {
    echo "ClusterName=colotest"
    echo "SlurmctldHost=$host(127.0.0.1)"
    echo "SlurmctldPort=$base"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    # cred_expire: a requeued job may start again this many seconds later (default 120).
    echo "AuthInfo=socket=$dir/munge.sock,cred_expire=10"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    [ -n "$plugindir" ] && echo "$plugindir"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "MpiDefault=none"
    echo "SchedulerType=sched/backfill"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "GresTypes=gpu"
    echo "ReturnToService=2"
    # A node that stops answering is declared down after this many seconds.
    echo "SlurmdTimeout=10"
    echo "JobRequeue=1"
    echo "KillWait=30"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    local i names=""
    for i in $(seq 1 "$nodes"); do
      echo "NodeName=n$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$((base + i)) CPUs=1 RealMemory=1000 Gres=gpu:$gpus State=UNKNOWN"
      names="$names${names:+,}n$i"
    done
    echo "PartitionName=debug Nodes=$names Default=YES MaxTime=INFINITE State=UP"
  } >"$dir/slurm.conf"
  # Under cgroup v2, slurmd asks systemd over D-Bus for a scope for its step
  # daemons and fails to start without one. A container (the GPU machine) has
  # no D-Bus, so slurmd makes the scope itself, under system.slice, which must
  # exist: made here when missing (and noted, so that stop removes it).
  : >"$dir/cgroup.conf"
  if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
    printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n' >"$dir/cgroup.conf"
    if [ ! -d "$slice" ] && mkdir "$slice" 2>/dev/null; then : >"$dir/made-system-slice"; fi
  fi
  : >"$dir/gres.conf"
  local g last=$((gpus - 1)) range
  range=$([ "$last" = 0 ] && echo 0 || echo "[0-$last]")  # Slurm counts "[0-0]" as two
  for i in $(seq 1 "$nodes"); do
    if [ "$gpu_files" = real ]; then
      echo "NodeName=n$i Name=gpu File=/dev/nvidia$range" >>"$dir/gres.conf"
    else
      for g in $(seq 0 "$last"); do ln -sf /dev/null "$dir/dev/n$i-gpu$g"; done
      echo "NodeName=n$i Name=gpu File=$dir/dev/n$i-gpu$range" >>"$dir/gres.conf"
    fi
  done

  if [ -n "$owner" ]; then
    (
      export COLO_SLURM_WATCHER=$BASHPID
      while kill -0 "$owner" 2>/dev/null; do sleep 1; done
      "$0" stop "$dir"
    ) </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/watcher.pid"
  fi

  COLO_LOCAL_SLURM=$dir slurmctld -i
  for i in $(seq 1 "$nodes"); do COLO_LOCAL_SLURM=$dir slurmd $(stepd_option) -N "n$i"; done
  local up="" t
  for t in $(seq 1 60); do
    up=$(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2 == "idle" {print $1}' | sort -u)
    [ "$(echo "$up" | grep -c . || true)" -ge "$nodes" ] && break
    sleep 0.5
  done
  echo "$up" | grep . >"$dir/nodes" || {
    echo "local-slurm: no node came up; see $dir/log/" >&2
    tail -n 5 "$dir"/log/*.log >&2 || true
    return 1
  }
  echo "local-slurm: $(wc -l <"$dir/nodes") of $nodes nodes up ($(tr '\n' ' ' <"$dir/nodes")), $gpus GPUs each; $(prefix_env | tail -n 1)"
}

do_kill_node() {
  local node=$1 pid steps jobs
  eval "$(prefix_env)"
  jobs=$(squeue -h -w "$node" -o %A 2>/dev/null | tr '\n' ' ' || true)
  pid=$(cat "$dir/slurmd-$node.pid" 2>/dev/null || true)
  rm -f "$dir/slurmd-$node.pid"
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
  # The step daemons first, so that none can tell slurmctld its job ended.
  steps=$(stepd_pids "$node")
  [ -n "$steps" ] && kill -KILL $steps 2>/dev/null || true
  local left
  left=$(cluster_pids "$node")
  [ -n "$left" ] && kill -KILL $left 2>/dev/null || true
  echo "local-slurm: node $node killed (its jobs: ${jobs:-none})"
}

case $cmd in
  unpack) [ $# -eq 1 ] || usage; do_unpack "$dir" "$1" ;;
  start) do_start "$@" ;;
  stop) do_stop ;;
  env) prefix_env ;;
  kill-node) [ $# -eq 1 ] || usage; do_kill_node "$1" ;;
  start-node)
    [ $# -eq 1 ] || usage
    eval "$(prefix_env)"
    COLO_LOCAL_SLURM=$dir slurmd $(stepd_option) -N "$1"
    ;;
  *) usage ;;
esac
