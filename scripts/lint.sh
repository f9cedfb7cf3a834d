#!/usr/bin/env bash
# Checks what a tool can check: clang-format (the style), no include cycle
# between the units of a folder (scripts/include-cycles.py) and clang-tidy (the
# rules in .clang-tidy, warnings as errors) over colo's own C++ sources.
# clang-tidy reads the compile commands of build-lint/, configured here (not
# built) without unity batches: scripts/build.sh --unity's database names no
# single source.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t sources < <(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h')
clang-format --dry-run --Werror "${sources[@]}"
echo "lint: clang-format clean (${#sources[@]} files)"
scripts/include-cycles.py
cmake -S . -B build-lint -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCOLO_BUILD_TESTS=ON \
  -DCMAKE_UNITY_BUILD=OFF >/dev/null
mapfile -t units < <(git ls-files 'src/*.cc' | grep -v -e '_test\.cc$' -e '/testing/')
printf '%s\n' "${units[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p build-lint --quiet 2>/dev/null
echo "lint: clang-tidy clean (${#units[@]} files)"
