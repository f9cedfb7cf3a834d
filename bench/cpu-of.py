#!/usr/bin/env python3
"""Runs a command and prints its CPU time (user + system) from the kernel's own count.

/usr/bin/time prints CPU time in hundredths of a second, and a 1,000-point
`colo simulate` takes about 0.015 s: its growth ratios need more. This reaps
the command with wait4(), whose rusage the kernel fills from the time it ran
(user + system to the microsecond), together with its wall time and peak RSS.
Children the command reaped count too, as getrusage counts them.

    bench/cpu-of.py COMMAND [ARG...]

Prints, on stderr after the command's own output:
    cpu-of: 0.014213 s CPU (0.012001 user, 0.002212 system), 0.015 s wall, 15624 KB max RSS
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
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - started
    user, system = usage.ru_utime, usage.ru_stime
    print(
        f"cpu-of: {user + system:.6f} s CPU ({user:.6f} user, {system:.6f} system), "
        f"{wall:.3f} s wall, {usage.ru_maxrss} KB max RSS",
        file=sys.stderr,
    )
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
