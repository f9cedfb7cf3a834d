#!/usr/bin/env python3
"""Runs a command and prints its CPU time, as the kernel counted it, two ways.

/usr/bin/time prints CPU time in hundredths of a second (a 1,000-point
`colo simulate` takes about 0.015 s of it) and counts a process's reaped
children with it (for `colo run` of 10,000 `true` jobs that mixes colo's own
cost with the jobs'). This waits for the command to end without reaping it
(waitid with WNOWAIT) and reads its own user and system time from
/proc/PID/stat (fields 14 and 15, in clock ticks; 16 and 17 are its reaped
children's); then reaps it with wait4(), whose rusage the kernel fills with
its CPU time to the microsecond (its reaped children's included) and its peak
RSS. Both count the moment between the spawn and the command's exec (this
script's child until then: its RSS is this script's, about 13 MB, and a
`taskset -c 1 true` takes 2-3 ms of CPU in all).

    bench/cpu-of.py COMMAND [ARG...]     (bench/own-cpu.py is the same script)

Prints, on stderr after the command's own output:
    cpu-of: 0.014213 s CPU (0.012001 user, 0.002212 system), 0.015 s wall, 15624 KB max RSS
    own-cpu: 1.23 s own (0.80 user, 0.43 system), 4.56 s children, 7.89 s wall
and exits with the command's exit status.
"""

import os
import sys
import time


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    started = time.monotonic()
    pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ)
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    wall = time.monotonic() - started
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3); utime is field 14.
    tick = os.sysconf("SC_CLK_TCK")
    own_user, own_system, child_user, child_system = (int(v) / tick for v in fields[11:15])
    _, status, usage = os.wait4(pid, 0)
    user, system = usage.ru_utime, usage.ru_stime
    print(
        f"cpu-of: {user + system:.6f} s CPU ({user:.6f} user, {system:.6f} system), "
        f"{wall:.3f} s wall, {usage.ru_maxrss} KB max RSS",
        file=sys.stderr,
    )
    print(
        f"own-cpu: {own_user + own_system:.2f} s own ({own_user:.2f} user, {own_system:.2f} system), "
        f"{child_user + child_system:.2f} s children, {wall:.2f} s wall",
        file=sys.stderr,
    )
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
