#!/usr/bin/env bash
# The README's second command: install what building and testing need, build everything
# (with tests), and run every test: C++ unit and integration tests (ctest)
# and the Python client's tests; then a bounded libFuzzer run over job files
# and progress lines (scripts/fuzz.sh, FUZZ_SECONDS per target).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Check: -O1 without debug information, in unity batches (CMakeLists.txt,
# scripts/build.sh): half the time of a RelWithDebInfo build from scratch.
BUILD_TYPE="${BUILD_TYPE:-Check}" scripts/build.sh --unity
python3 -m unittest discover -s python -p 'test_*.py'
# Twice as many tests as cores: the suite waits more than it computes (at one
# test per core it kept 0.6 of 2 cores busy), and every test waits on its
# condition, not on the wall clock (scripts/test-under-load.sh proves it).
ctest --test-dir build --output-on-failure -j "$((2 * $(nproc)))" --timeout 120
scripts/fuzz.sh
