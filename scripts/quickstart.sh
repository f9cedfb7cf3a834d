#!/usr/bin/env bash
# The README's first command: install what building colo needs, build the colo
# binary (no tests), and run the quickstart job file. With an NVIDIA driver and
# PyTorch it runs three small ResNet26 trainings on the real GPU
# (examples/quickstart-gpu.toml);
# without a GPU it runs three tiny pure-Python trainings on the SIMULATED GPU
# backend (examples/quickstart.toml), and colo labels every number simulated.
# The first time, it then runs the same jobs one at a time and prints the
# shared run's summary against that: the speed-up sharing gave.
# COLO_BIN=PATH: use that colo binary (no install, no build).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${COLO_BIN:-}" ]; then  # a colo built elsewhere (scripts/install.sh, a release)
  colo=$COLO_BIN
else
  scripts/install-deps.sh --build  # what building needs; scripts/test.sh adds what testing needs
  scripts/build.sh --no-tests --unity colo  # the binary only, in unity batches: a few minutes
  colo=./build/colo
fi
export COLO_HOME="${COLO_HOME:-$PWD/colo-runs}"

# `colo run FILE ARGS...`, then, when the store holds no one-at-a-time run of
# the same jobs yet, that run too, and the first run's summary against it:
# what sharing gained, measured. (Jobs colo has never seen run beside each
# other from the start, so no rate of one alone exists until then.)
run_and_compare() {
  local file=$1
  shift
  "$colo" run "$file" "$@"
  local id
  id=$("$colo" runs --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["runs"][0]["id"])')
  if "$colo" show "$id" --json | python3 -c 'import json, sys; sys.exit(json.load(sys.stdin)["speedup_vs_exclusive"] is None)'; then
    return 0  # compared already (an earlier quickstart ran them one at a time)
  fi
  echo
  echo "quickstart: now the same jobs one at a time (--mechanism exclusive), to measure what sharing gained"
  "$colo" run "$file" --mechanism exclusive "$@"
  echo
  echo "quickstart: run $id (shared) against that one-at-a-time run:"
  "$colo" show "$id"
}

if "$colo" devices >/dev/null 2>&1 && python3 -c 'import torch, timm; assert torch.cuda.is_available()' 2>/dev/null; then
  echo "quickstart: GPU found: running examples/quickstart-gpu.toml on it"
  run_and_compare examples/quickstart-gpu.toml "$@"
  exit 0
fi
echo "quickstart: no usable GPU (or no PyTorch) here: running examples/quickstart.toml on the SIMULATED backend"
run_and_compare examples/quickstart.toml --backend sim "$@"
