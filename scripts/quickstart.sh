#!/usr/bin/env bash
# The README's first command: install build dependencies, build colo, and run
# the quickstart job file. With an NVIDIA driver and PyTorch it runs three
# small ResNet26 trainings on the real GPU (examples/quickstart-gpu.toml);
# without a GPU it runs three tiny pure-Python trainings on the SIMULATED GPU
# backend (examples/quickstart.toml), and colo labels every number simulated.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export COLO_HOME="${COLO_HOME:-$PWD/colo-runs}"
if ./build/colo devices >/dev/null 2>&1 && python3 -c 'import torch, timm; assert torch.cuda.is_available()' 2>/dev/null; then
  echo "quickstart: GPU found: running examples/quickstart-gpu.toml on it"
  exec ./build/colo run examples/quickstart-gpu.toml "$@"
fi
echo "quickstart: no usable GPU (or no PyTorch) here: running examples/quickstart.toml on the SIMULATED backend"
exec ./build/colo run examples/quickstart.toml --backend sim "$@"
