#!/usr/bin/env bash
# Checks what a tool can check: clang-format (the style) and clang-tidy (the
# rules in .clang-tidy, warnings as errors) over colo's own C++ sources.
# Needs a configured build directory (for compile_commands.json): scripts/build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t sources < <(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h')
clang-format --dry-run --Werror "${sources[@]}"
echo "lint: clang-format clean (${#sources[@]} files)"
if grep -q '^CMAKE_UNITY_BUILD:BOOL=ON' build/CMakeCache.txt 2>/dev/null; then
  echo "lint: build/ is a unity build (scripts/quickstart.sh), whose compile database names no" \
    "single source: run scripts/build.sh first" >&2
  exit 2
fi
mapfile -t units < <(git ls-files 'src/*.cc' | grep -v -e '_test\.cc$' -e '/testing/')
printf '%s\n' "${units[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p build --quiet 2>/dev/null
echo "lint: clang-tidy clean (${#units[@]} files)"
