#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang into ./build-fuzz and
# runs each for FUZZ_SECONDS (default 15) from its corpus in tests/fuzz/corpus/.
# Built as Check (-O1, what ASan asks for) with line tables only, so that a
# crash's stack names file and line: 1.5 min from scratch on 2 cores, against
# 2.3 min as RelWithDebInfo.
# New inputs libFuzzer finds go to build-fuzz/new-corpus/, crashes to
# build-fuzz/crash-* (add a crash to the corpus once it is fixed: the corpus
# is replayed by ctest in every build). Needs clang and libclang-rt-14-dev
# (scripts/install-deps.sh); without clang it says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-15}"
if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ not found; skipping the libFuzzer run (the corpus replay is a ctest)"
  exit 0
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Check -DCMAKE_CXX_FLAGS=-gline-tables-only -DCOLO_FUZZ=ON \
  -DCOLO_BUILD_TESTS=OFF -DCMAKE_UNITY_BUILD=ON "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target job_file_fuzz progress_fuzz
for target in job_file progress; do
  mkdir -p "build-fuzz/new-corpus/$target"
  echo "fuzz: $target for ${seconds}s"
  "build-fuzz/tests/fuzz/${target}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="build-fuzz/${target}-" \
    "build-fuzz/new-corpus/$target" "tests/fuzz/corpus/$target"
done
