#!/usr/bin/env bash
# Installs the Debian packages colo builds with (only what is missing).
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev
          libre2-dev  # RE2: epoch_regex and step_regex, linked from its static archive
          libsqlite3-dev libgtest-dev libgmock-dev python3
          libncurses-dev  # colo top (linked statically)
          tmux       # colo top's test drives it in a real terminal
          clang libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer
          libturbojpeg0-dev  # JPEG decoding of the shared data loader (linked statically)
          python3-torch      # the data-sharing tests' consumers (python/colo_data.py)
          chromium           # PNG figures of `colo report` and its browser test
          slurm-wlm munge    # a real Slurm for the `colo slurm` test (scripts/local-slurm.sh)
          prometheus         # a real Prometheus scrapes `colo serve --http`'s /metrics in a test
          procps time        # pgrep/pkill and /usr/bin/time: leftover-process tests, bench/soak.sh
          help2man           # colo's man page (cmake --install)
          man-db             # the install test renders that man page
          python3-yaml       # the MLflow export test reads the export back as MLflow does
          python3-setuptools python3-pip)  # the Python client as a package (python/pyproject.toml)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all build dependencies present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
