#!/usr/bin/env bash
# `cmake --install` of the build under test into a temporary prefix: colo
# runs from there, finds its bench scripts, has a man page that documents
# the exit codes, the service's options, its files and every environment
# variable colo reads, a systemd unit that names this prefix's colo and
# passes systemd-analyze, bash completion that completes subcommands and
# options, the Python client importable from share/colo/python, and importable
# outside colo after share/colo/install-python-client.sh (Debian's python3; a
# venv) and after scripts/install.sh --python (for every user under a system
# prefix; a client that cannot be installed is a warning, not a failure).
set -euo pipefail
: "${BUILD_DIR:?}" "${COLO_SOURCE_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$(cd "$tmp" && pwd -P)/prefix  # as colo resolves it
fail() { echo "install_test: $*" >&2; exit 1; }

cmake --install "$BUILD_DIR" --prefix "$prefix" >/dev/null
colo=$prefix/bin/colo
[ -x "$colo" ] || fail "no $colo"
"$colo" --version | grep -qE '^colo [0-9]+\.[0-9]+\.[0-9]+$' || fail "colo --version"

man=$prefix/share/man/man1/colo.1
[ -s "$man" ] || fail "no man page $man"
grep -q 'Exit codes' "$man" || fail "the man page lacks the exit codes"
grep -q 'simulate' "$man" || fail "the man page lacks the subcommands"
# Its examples one per line, as `colo --help` prints them (not filled into one line).
examples=$(MANWIDTH=200 man -l "$man" 2>/dev/null | sed -n '/Examples:/,$p')
[ "$(printf '%s\n' "$examples" | grep -c '^ *colo ')" -ge 3 ] ||
  fail "the man page's examples run together: $examples"

# The man page beyond `colo --help` (issue 54, item 7): colo serve's options,
# the files colo keeps, and every environment variable colo reads (each name
# src/ passes to getenv or to an environment lookup).
man_text=$(MANWIDTH=200 man -l "$man" 2>/dev/null)
for section in 'SERVICE OPTIONS' ENVIRONMENT FILES; do
  grep -qx "$section" <<<"$man_text" || fail "the man page has no $section section"
done
[[ $(sed -n '/^SERVICE OPTIONS$/,/^ENVIRONMENT$/p' <<<"$man_text") == *--grace* ]] ||
  fail "the man page's SERVICE OPTIONS lack colo serve's --grace"
[[ $(sed -n '/^FILES$/,/^SEE ALSO$/p' <<<"$man_text") == */run/colo/locks* ]] ||
  fail "the man page's FILES lack the GPU lock directory"
environment=$(sed -n '/^\.SH ENVIRONMENT/,/^\.SH /p' "$man" | sed 's/\\f[BIRP]//g')
read_vars=$(grep -rhoE --include='*.cc' --include='*.h' --exclude='*_test.cc' \
  '(getenv|env|find_share_dir)\([^;]*"[A-Z][A-Z0-9_]+"\)' "$COLO_SOURCE_DIR/src" |
  grep -oE '"[A-Z][A-Z0-9_]+"' | tr -d '"' | sort -u)
[ -n "$read_vars" ] || fail "found no environment variable read in $COLO_SOURCE_DIR/src"
for var in $read_vars; do
  grep -qw -- "$var" <<<"$environment" ||
    fail "colo reads \$$var, which the man page's ENVIRONMENT does not name"
done

# The systemd unit (issue 54, item 6): this prefix's colo and documents,
# options from /etc/default/colo, no restart after an exit that a restart
# cannot mend, and none of the sandbox options that the jobs, which run inside
# the unit, would notice.
unit=$prefix/lib/systemd/system/colo.service
[ -s "$unit" ] || fail "no systemd unit $unit"
grep -qx "ExecStart=$colo serve --socket-group colo \$COLO_SERVE_ARGS" "$unit" ||
  fail "the unit does not run $colo with \$COLO_SERVE_ARGS: $(grep '^ExecStart=' "$unit")"
grep -qx 'EnvironmentFile=-/etc/default/colo' "$unit" || fail "the unit reads no /etc/default/colo"
grep -qx 'Delegate=yes' "$unit" || fail "the unit does not delegate its cgroup to colo"
grep -qx "ExecReload=$colo drain" "$unit" || fail "systemctl reload does not drain: $(grep '^ExecReload=' "$unit")"
documentation=" $(sed -n 's/^Documentation=//p' "$unit") "
[[ $documentation == *" man:colo(1) "* ]] || fail "the unit's Documentation= lacks man:colo(1)"
[[ $documentation == *" file://$prefix/share/doc/colo/docs/serve.md "* ]] ||
  fail "the unit's Documentation= is not this prefix's serve.md:$documentation"
for doc in $documentation; do
  [[ $doc != file://* ]] || [ -s "${doc#file://}" ] || fail "the unit's Documentation= names a missing $doc"
done
no_restart=" $(sed -n 's/^RestartPreventExitStatus=//p' "$unit") "
bad_options=0
COLO_HOME=$tmp/state timeout 30 "$colo" serve --grace soon >/dev/null 2>&1 || bad_options=$?
no_driver=0
COLO_HOME=$tmp/state COLO_NVML_LIBRARY=$tmp/none/libnvidia-ml.so.1 timeout 30 "$colo" serve \
  --backend nvml >/dev/null 2>&1 || no_driver=$?
for code in "$bad_options" "$no_driver"; do
  case $code in 0 | 124) fail "colo serve with bad options or no driver exited $code" ;; esac
  [[ $no_restart == *" $code "* ]] ||
    fail "the unit restarts colo serve after exit $code (bad options: $bad_options, no driver: $no_driver)"
done
job_visible=$(grep -E '^((ProtectHome|PrivateTmp|PrivateDevices|PrivateNetwork|PrivateUsers|DevicePolicy|DeviceAllow|MemoryDenyWriteExecute|RestrictAddressFamilies|RestrictNamespaces|ProtectKernelTunables|ProtectControlGroups|ProtectProc|ProcSubset|SystemCallFilter|UMask)=|ProtectSystem=strict)' \
  "$unit" || true)
[ -z "$job_visible" ] || fail "the unit sets sandbox options its jobs would notice: $job_visible"
if command -v systemd-analyze >/dev/null; then
  (cd "$tmp" && systemd-analyze verify --man=no "$unit") || fail "systemd-analyze verify $unit (above)"
  exposure() {  # the overall exposure systemd-analyze security gives a unit file, 0 (best) to 10
    systemd-analyze security --offline=yes "$1" 2>/dev/null |
      sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p'
  }
  ours=$(exposure "$unit")
  [ -n "$ours" ] || fail "systemd-analyze security --offline=yes $unit gave no exposure level"
  slurmd=""
  for f in /lib/systemd/system/slurmd.service /usr/lib/systemd/system/slurmd.service; do
    [ -s "$f" ] && slurmd=$(exposure "$f") && break
  done
  if [ -n "$slurmd" ]; then
    awk -v a="$ours" -v b="$slurmd" 'BEGIN { exit !(a < b) }' ||
      fail "the unit's exposure $ours is no better than slurmd.service's $slurmd"
  else
    echo "install_test: no slurmd.service (apt-get install slurmd): the unit's exposure ($ours) compared with none"
  fi
else
  echo "install_test: no systemd-analyze: the unit is not verified"
fi

# The documents and examples its messages name.
doc=$prefix/share/doc/colo
for f in docs/job-file.md docs/cli.md examples/quickstart.toml README.md; do
  [ -s "$doc/$f" ] || fail "$doc/$f is not installed (colo's messages name it)"
done
[ ! -e "$doc/docs/results" ] || fail "the measured results were installed with the docs"
completion=$prefix/share/bash-completion/completions/colo
[ -s "$completion" ] || fail "no bash completion"
complete_words() {  # the completions of the words given, the last one being completed
  PATH=$prefix/bin:$PATH bash -c 'source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _colo;
    echo "${COMPREPLY[*]}"' "$completion" "$@"
}
[ "$(complete_words colo mi)" = "mig" ] || fail "colo mi<TAB>: '$(complete_words colo mi)'"
[ "$(complete_words colo mig st)" = "status" ] || fail "colo mig st<TAB>"
[ "$(complete_words colo runs --js)" = "--json" ] || fail "colo runs --js<TAB>"
# Values (issue 33, item 19): an option's listed values, job files, run ids.
[ "$(complete_words colo run --backend s)" = "sim" ] || fail "colo run --backend s<TAB>"
[[ " $(complete_words colo run --mechanism '') " == *" mps "* ]] || fail "colo run --mechanism <TAB>"
touch "$tmp/sweep.toml" "$tmp/notes.txt"
[ "$(cd "$tmp" && complete_words colo run sw)" = "sweep.toml" ] || fail "colo run sw<TAB>"
[ -z "$(cd "$tmp" && complete_words colo run no)" ] || fail "colo run no<TAB> offers a non-.toml file"
[[ " $(complete_words colo show '') " == *" last "* ]] || fail "colo show <TAB>"
gpu_flags=" $(complete_words colo simulate --gpu-) "
[[ $gpu_flags == *" --gpu-model "* && $gpu_flags == *" --gpu-count "* ]] ||
  fail "colo simulate --gpu-<TAB>: '$gpu_flags'"

# Run from elsewhere, the installed colo finds its installed bench scripts.
(cd "$tmp" && "$colo" bench --suite paper-uniform --cases 'small/*' --dry-run --backend sim 2>&1) |
  grep -q "jobs run $prefix/share/colo/bench/sim_train.py" || fail "colo bench's scripts"

PYTHONPATH=$prefix/share/colo/python python3 -c 'import colo_progress' || fail "share/colo/python"
# The Python client for scripts run outside colo, as installed colo documents
# it: with Debian's own python3, which refuses pip installs (PEP 668), and in a
# virtual environment; either leaves nothing beside the client.
client=$prefix/share/colo/python
install_client=$prefix/share/colo/install-python-client.sh
[ -x "$install_client" ] || fail "no $install_client"
imports_client() {  # PYTHON [HOME]: imports both modules from outside the client's folder
  (cd "$tmp" && HOME=${2:-$HOME} "$1" -c 'import colo_progress, colo_data') 2>/dev/null
}
tried=0
if /usr/bin/python3 -c 'import sys, sysconfig, os; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))' 2>/dev/null; then
  tried=1
  HOME=$tmp/home PYTHON=/usr/bin/python3 "$install_client" >/dev/null ||
    fail "install-python-client.sh with Debian's python3"
  imports_client /usr/bin/python3 "$tmp/home" || fail "Debian's python3 does not import the client"
fi
if /usr/bin/python3 -m venv --system-site-packages "$tmp/venv" 2>/dev/null &&
   "$tmp/venv/bin/python" -c 'import setuptools, wheel' 2>/dev/null; then
  tried=1
  PYTHON=$tmp/venv/bin/python "$install_client" >/dev/null 2>&1 ||
    fail "install-python-client.sh in a virtual environment"
  imports_client "$tmp/venv/bin/python" || fail "the virtual environment does not import the client"
  "$tmp/venv/bin/python" -m pip show colo-client >/dev/null || fail "no colo-client package in the venv"
fi
[ "$tried" -eq 1 ] || echo "install_test: no Debian python3 and no venv with setuptools: client install skipped"

# scripts/install.sh --python (issue 54, item 6), after its build: a stand-in
# cmake on PATH skips the configure and the build, and installs the build
# under test. The python3 is a virtual environment's, never the machine's.
stub=$tmp/stub
mkdir -p "$stub"
cat >"$stub/cmake" <<STUB
#!/bin/sh
[ "\$1" = --install ] && [ "\$3" = --prefix ] || exit 0
exec $(command -v cmake) --install "$BUILD_DIR" --prefix "\$4"
STUB
chmod +x "$stub/cmake"
install_sh() {  # PREFIX: scripts/install.sh PREFIX --python, by a user whose home is $tmp/home
  PATH=$stub:$PATH HOME=$tmp/home BUILD_DIR=$tmp/no-build "$COLO_SOURCE_DIR/scripts/install.sh" "$1" \
    --python >"$tmp/install.out" 2>&1
}
if python3 -m venv --without-pip "$tmp/sysvenv" 2>/dev/null; then
  venv_python=$tmp/sysvenv/bin/python
  venv_site=$("$venv_python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  # A prefix outside the home: for every user of that python3.
  PYTHON=$venv_python install_sh "$tmp/system" ||
    fail "install.sh $tmp/system --python: $(cat "$tmp/install.out")"
  [ "$(cat "$venv_site/colo-client.pth" 2>/dev/null)" = "$tmp/system/share/colo/python" ] ||
    fail "install.sh under a system prefix did not install the client for every user: $(cat "$tmp/install.out")"
  (cd "$tmp" && HOME=$tmp/another-user "$venv_python" -c 'import colo_progress') ||
    fail "another user's python3 does not import the client install.sh installed under $tmp/system"
else
  echo "install_test: python3 -m venv failed: install.sh --python for every user not tried"
fi
# A client that cannot be installed (no python3 here): colo is, and the
# warning says what to run, for every user under a system prefix and for the
# user alone under their home.
for case in "$tmp/offline --system" "$tmp/home/.local"; do
  read -r at scope <<<"$case"
  PYTHON=$tmp/no-python install_sh "$at" ||
    fail "install.sh $at failed after installing colo, for the Python client alone: $(cat "$tmp/install.out")"
  [ -x "$at/bin/colo" ] || fail "install.sh did not install colo under $at"
  grep -qxF "  $at/share/colo/install-python-client.sh ${scope:+$scope }$at/share/colo/python" \
    "$tmp/install.out" || fail "install.sh's warning does not say what to run: $(cat "$tmp/install.out")"
done
leftovers=$(find "$client" -mindepth 1 -not -name '*.py' -not -name pyproject.toml -not -path '*__pycache__*')
[ -z "$leftovers" ] || fail "installing the client left files beside it: $leftovers"
echo "install_test: ok"
