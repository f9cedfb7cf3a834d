#!/bin/sh
# Makes colo.1 with help2man: `colo --help` (subcommands, exit codes,
# examples), `colo serve --help` as the section SERVICE OPTIONS, and
# man-sections.h2m (ENVIRONMENT, FILES, SEE ALSO).
#   man-page.sh HELP2MAN COLO OUT
# Defaults that colo's help reads from the environment are shown as their
# rule (<state dir>/colo.db), never as the paths of whoever builds it.
set -eu
help2man=$1 colo=$2 out=$3
here=$(dirname "$0")
help2man() {
  env -u COLO_BACKEND -u COLO_SOCKET -u COLO_LOCK_DIR -u XDG_STATE_HOME COLO_HOME='<state dir>' \
    "$help2man" --no-info --no-discard-stderr "$@"
}
help2man --help-option='serve --help' --name serve --output "$out.serve" "$colo"
{
  echo '[SERVICE OPTIONS]'
  echo '.B colo serve'
  echo 'runs the service that owns the GPUs (docs/serve.md). Its options:'
  sed -n '/^\.SH OPTIONS/,/^\.SH /{/^\.SH /d;p;}' "$out.serve"
} >"$out.h2m"
help2man --name "run training jobs collocated on NVIDIA GPUs" --include "$here/man-sections.h2m" \
  --include "$out.h2m" --output "$out" "$colo"
sed -i -f "$here/man-examples.sed" "$out"
rm -f "$out.serve" "$out.h2m"
