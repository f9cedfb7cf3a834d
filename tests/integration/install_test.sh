#!/usr/bin/env bash
# `cmake --install` of the build under test into a temporary prefix: colo
# runs from there, finds its bench scripts, has a man page that documents
# the exit codes, bash completion that completes subcommands and options, the
# Python client importable from share/colo/python, and importable outside colo
# after share/colo/install-python-client.sh (Debian's python3; a venv).
set -euo pipefail
: "${BUILD_DIR:?}" "${COLO_SOURCE_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$(cd "$tmp" && pwd -P)/prefix  # as colo resolves it
fail() { echo "install_test: $*" >&2; exit 1; }

cmake --install "$BUILD_DIR" --prefix "$prefix" >/dev/null
colo=$prefix/bin/colo
[ -x "$colo" ] || fail "no $colo"
"$colo" --version | grep -qE '^colo [0-9]+\.[0-9]+\.[0-9]+$' || fail "colo --version"

man=$prefix/share/man/man1/colo.1
[ -s "$man" ] || fail "no man page $man"
grep -q 'Exit codes' "$man" || fail "the man page lacks the exit codes"
grep -q 'simulate' "$man" || fail "the man page lacks the subcommands"
# Its examples one per line, as `colo --help` prints them (not filled into one line).
examples=$(MANWIDTH=200 man -l "$man" 2>/dev/null | sed -n '/Examples:/,$p')
[ "$(printf '%s\n' "$examples" | grep -c '^ *colo ')" -ge 3 ] ||
  fail "the man page's examples run together: $examples"

# The documents and examples its messages name.
doc=$prefix/share/doc/colo
for f in docs/job-file.md docs/cli.md examples/quickstart.toml README.md; do
  [ -s "$doc/$f" ] || fail "$doc/$f is not installed (colo's messages name it)"
done
[ ! -e "$doc/docs/results" ] || fail "the measured results were installed with the docs"
completion=$prefix/share/bash-completion/completions/colo
[ -s "$completion" ] || fail "no bash completion"
complete_words() {  # the completions of the words given, the last one being completed
  PATH=$prefix/bin:$PATH bash -c 'source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _colo;
    echo "${COMPREPLY[*]}"' "$completion" "$@"
}
[ "$(complete_words colo mi)" = "mig" ] || fail "colo mi<TAB>: '$(complete_words colo mi)'"
[ "$(complete_words colo mig st)" = "status" ] || fail "colo mig st<TAB>"
[ "$(complete_words colo runs --js)" = "--json" ] || fail "colo runs --js<TAB>"
# Values (issue 33, item 19): an option's listed values, job files, run ids.
[ "$(complete_words colo run --backend s)" = "sim" ] || fail "colo run --backend s<TAB>"
[[ " $(complete_words colo run --mechanism '') " == *" mps "* ]] || fail "colo run --mechanism <TAB>"
touch "$tmp/sweep.toml" "$tmp/notes.txt"
[ "$(cd "$tmp" && complete_words colo run sw)" = "sweep.toml" ] || fail "colo run sw<TAB>"
[ -z "$(cd "$tmp" && complete_words colo run no)" ] || fail "colo run no<TAB> offers a non-.toml file"
[[ " $(complete_words colo show '') " == *" last "* ]] || fail "colo show <TAB>"
gpu_flags=" $(complete_words colo simulate --gpu-) "
[[ $gpu_flags == *" --gpu-model "* && $gpu_flags == *" --gpu-count "* ]] ||
  fail "colo simulate --gpu-<TAB>: '$gpu_flags'"

# Run from elsewhere, the installed colo finds its installed bench scripts.
(cd "$tmp" && "$colo" bench --suite paper-uniform --cases 'small/*' --dry-run --backend sim 2>&1) |
  grep -q "jobs run $prefix/share/colo/bench/sim_train.py" || fail "colo bench's scripts"

PYTHONPATH=$prefix/share/colo/python python3 -c 'import colo_progress' || fail "share/colo/python"
# The Python client for scripts run outside colo, as installed colo documents
# it: with Debian's own python3, which refuses pip installs (PEP 668), and in a
# virtual environment; either leaves nothing beside the client.
client=$prefix/share/colo/python
install_client=$prefix/share/colo/install-python-client.sh
[ -x "$install_client" ] || fail "no $install_client"
imports_client() {  # PYTHON [HOME]: imports both modules from outside the client's folder
  (cd "$tmp" && HOME=${2:-$HOME} "$1" -c 'import colo_progress, colo_data') 2>/dev/null
}
tried=0
if /usr/bin/python3 -c 'import sys, sysconfig, os; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))' 2>/dev/null; then
  tried=1
  HOME=$tmp/home PYTHON=/usr/bin/python3 "$install_client" >/dev/null ||
    fail "install-python-client.sh with Debian's python3"
  imports_client /usr/bin/python3 "$tmp/home" || fail "Debian's python3 does not import the client"
fi
if /usr/bin/python3 -m venv --system-site-packages "$tmp/venv" 2>/dev/null &&
   "$tmp/venv/bin/python" -c 'import setuptools, wheel' 2>/dev/null; then
  tried=1
  PYTHON=$tmp/venv/bin/python "$install_client" >/dev/null 2>&1 ||
    fail "install-python-client.sh in a virtual environment"
  imports_client "$tmp/venv/bin/python" || fail "the virtual environment does not import the client"
  "$tmp/venv/bin/python" -m pip show colo-client >/dev/null || fail "no colo-client package in the venv"
fi
[ "$tried" -eq 1 ] || echo "install_test: no Debian python3 and no venv with setuptools: client install skipped"
leftovers=$(find "$client" -mindepth 1 -not -name '*.py' -not -name pyproject.toml -not -path '*__pycache__*')
[ -z "$leftovers" ] || fail "installing the client left files beside it: $leftovers"
echo "install_test: ok"
