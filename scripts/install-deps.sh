#!/usr/bin/env bash
# Installs the Debian packages colo needs (only what is missing).
#   scripts/install-deps.sh           what building colo needs, and what its tests add
#   scripts/install-deps.sh --build   only what building colo needs (scripts/quickstart.sh)
set -euo pipefail
build=(cmake ninja-build g++ pkg-config libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev
       libre2-dev         # RE2: epoch_regex and step_regex, linked from its static archive
       libsqlite3-dev
       libncurses-dev     # colo top (linked statically)
       libturbojpeg0-dev  # JPEG decoding of the shared data loader (linked statically)
       python3)           # the jobs' client (python/), and scripts/quickstart.sh
tests=(libgtest-dev libgmock-dev  # the unit and integration tests
       tmux               # colo top's test drives it in a real terminal
       clang libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer
       python3-torch      # the data-sharing tests' consumers (python/colo_data.py)
       chromium           # PNG figures of `colo report` and its browser tests
       slurm-wlm munge    # a real Slurm for the `colo slurm` test (scripts/local-slurm.sh);
                          # its slurmd.service is what the install test rates colo's unit against
       systemd            # systemd-analyze verify and security of that unit (the install test)
       prometheus         # a real Prometheus scrapes `colo serve --http`'s /metrics in a test
       procps time        # pgrep/pkill and /usr/bin/time: leftover-process tests, bench/soak.sh
       stress-ng          # scripts/test-under-load.sh: the suite on a busy machine
       help2man           # colo's man page (cmake --install)
       man-db             # the install test renders that man page
       python3-yaml       # the MLflow export test reads the export back as MLflow does
       # The install test installs the Python client offline into Debian's python3 and a venv.
       python3-setuptools python3-wheel python3-pip python3-venv)
case ${1:-} in
  --build) packages=("${build[@]}") what="build" ;;
  "") packages=("${build[@]}" "${tests[@]}") what="build and test" ;;
  *) echo "usage: scripts/install-deps.sh [--build]" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all $what dependencies present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
