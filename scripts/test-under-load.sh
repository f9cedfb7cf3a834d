#!/usr/bin/env bash
# Runs every ctest test RUNS times in a row (default 5) while stress-ng keeps
# twice this machine's cores busy, as a busy contributor's laptop or a shared
# CI runner would: a test that waits on the wall clock instead of on its
# condition fails here. Tests run as scripts/test.sh runs them: twice as many
# at once as cores. Needs a build with tests (scripts/build.sh) and
# stress-ng (scripts/install-deps.sh installs it).
#   [BUILD_DIR=build] scripts/test-under-load.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
command -v stress-ng >/dev/null || { echo "test-under-load: stress-ng is missing (scripts/install-deps.sh)" >&2; exit 2; }
build=${BUILD_DIR:-build}
[ -d "$build" ] || { echo "test-under-load: no $build/ (scripts/build.sh first)" >&2; exit 2; }
stress-ng --cpu "$(($(nproc) * 2))" --timeout 0 >/dev/null 2>&1 &
load=$!
trap 'kill "$load" 2>/dev/null || true' EXIT
for i in $(seq 1 "$runs"); do
  echo "test-under-load: run $i of $runs, under stress-ng --cpu $(($(nproc) * 2))"
  ctest --test-dir "$build" --output-on-failure -j "$((2 * $(nproc)))" --timeout 300
done
echo "test-under-load: $runs runs passed under load"
