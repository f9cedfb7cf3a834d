#!/usr/bin/env bash
# Configures and builds colo in ./build (Release by default; BUILD_TYPE=Debug to change).
# Uses ccache when it is installed (it only speeds up rebuilds).
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "${launcher[@]}" ${CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$(nproc)"
