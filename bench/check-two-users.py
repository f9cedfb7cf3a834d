#!/usr/bin/env python3
"""The independent check of bench/serve-two-users.sh, from the jobs' own logs
and files, never from colo's store: each job ran as its submitter, user A's
torch window wrote a Chrome trace with GPU kernels (and a summary owned by A),
user B's trainer read batches through the shared loader on the GPU, and the
directories on the way are 0711 with each job's own owned by its user.

  bench/check-two-users.py RESULTS_DIR USER_A USER_B PROFILE_DIR
"""
import glob
import json
import os
import pwd
import sys


def main():
    out, ua, ub, prof = sys.argv[1:5]
    problems = []

    def check(ok, what):
        print(("PASS " if ok else "FAIL ") + what)
        if not ok:
            problems.append(what)

    def first_line(path):
        with open(path, errors="replace") as f:
            return f.readline().strip()

    check(first_line(os.path.join(out, "a.log")) == ua, "A's job ran as %s (its log's id -un)" % ua)
    check(first_line(os.path.join(out, "b.log")) == ub, "B's job ran as %s (its log's id -un)" % ub)
    a_log = open(os.path.join(out, "a.log"), errors="replace").read()
    check("Traceback" not in a_log and "PermissionError" not in a_log, "A's log holds no traceback")

    summaries = sorted(glob.glob(os.path.join(prof, "torch-summary-*.json")))
    check(len(summaries) >= 1, "A's window wrote a summary in its profile directory")
    for s in summaries:
        check(pwd.getpwuid(os.stat(s).st_uid).pw_name == ua, "%s is %s's" % (os.path.basename(s), ua))
    traces = sorted(glob.glob(os.path.join(prof, "torch-trace-*.json")))
    kernels = 0
    for t in traces:
        with open(t) as f:
            events = json.load(f).get("traceEvents", [])
        kernels += sum(1 for e in events if str(e.get("cat", "")).lower() == "kernel")
    check(kernels > 0, "A's trace holds GPU kernels (%d)" % kernels)

    trainer = os.path.join(out, "b-trainer.json")
    log = json.load(open(trainer)) if os.path.exists(trainer) else {}
    images = log.get("images", 0) or 0
    check(images > 0, "B's trainer read %s images through the shared loader" % images)
    check(str(log.get("device", "cuda")).startswith("cuda"), "B trained on the GPU")

    modes = {}
    for line in open(os.path.join(out, "modes.txt")):
        parts = line.strip().split(maxsplit=2)
        if len(parts) == 3:
            modes[parts[2]] = (parts[0], parts[1])
    parents = [p for p, (m, u) in modes.items()
               if not p.startswith(prof) and "/data/" not in p]
    for p in parents:
        check(modes[p] == ("711", "root"), "%s is 0711 root (%s %s)" % (p, *modes[p]))
    if prof in modes:
        check(modes[prof][1] == ua, "A's profile directory is %s's (%s)" % (ua, modes[prof][1]))
    for p, (m, u) in modes.items():
        if "/data/" in p:
            check(u == ub and m == "700", "B's loader directory is %s's, 0700 (%s %s)" % (ub, u, m))
    print("RESULT: " + ("PASS" if not problems else "FAIL (%d)" % len(problems)))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
