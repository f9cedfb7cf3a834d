#!/usr/bin/env bash
# The README's second command: install what building and testing need, build everything
# (with tests), and run every test: C++ unit and integration tests (ctest)
# and the Python client's tests; then a bounded libFuzzer run over job files
# and progress lines (scripts/fuzz.sh, FUZZ_SECONDS per target).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" scripts/build.sh
python3 -m unittest discover -s python -p 'test_*.py'
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 120
scripts/fuzz.sh
