#!/usr/bin/env python3
"""The independent check of bench/mps-users.sh (issue 57), from the jobs' own
logs only, never from colo's store or output.

Each job's log (bench/train.py under `sh -c "id -un; ..."`) starts with the
user it ran as, says whether it was an MPS client and of which pipe directory
("train.py: mps client: yes (pipe dir DIR)"), when it started ("train.py:
started at T"), and has one line per epoch ("epoch 2/5: 12.3s, 4065 img/s,
..., ended at T"). From them, per case:

  users      who ran the jobs, and which MPS pipe directories (servers) each
             user's jobs used: shared cases one for all; separate two-user
             cases one per user;
  makespan   the first job's start to the last epoch's end;
  rate       each job's steady rate: its epochs after the first (start-up and
             cudnn's autotuning), samples over seconds;
  throughput the sum of the jobs' steady rates over the solo job's steady
             rate (the solo case): the GPU's work in solo jobs' worth.

Passes when every job ran whole, as the user its case says, through the
servers its mode says; and the shared two-user case is within TOLERANCE (5%)
of the shared one-user case in makespan and in throughput while all four
trained (the window from the last job's first epoch end to the first job's
end, each job's samples in it interpolated within its epochs, over the solo
rate): jobs that never trained at the same time compare nothing. The separate
two-user case's cost against the shared one (makespan and throughput) is
reported, not judged. With an overrun case: nobody's job failed out of
memory under its MPS limit, root's job beside it ended every epoch in one
attempt (no later attempt's log).

  bench/check-mps-users.py RESULTS_DIR [--tolerance 0.05]
"""
import argparse
import glob
import os
import re
import statistics
import sys

EPOCH = re.compile(
    r"^epoch (\d+)/(\d+): ([\d.]+)s, [\d.]+ img/s, loss \S+, (\d+) samples, ended at ([\d.]+)")
STARTED = re.compile(r"^train\.py: started at ([\d.]+)")
PIPE = re.compile(r"^train\.py: mps client: (yes \(pipe dir (.*)\)|no)")


class Log:
    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        self.user = None
        self.pipe = None
        self.started = None
        self.epochs = []  # (epoch, of, seconds, samples, ended_at)
        self.text = ""
        with open(path, errors="replace") as f:
            self.text = f.read()
        for i, line in enumerate(self.text.splitlines()):
            if i == 0 and re.fullmatch(r"[a-z_][a-z0-9_-]*", line.strip()):
                self.user = line.strip()
            m = PIPE.match(line)
            if m:
                self.pipe = m.group(2) if m.group(2) else ""
            m = STARTED.match(line)
            if m and self.started is None:
                self.started = float(m.group(1))
            m = EPOCH.match(line)
            if m:
                self.epochs.append((int(m.group(1)), int(m.group(2)), float(m.group(3)),
                                    int(m.group(4)), float(m.group(5))))

    def whole(self):
        return bool(self.epochs) and self.epochs[-1][0] == self.epochs[-1][1]

    def steady_rate(self):
        later = self.epochs[1:] or self.epochs
        seconds = sum(e[2] for e in later)
        return sum(e[3] for e in later) / seconds if seconds > 0 else 0.0

    def ended(self):
        return self.epochs[-1][4] if self.epochs else None

    def samples_until(self, when):
        """Samples of its epochs 2..n trained by `when`, linear within an epoch."""
        done = 0.0
        for prev, cur in zip(self.epochs, self.epochs[1:]):
            t0, t1, n = prev[4], cur[4], cur[3]
            if when >= t1:
                done += n
            elif when > t0 and t1 > t0:
                done += n * (when - t0) / (t1 - t0)
        return done


def together(logs, solo):
    """(throughput, seconds): the jobs' summed rate over the solo rate while
    every one of them was past its first epoch and none had ended; None when
    they never trained at the same time."""
    w0 = max(log.epochs[0][4] for log in logs)
    w1 = min(log.ended() for log in logs)
    if w1 <= w0:
        return None
    done = sum(log.samples_until(w1) - log.samples_until(w0) for log in logs)
    return done / (w1 - w0) / solo, w1 - w0


def first_attempts(case_dir):
    """The logs of the jobs' first attempts (colo names later ones NAME.attemptN.log)."""
    return [Log(p) for p in sorted(glob.glob(os.path.join(case_dir, "*.log")))
            if ".attempt" not in os.path.basename(p) and os.path.basename(p) != "serve.log"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--tolerance", type=float, default=0.05)
    args = ap.parse_args()
    problems = []

    def check(ok, what):
        print(("PASS " if ok else "FAIL ") + what)
        if not ok:
            problems.append(what)

    solo_logs = first_attempts(os.path.join(args.results, "solo"))
    check(len(solo_logs) == 1 and solo_logs[0].whole(), "the solo job ran whole")
    if not solo_logs or not solo_logs[0].epochs:
        print("FAIL: no solo rate; nothing to normalize by")
        return 1
    solo = solo_logs[0].steady_rate()
    print("solo rate: %.0f img/s (%s, %s)" % (solo, solo_logs[0].name, solo_logs[0].user))

    table = {}
    for case, users_expected in (("shared-1u", ["root"]), ("shared-2u", ["root", "nobody"]),
                                 ("separate-1u", ["root"]), ("separate-2u", ["root", "nobody"])):
        case_dir = os.path.join(args.results, case)
        if not os.path.isdir(case_dir):
            print("%s: not run" % case)
            continue
        logs = first_attempts(case_dir)
        check(len(logs) == 4, "%s: four jobs' logs (found %d)" % (case, len(logs)))
        if not logs:
            continue
        retried = glob.glob(os.path.join(case_dir, "*.attempt*.log"))
        check(not retried, "%s: every job ran in one attempt%s" %
              (case, "" if not retried else " (later attempts: %s)" %
               ", ".join(os.path.basename(p) for p in retried)))
        for log in logs:
            check(log.whole(), "%s: %s ran every epoch" % (case, log.name))
        by_user = {}
        for log in logs:
            by_user.setdefault(log.user, []).append(log)
        check(sorted(by_user) == sorted(users_expected) and
              all(len(v) == 4 // len(users_expected) for v in by_user.values()),
              "%s: jobs ran as %s (their logs' id -un: %s)" %
              (case, " and ".join(users_expected),
               ", ".join("%s x%d" % (u, len(v)) for u, v in sorted(by_user.items(), key=str))))
        pipes = {log.pipe for log in logs}
        check("" not in pipes and None not in pipes, "%s: every job was an MPS client" % case)
        if case.startswith("shared") or case.endswith("1u"):
            check(len(pipes) == 1, "%s: one MPS server for all four (pipe dirs: %s)" %
                  (case, ", ".join(sorted(map(str, pipes)))))
        else:
            per_user = {u: {log.pipe for log in v} for u, v in by_user.items()}
            check(all(len(p) == 1 for p in per_user.values()) and len(pipes) == len(per_user),
                  "%s: a server per user (%s)" %
                  (case, "; ".join("%s: %s" % (u, ", ".join(sorted(map(str, p))))
                                   for u, p in sorted(per_user.items(), key=str))))
        if not all(log.epochs and log.started for log in logs):
            continue
        makespan = max(log.ended() for log in logs) - min(log.started for log in logs)
        rates = [log.steady_rate() for log in logs]
        throughput = sum(r / solo for r in rates)
        user_rates = {u: sum(l.steady_rate() for l in v) / solo for u, v in by_user.items()}
        table[case] = (makespan, throughput, rates, user_rates, together(logs, solo))

    print()
    print("%-12s %10s %12s %20s  %s" % ("case", "makespan", "throughput", "all four together",
                                         "per job img/s (per user, solo jobs' worth)"))
    summary = []
    for case, (makespan, throughput, rates, user_rates, both) in table.items():
        line = "%-12s %9.1fs %11.2fx %20s  %s (%s)" % (
            case, makespan, throughput,
            "%.2fx over %.1fs" % both if both else "never",
            " ".join("%.0f" % r for r in rates),
            ", ".join("%s %.2f" % (u, t) for u, t in sorted(user_rates.items(), key=str)))
        print(line)
        summary.append(line)

    def compare(a, b, judged):
        if a not in table or b not in table:
            return
        ma, mb = table[a][0], table[b][0]
        ba, bb = table[a][4], table[b][4]
        if not ba or not bb:
            what = "%s against %s: the jobs of %s never trained all at once" % (
                a, b, a if not ba else b)
            if judged:
                check(False, what)
            else:
                print("COST not measured: " + what)
            return
        m_ratio, t_ratio = ma / mb, ba[0] / bb[0]
        what = "%s against %s: makespan %.3fx, throughput while all four trained %.3fx" % (
            a, b, m_ratio, t_ratio)
        if judged:
            check(abs(m_ratio - 1) <= args.tolerance and abs(t_ratio - 1) <= args.tolerance,
                  what + " (within %.0f%%)" % (100 * args.tolerance))
        else:
            print("COST " + what)
        summary.append(what)

    print()
    compare("shared-2u", "shared-1u", judged=True)
    compare("separate-2u", "shared-2u", judged=False)
    compare("separate-2u", "separate-1u", judged=False)
    compare("separate-1u", "shared-1u", judged=False)

    overrun = os.path.join(args.results, "overrun")
    if os.path.isdir(overrun):
        logs = {log.name: log for log in first_attempts(overrun)}
        keeper = [l for n, l in logs.items() if "keeper" in n]
        hog = [l for n, l in logs.items() if "hog" in n]
        check(len(keeper) == 1 and keeper[0].user == "root" and keeper[0].whole() and
              not glob.glob(os.path.join(overrun, "*keeper*.attempt*.log")),
              "overrun: root's job beside it trained every epoch in one attempt")
        check(len(hog) == 1 and hog[0].user == "nobody" and not hog[0].epochs and
              ("OutOfMemoryError" in hog[0].text or "out of memory" in hog[0].text),
              "overrun: nobody's job under its 2 GiB MPS limit failed out of memory")
        summary.append("overrun: %s" % ("ok" if not [p for p in problems if "overrun" in p]
                                         else "FAIL"))

    with open(os.path.join(args.results, "summary.txt"), "w") as f:
        f.write("\n".join(summary) + "\n")
    print()
    print("FAIL: %d problem(s)" % len(problems) if problems else "PASS")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
