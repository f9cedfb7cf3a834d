#!/usr/bin/env bash
# Configures and builds colo in ./build (Release by default; BUILD_TYPE=Debug to change).
#   scripts/build.sh                  everything, tests included (scripts/test.sh)
#   scripts/build.sh --no-tests colo  the colo binary only (scripts/quickstart.sh)
# Uses ccache when it is installed (it only speeds up rebuilds).
set -euo pipefail
cd "$(dirname "$0")/.."
tests=ON
if [ "${1:-}" = "--no-tests" ]; then
  tests=OFF
  shift
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" -DCOLO_BUILD_TESTS=$tests \
  "${launcher[@]}" ${CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$(nproc)" "${targets[@]}"
