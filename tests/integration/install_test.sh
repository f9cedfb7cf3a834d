#!/usr/bin/env bash
# `cmake --install` of the build under test into a temporary prefix: colo
# runs from there, finds its bench scripts, has a man page that documents
# the exit codes, bash completion that completes subcommands and options, the
# Python client importable from share/colo/python and installable as a
# package (python/pyproject.toml; that step is skipped without pip).
set -euo pipefail
: "${BUILD_DIR:?}" "${COLO_SOURCE_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
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
gpu_flags=" $(complete_words colo simulate --gpu-) "
[[ $gpu_flags == *" --gpu-model "* && $gpu_flags == *" --gpu-count "* ]] ||
  fail "colo simulate --gpu-<TAB>: '$gpu_flags'"

# Run from elsewhere, the installed colo finds its installed bench scripts.
(cd "$tmp" && "$colo" bench --suite paper-uniform --cases 'small/*' --dry-run --backend sim 2>&1) |
  grep -q "jobs run $prefix/bin/../share/colo/bench/sim_train.py" || fail "colo bench's scripts"

PYTHONPATH=$prefix/share/colo/python python3 -c 'import colo_progress' || fail "share/colo/python"
if python3 -m pip --version >/dev/null 2>&1 && python3 -c 'import setuptools, wheel' 2>/dev/null; then
  cp "$COLO_SOURCE_DIR"/python/pyproject.toml "$COLO_SOURCE_DIR"/python/colo_progress.py \
     "$COLO_SOURCE_DIR"/python/colo_data.py "$tmp/"
  mkdir "$tmp/python" && mv "$tmp"/pyproject.toml "$tmp"/colo_*.py "$tmp/python/"
  python3 -m pip install -q --no-build-isolation --no-deps --no-index --target "$tmp/site" \
    "$tmp/python" 2>/dev/null || fail "pip install of python/pyproject.toml"
  (cd "$tmp" && PYTHONPATH=$tmp/site python3 -c 'import colo_progress, colo_data') ||
    fail "the installed package does not import"
else
  echo "install_test: no pip, setuptools or wheel for python3: the package step was skipped"
fi
echo "install_test: ok"
