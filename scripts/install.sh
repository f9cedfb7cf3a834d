#!/usr/bin/env bash
# Builds colo (Release, no tests) and installs it under PREFIX (default
# /usr/local): bin/colo, its man page (help2man), bash completion, the Python
# client (share/colo/python) and the scripts colo bench runs
# (share/colo/bench). With --python, also makes that Python client importable
# by python3 outside colo (scripts/install-python-client.sh says how).
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
if [ "$python" -eq 1 ]; then
  "$root"/scripts/install-python-client.sh "$prefix/share/colo/python"
else
  echo "Python client: jobs colo starts import it as they are; for other scripts:"
  echo "  scripts/install-python-client.sh $prefix/share/colo/python"
fi
