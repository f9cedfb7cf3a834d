#!/usr/bin/env bash
# colo serve inside the systemd unit's sandbox, with setpriv standing in for
# systemd: the capability bounding set packaging/colo.service.in names and
# no-new-privileges. A service that runs another user's job as them, cancels
# it, starts an MPS daemon for each user or one multi-user daemon for all
# (a directory given to the socket's group), and a shared loader as its user
# beside another user's profiled job, must keep working there; a
# capability dropped from the unit that colo needs fails this (without
# CAP_SETUID the first test's job never runs as its submitter).
# Skips (77) where it cannot make Unix users: not root, no setpriv.
set -euo pipefail
: "${COLO_SOURCE_DIR:?}" "${SERVE_TEST:?}"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null || ! command -v useradd >/dev/null; then
  echo "unit_sandbox_test: needs root, setpriv and useradd: skipped"
  exit 77
fi
unit=$COLO_SOURCE_DIR/packaging/colo.service.in
fail() { echo "unit_sandbox_test: $*" >&2; exit 1; }
grep -qx 'NoNewPrivileges=yes' "$unit" || fail "$unit does not set NoNewPrivileges=yes"
# CAP_SETUID CAP_KILL ... as setpriv spells them: +setuid,+kill,...
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr 'A-Z ' 'a-z,' | sed 's/cap_/+/g')
[ -n "$caps" ] || fail "$unit has no CapabilityBoundingSet="
tests=ColoServe.AnotherUserCannotCancelAndJobsRunAsTheirSubmitter
tests+=:ColoServeMpsUsers.TwoUsersJobsUnderMpsAreClientsOfADaemonEachWithoutMultiUserMode
tests+=:ColoServeMpsUsers.TwoUsersJobsShareOneMultiUserMpsServer
tests+=:ColoServe.AUsersQuotaOfGpusBoundsTheirRunningJobsAndTheQueueSaysWhy
tests+=:ColoServe.TwoUsersJobsReachTheirProfileWindowAndSharedLoaderThroughTheirParents
out=$(mktemp)
trap 'rm -f "$out"' EXIT
setpriv --no-new-privs --inh-caps=-all --bounding-set="-all,$caps" "$SERVE_TEST" --gtest_filter="$tests" \
  >"$out" 2>&1 || { cat "$out"; fail "colo serve fails under the unit's sandbox ($caps; above)"; }
if ! grep -q '^\[  PASSED  \] 5 tests\.$' "$out" || grep -q '^\[  SKIPPED \]' "$out"; then
  cat "$out"
  fail "the tests did not all run under the unit's sandbox (above)"
fi
echo "unit_sandbox_test: ok (bounding set $caps, no new privileges)"
