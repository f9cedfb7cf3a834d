#!/usr/bin/env bash
# Configures and builds colo in ./build (Release by default; BUILD_TYPE=Debug to change).
#   scripts/build.sh                          everything, tests included, one source at a time
#   BUILD_TYPE=Check scripts/build.sh --unity everything, fast from scratch (scripts/test.sh)
#   scripts/build.sh --no-tests --unity colo  the colo binary only, fast from scratch
#                                             (scripts/quickstart.sh)
# --unity: CMake's unity build, which compiles each library's sources in
# batches, so the heavy headers (fmt, JSON, TOML, CLI11) are parsed a few times
# instead of once per source: about 2.7x faster from scratch on 2 cores, but a
# later edit recompiles its whole batch (tests are batched too: their file-local
# helpers must not share names). Without it, each source compiles alone.
# Uses ccache when it is installed (it only speeds up rebuilds).
set -euo pipefail
cd "$(dirname "$0")/.."
tests=ON
unity=OFF
while [ $# -gt 0 ]; do
  case $1 in
    --no-tests) tests=OFF ;;
    --unity) unity=ON ;;
    -*) echo "usage: scripts/build.sh [--no-tests] [--unity] [TARGET...]" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
targets=()
for t in "$@"; do targets+=(--target "$t"); done
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" -DCOLO_BUILD_TESTS=$tests \
  -DCMAKE_UNITY_BUILD=$unity "${launcher[@]}" ${CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$(nproc)" "${targets[@]}"
