#!/usr/bin/env bash
# Makes colo's Python client (colo_progress, colo_data) importable by the
# python3 on PATH (or $PYTHON), for scripts run outside colo. Jobs colo starts
# need none of this: colo puts the client on their PYTHONPATH.
#   scripts/install-python-client.sh [--system] [CLIENT_DIR]
# CLIENT_DIR holds colo_progress.py. Default: this checkout's python/, or,
# installed (PREFIX/share/colo/install-python-client.sh), PREFIX/share/colo/python.
#  - --system (scripts/install.sh passes it for a prefix outside your home):
#    for every user of the system's python3 (/usr/bin/python3, or $PYTHON), a
#    colo-client.pth naming CLIENT_DIR in its site-packages for local
#    installs (sysconfig's purelib: /usr/local/lib/python3.X/dist-packages on
#    Debian, which its python3 reads and apt leaves alone). Needs root there.
#    Remove that file to undo.
# Without --system, for you (or the environment you are in):
#  - In a virtual environment or conda: `pip install` of the package
#    (python/pyproject.toml), built from a copy, so that nothing is left in
#    CLIENT_DIR; offline where setuptools and wheel are installed.
#  - In a Python that refuses pip installs (Debian's own python3, PEP 668:
#    "externally-managed-environment"), or one without pip: a colo-client.pth
#    file in the user's site-packages that names CLIENT_DIR (Python's `site`
#    module reads it at start-up). Remove that file to undo.
#  - Otherwise: `pip install --user`.
set -euo pipefail
system=0
if [ "${1:-}" = --system ]; then system=1; shift; fi
here=$(dirname "$0")
default=$here/../python
[ -f "$here/python/colo_progress.py" ] && default=$here/python
client=$(cd "${1:-$default}" && pwd)
py=${PYTHON:-python3}
[ "$system" -eq 1 ] && [ -z "${PYTHON:-}" ] && [ -x /usr/bin/python3 ] && py=/usr/bin/python3
[ -f "$client/colo_progress.py" ] || { echo "install-python-client: no colo_progress.py in $client" >&2; exit 2; }

if [ "$system" -eq 1 ]; then
  exe=$("$py" -c 'import sys; print(sys.executable)') || { echo "install-python-client: cannot run $py" >&2; exit 1; }
  site=$("$py" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  if ! { mkdir -p "$site" && echo "$client" >"$site/colo-client.pth"; } 2>/dev/null; then
    echo "install-python-client: cannot write $site/colo-client.pth: run it as root for every user," >&2
    echo "  or without --system for yourself alone" >&2
    exit 1
  fi
  echo "install-python-client: $exe imports colo_progress and colo_data from $client, for every user,"
  echo "  through $site/colo-client.pth. To undo: rm $site/colo-client.pth"
  exit 0
fi

# in_env: a venv or conda environment (pip installs go into it, not --user).
# managed: the interpreter is marked externally managed (PEP 668).
read -r in_env managed < <("$py" - <<'EOF'
import os, sys, sysconfig
in_env = sys.prefix != sys.base_prefix or os.path.isdir(os.path.join(sys.prefix, "conda-meta"))
managed = os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
print(int(in_env), int(managed))
EOF
)
has_pip=0
"$py" -m pip --version >/dev/null 2>&1 && has_pip=1

if [ "$in_env" -eq 1 ] && [ "$has_pip" -eq 1 ] || { [ "$managed" -eq 0 ] && [ "$has_pip" -eq 1 ]; }; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp "$client"/pyproject.toml "$client"/colo_progress.py "$client"/colo_data.py "$tmp"
  args=(--no-deps)
  [ "$in_env" -eq 1 ] || args+=(--user)
  # Offline when the build backend is already there; else pip fetches it.
  "$py" -c 'import setuptools, wheel' 2>/dev/null && args+=(--no-build-isolation)
  if ! "$py" -m pip install "${args[@]}" "$tmp"; then
    echo "install-python-client: pip could not install $client as a package (above: why)." >&2
    echo "  Offline, it needs setuptools and wheel in that Python first; or set PYTHONPATH=$client" >&2
    exit 1
  fi
  echo "install-python-client: installed the package colo-client for $("$py" -c 'import sys; print(sys.executable)')"
  exit 0
fi

site=$("$py" -m site --user-site)
mkdir -p "$site"
echo "$client" >"$site/colo-client.pth"
why="it refuses pip installs (PEP 668)"
[ "$has_pip" -eq 1 ] || why="it has no pip"
echo "install-python-client: $("$py" -c 'import sys; print(sys.executable)') imports colo_progress and colo_data from $client"
echo "  through $site/colo-client.pth, not pip: $why. To undo: rm $site/colo-client.pth"
