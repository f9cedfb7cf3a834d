#!/usr/bin/env bash
# Configures and builds colo in ./build (Release by default; BUILD_TYPE=Debug to change).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" ${CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$(nproc)"
