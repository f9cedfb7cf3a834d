#!/usr/bin/env python3
"""Runs a command and prints the CPU time of that process alone, without its children.

/usr/bin/time counts a process's reaped children too; for `colo run` of
10,000 `true` jobs that mixes colo's own cost with the jobs'. This waits for
the command to end without reaping it (waitid with WNOWAIT), reads its own
user and system time from /proc/PID/stat (fields 14 and 15, in clock ticks;
16 and 17 are its reaped children's), then reaps it.

    bench/own-cpu.py COMMAND [ARG...]

Prints, on stderr after the command's own output:
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
    user, system, child_user, child_system = (int(v) / tick for v in fields[11:15])
    _, status = os.waitpid(pid, 0)
    print(
        f"own-cpu: {user + system:.2f} s own ({user:.2f} user, {system:.2f} system), "
        f"{child_user + child_system:.2f} s children, {wall:.2f} s wall",
        file=sys.stderr,
    )
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
