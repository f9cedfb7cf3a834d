#!/usr/bin/env bash
# Builds colo (Release, no tests) and installs it under PREFIX (default
# /usr/local): bin/colo, its man page (help2man), bash completion, the Python
# client (share/colo/python) and the scripts colo bench runs
# (share/colo/bench), the systemd unit (lib/systemd/system/colo.service). With
# --python, also makes that Python client importable by python3 outside colo
# (scripts/install-python-client.sh says how): for every user under a prefix
# outside your home (/usr/local), for you alone under one inside it
# (~/.local). Once colo is installed, a client that could not be (offline,
# no root) is a warning saying what to run, not a failed install.
#   scripts/install.sh [PREFIX] [--python]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=/usr/local
python=0
for arg in "$@"; do
  case $arg in
    --python) python=1 ;;
    -*) echo "usage: scripts/install.sh [PREFIX] [--python]" >&2; exit 2 ;;
    *) prefix=$arg ;;
  esac
done
build=${BUILD_DIR:-$root/build-install}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOLO_BUILD_TESTS=OFF -DCMAKE_UNITY_BUILD=ON \
  "${launcher[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"
cmake --install "$build" --prefix "$prefix"
scope=(--system)
case "$(realpath -m "$prefix")/" in "$(realpath -m "$HOME")"/*) scope=() ;; esac
install_client=("$prefix/share/colo/install-python-client.sh" "${scope[@]}" "$prefix/share/colo/python")
if [ "$python" -eq 0 ]; then
  echo "Python client: jobs colo starts import it as they are; for other scripts:"
  echo "  ${install_client[*]}"
elif ! "${install_client[@]}"; then
  echo "install.sh: colo is installed in $prefix, but the Python client is not installed for python3" >&2
  echo "  (above: why). Jobs colo starts import it all the same; for other scripts, once that is mended:" >&2
  echo "  ${install_client[*]}" >&2
fi
