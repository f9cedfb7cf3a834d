#!/bin/bash
# Downloads, without installing, Debian's Slurm and munge packages and the
# libraries their programs and plugins link against, into DIR (default
# .slurm-debs/, ignored by git), for bench/slurm-gpu.sh on a GPU machine that
# has neither Slurm nor network: it unpacks them into a private prefix
# (dpkg -x), never into /.
#
#   scripts/fetch-slurm-debs.sh [DIR]
#
# Run it on Debian 12 with slurm-wlm and munge installed (scripts/install-deps.sh):
# the libraries are found with ldd over the installed files. glibc (libc6) is
# left out on purpose: the programs use the GPU machine's own, which must be
# at least Debian 12's 2.36 (Ubuntu 22.04's 2.35 is too old; 24.04's 2.39 is fine).
set -euo pipefail
out=${1:-.slurm-debs}
main=(slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge libmunge2)
# Provided by every glibc system, and never to be replaced by older copies.
skip='^(libc6|libgcc-s1|libstdc\+\+6)$'

for p in "${main[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || {
    echo "fetch-slurm-debs: $p is not installed here; run scripts/install-deps.sh first" >&2
    exit 1
  }
done

# The packages owning every library the ELF files of those packages need.
libs=$(dpkg -L "${main[@]}" | while read -r f; do
  [ -f "$f" ] && [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && echo "$f"
done | xargs -r ldd 2>/dev/null | awk '/=> \// {print $3}' | sort -u)
owners=$(for l in $libs; do
  dpkg -S "$(readlink -f "$l")" 2>/dev/null || dpkg -S "$l" 2>/dev/null || true
done | cut -d: -f1 | sort -u | grep -Ev "$skip" || true)

mkdir -p "$out"
cd "$out"
rm -f ./*.deb
# shellcheck disable=SC2086
apt-get download "${main[@]}" $owners
ls -1 ./*.deb >MANIFEST
echo "fetch-slurm-debs: $(wc -l <MANIFEST) packages, $(du -sh . | cut -f1) in $(pwd)"
