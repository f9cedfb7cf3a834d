#!/usr/bin/env bash
# Builds colo (Release, no tests) and installs it under PREFIX (default
# /usr/local): bin/colo, its man page (help2man), bash completion, the Python
# client (share/colo/python) and the scripts colo bench runs
# (share/colo/bench). With --python, also installs the Python client as a
# package (python/pyproject.toml) for the user with pip.
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
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOLO_BUILD_TESTS=OFF \
  "${launcher[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"
cmake --install "$build" --prefix "$prefix"
if [ "$python" -eq 1 ]; then
  # A copy, so that the build leaves nothing in the checkout.
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp "$root"/python/pyproject.toml "$root"/python/colo_progress.py "$root"/python/colo_data.py "$tmp"
  python3 -m pip install --user --no-build-isolation --no-deps "$tmp"
else
  echo "Python client: $prefix/share/colo/python (PYTHONPATH), or scripts/install.sh --python"
fi
