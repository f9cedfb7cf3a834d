#!/usr/bin/env python3
"""The independent check of bench/faults.py (issue 31): every figure
recomputed from the jobs' own logs, beside what colo claims in its store.

    bench/check-faults.py neighbour-assert RESULTS_DIR/neighbour-assert
    bench/check-faults.py stall RESULTS_DIR/stall [--stall-floor-s 60]
    bench/check-faults.py gang-rank-exit RESULTS_DIR/gang-rank-exit

It uses none of colo's code. From the logs (each attempt's file under the
case's logs/ directory, <id>-<name>.log for the first attempt and
<id>-<name>.attemptN.log for the others) it reads bench/train.py's lines:
"train.py: started at T", "train.py: arguments: ...", "train.py: mps client:
yes|no", "train.py: resumed at epoch E", "epoch e/E: Ss, ... ended at T",
"train.py: rank R exits abruptly ... in epoch N", "train.py: stalling after
epoch N", assertion lines and tracebacks. colo's claims come from its store,
read with sqlite3 from a copy: jobs (name, state, reason) and job_attempts
(attempt, state, reason, started_ms, ended_ms, log_path).

neighbour-assert, per repeat (rN/baseline and rN/fault):
  - every healthy job ended ok in the store and its logs show every epoch
    1..E trained, over its attempts (an attempt that resumed at epoch k
    relies on the earlier ones for 1..k-1);
  - no failure counted against a healthy job: every attempt of one that was
    not its last has a reason containing "not counted";
  - the fault case's makespan from the logs (the last "ended at" minus the
    first "started at", over all its jobs) within --makespan-ratio (1.5) of
    the baseline's;
  - the faulty job (the one with --bad-labels-at-epoch) ended failed with a
    reason containing --assert-pattern ("Assertion"), whose text appears in
    its last log; that last attempt's log says "mps client: no" (it ran
    outside the shared MPS server) and an earlier one "mps client: yes";
  - the case meant something: some healthy attempt was running when the
    faulty job's MPS attempt hit the fault.
stall: the first attempt's log shows epochs 1..N (N: --stall-after-epoch) and
  no later one; colo's reason for that attempt starts with "stalled:"; colo
  ended it (ended_ms) within 3x the longest epoch of the log + --stall-floor-s
  + 10 s after epoch N's "ended at"; the job ended ok and its logs show every
  epoch.
gang-rank-exit: the job ended ok; its first attempt's log shows rank R's
  abrupt exit in epoch --exit-at-epoch and no end of that epoch; a later
  attempt trained every epoch (with what it resumed from); how many attempts
  colo counted (reasons without "not counted").

Prints a table per case, PASS/FAIL lines and "result: PASS|FAIL"; the exit
status is 1 on any FAIL, 2 on bad usage.
"""

import argparse
import glob
import json
import os
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile

ENDED_AT = re.compile(r"^epoch (\d+)/(\d+): ([0-9.]+)s, .* ended at (\d+(?:\.\d+)?)\s*$")
STARTED = re.compile(r"^train\.py: started at (\d+(?:\.\d+)?)")
ARGUMENTS = re.compile(r"^train\.py: arguments: (.*)$")
MPS = re.compile(r"^train\.py: mps client: (yes|no)\b")
RESUMED = re.compile(r"^train\.py: resumed at epoch (\d+)")
EXITED = re.compile(r"train\.py: rank (\d+) exits abruptly .* in epoch (\d+)")
STALLING = re.compile(r"^train\.py: stalling after epoch (\d+) at (\d+(?:\.\d+)?)")
LOG_NAME = re.compile(r"^(\d+)-(.+?)(?:\.attempt(\d+))?\.log$")
NOT_COUNTED = "not counted"


# ---- the logs -----------------------------------------------------------------

class Attempt:
    """What one attempt's log shows."""

    def __init__(self, path, number):
        self.path = path
        self.number = number
        self.started = None       # the earliest "started at" (a gang: every rank's)
        self.args = ""
        self.mps = None           # "yes", "no" or None (no line)
        self.resumed_at = None
        self.epochs = []          # (epoch, epochs, seconds, ended_at)
        self.exits = []           # (rank, epoch)
        self.stalled_after = None
        self.assertions = []      # lines matching the assertion pattern
        self.traceback = False
        self.lines = []

    def parse(self, pattern):
        try:
            with open(self.path, errors="replace") as f:
                # The ranks of a gang share the log: a line may hold another
                # rank's train.py line glued to its end; split them apart.
                self.lines = [part for line in f
                              for part in re.split(r"(?<=\S)(?=train\.py: )", line.rstrip("\n"))]
        except OSError:
            self.lines = []
        for line in self.lines:
            text = line.strip()
            m = STARTED.match(text)
            if m:
                t = float(m.group(1))
                self.started = t if self.started is None else min(self.started, t)
                continue
            m = ARGUMENTS.match(text)
            if m and not self.args:
                self.args = m.group(1)
                continue
            m = MPS.match(text)
            if m and self.mps is None:
                self.mps = m.group(1)
                continue
            m = RESUMED.match(text)
            if m:
                self.resumed_at = int(m.group(1))
                continue
            m = ENDED_AT.match(text)
            if m:
                self.epochs.append((int(m.group(1)), int(m.group(2)), float(m.group(3)),
                                    float(m.group(4))))
                continue
            m = EXITED.search(text)
            if m:
                self.exits.append((int(m.group(1)), int(m.group(2))))
                continue
            m = STALLING.match(text)
            if m:
                self.stalled_after = int(m.group(1))
                continue
            if text.startswith("Traceback (most recent call last)"):
                self.traceback = True
            if re.search(pattern, text):
                self.assertions.append(text)
        return self

    def arg(self, name, default=None):
        words = self.args.split()
        for i, w in enumerate(words):
            if w == name and i + 1 < len(words):
                return words[i + 1]
            if w.startswith(name + "="):
                return w.split("=", 1)[1]
        return default

    def epoch_numbers(self):
        return {e for e, _, _, _ in self.epochs}

    def last_ended(self):
        return max((t for _, _, _, t in self.epochs), default=None)

    def epoch_end(self, epoch):
        for e, _, _, t in self.epochs:
            if e == epoch:
                return t
        return None


def find_logs(case_dir, pattern):
    """name -> [Attempt], in attempt order, from the files under logs/."""
    jobs = {}
    for path in glob.glob(os.path.join(case_dir, "logs", "**", "*.log"), recursive=True):
        m = LOG_NAME.match(os.path.basename(path))
        if not m:
            continue
        number = int(m.group(3) or 1)
        jobs.setdefault(m.group(2), []).append(Attempt(path, number).parse(pattern))
    return {k: sorted(v, key=lambda a: a.number) for k, v in jobs.items()}


def epochs_wanted(attempts):
    for a in attempts:
        value = a.arg("--epochs")
        if value:
            return int(value)
    for a in attempts:
        if a.epochs:
            return a.epochs[0][1]
    return None


def coverage(attempts, epochs):
    """(every epoch 1..epochs trained, honouring resumes; the epochs missing).
    An attempt that resumed at k counts only when 1..k-1 came before it."""
    seen = set()
    for a in attempts:
        # What an attempt skipped by resuming is covered only by what earlier
        # attempts' logs show they trained: the union is the whole rule.
        seen |= a.epoch_numbers()
    missing = sorted(set(range(1, (epochs or 0) + 1)) - seen)
    return not missing and epochs is not None, missing


def span(attempts_by_job):
    """(first "started at", last "ended at") over every attempt of every job."""
    starts = [a.started for v in attempts_by_job.values() for a in v if a.started is not None]
    ends = [a.last_ended() for v in attempts_by_job.values() for a in v
            if a.last_ended() is not None]
    if not starts or not ends:
        return None, None
    return min(starts), max(ends)


def ranges(numbers):
    numbers = sorted(numbers)
    if not numbers:
        return "none"
    out, start, prev = [], numbers[0], numbers[0]
    for n in numbers[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append("%d" % start if start == prev else "%d-%d" % (start, prev))
        if n is not None:
            start = prev = n
    return ",".join(out)


# ---- colo's store -------------------------------------------------------------

def read_store(case_dir):
    """name -> {"state", "reason", "attempts": [{attempt, state, reason,
    started_ms, ended_ms, log_path}]}, from a copy of the store (colo's file
    is never opened by this script); {} when there is none."""
    db = os.path.join(case_dir, "colo.db")
    if not os.path.exists(db):
        return {}
    tmp = tempfile.mkdtemp(prefix="check-faults-")
    try:
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                shutil.copy(db + suffix, os.path.join(tmp, "colo.db" + suffix))
        conn = sqlite3.connect(os.path.join(tmp, "colo.db"))
        conn.row_factory = sqlite3.Row
        out = {}
        ids = {}
        for row in conn.execute("SELECT id, name, state, reason FROM jobs ORDER BY id"):
            out[row["name"]] = {"state": row["state"], "reason": row["reason"] or "",
                                "attempts": []}
            ids[row["id"]] = row["name"]
        try:
            rows = conn.execute("SELECT job_id, attempt, state, reason, started_ms, ended_ms, "
                                "log_path FROM job_attempts ORDER BY job_id, attempt").fetchall()
        except sqlite3.Error:
            rows = []
        for row in rows:
            if row["job_id"] in ids:
                out[ids[row["job_id"]]]["attempts"].append(dict(row))
        conn.close()
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def counted_failures(job):
    """Attempts of `job` that ended without success and whose reason does not
    say "not counted": the non-last attempts, and the last when it failed."""
    attempts = job["attempts"]
    counted = [a for a in attempts[:-1] if NOT_COUNTED not in (a["reason"] or "")]
    if job["state"] != "ok" and attempts and NOT_COUNTED not in (attempts[-1]["reason"] or ""):
        counted.append(attempts[-1])
    return counted


def colo_span_s(store):
    starts = [a["started_ms"] for j in store.values() for a in j["attempts"] if a["started_ms"]]
    ends = [a["ended_ms"] for j in store.values() for a in j["attempts"] if a["ended_ms"]]
    if not starts or not ends:
        return None
    return (max(ends) - min(starts)) / 1000.0


def run_info(case_dir):
    try:
        with open(os.path.join(case_dir, "run.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def short(text, n=90):
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[:n - 3] + "..."


def fmt(v, unit="s"):
    return "-" if v is None else "%.1f %s" % (v, unit)


class Report:
    def __init__(self):
        self.lines = []
        self.failures = 0

    def say(self, text=""):
        self.lines.append(text)

    def check(self, ok, text):
        self.lines.append("%s %s" % ("PASS" if ok else "FAIL", text))
        if not ok:
            self.failures += 1
        return ok


def job_table(report, logs, store):
    report.say("  %-10s %-8s | %-7s %-8s %-7s %-44s | %-8s %-12s %-10s %s" % (
        "job", "role", "colo", "attempts", "counted", "colo's reason (the job's)",
        "log att.", "mps client", "epochs", "resumed at"))
    for name in sorted(set(logs) | set(store)):
        attempts = logs.get(name, [])
        job = store.get(name)
        role = "healthy"
        for flag, what in (("--bad-labels-at-epoch", "faulty"), ("--stall-after-epoch", "stalls"),
                           ("--exit-at-epoch", "exits")):
            if attempts and int(attempts[0].arg(flag, "0") or 0) > 0:
                role = what
        report.say("  %-10s %-8s | %-7s %-8s %-7s %-44s | %-8d %-12s %-10s %s" % (
            name, role, job["state"] if job else "absent",
            len(job["attempts"]) if job else "-",
            len(counted_failures(job)) if job else "-",
            short(job["reason"], 44) if job else "",
            len(attempts), ",".join(a.mps or "?" for a in attempts),
            ranges(set().union(*[a.epoch_numbers() for a in attempts]) if attempts else set()),
            ",".join(str(a.resumed_at) for a in attempts if a.resumed_at) or "-"))
        if job:
            for a in job["attempts"]:
                if a["reason"]:
                    report.say("      colo attempt %d %s: %s" % (a["attempt"], a["state"],
                                                                short(a["reason"], 160)))


# ---- the cases ----------------------------------------------------------------

def healthy_checks(report, label, logs, store, healthy):
    for name in healthy:
        job = store.get(name)
        epochs = epochs_wanted(logs[name])
        ok, missing = coverage(logs[name], epochs)
        report.check(job is not None and job["state"] == "ok" and ok,
                     "%s %s: colo says %s; logs: epochs 1..%s trained over %d attempt(s)%s" % (
                         label, name, job["state"] if job else "nothing (absent from the store)",
                         epochs, len(logs[name]),
                         "" if ok else ", MISSING " + ranges(missing)))


def neighbour_assert(args, report):
    repeats = sorted(glob.glob(os.path.join(args.case_dir, "r*")),
                     key=lambda p: int(re.sub(r"\D", "", os.path.basename(p)) or 0))
    repeats = [r for r in repeats if os.path.isdir(os.path.join(r, "fault"))]
    report.say("neighbour-assert: %d repeat(s) in %s" % (len(repeats), args.case_dir))
    if not report.check(bool(repeats), "at least one repeat was run"):
        return
    ratios = []
    for rdir in repeats:
        r = os.path.basename(rdir)
        report.say("")
        report.say("=== %s" % r)
        spans = {}
        for which in ("baseline", "fault"):
            case_dir = os.path.join(rdir, which)
            logs = find_logs(case_dir, args.assert_pattern)
            store = read_store(case_dir)
            info = run_info(case_dir)
            report.say("%s: colo exited %s after %s%s" % (
                which, info.get("exit_code"), fmt(info.get("seconds")),
                " (TIMED OUT: killed by faults.py)" if info.get("timed_out") else ""))
            job_table(report, logs, store)
            first, last = span(logs)
            spans[which] = (None if first is None else last - first, colo_span_s(store))
            report.check(not info.get("timed_out"), "%s %s: colo ended by itself" % (r, which))
            faulty = [n for n, v in logs.items()
                      if int(v[0].arg("--bad-labels-at-epoch", "0") or 0) > 0]
            healthy = sorted(n for n in logs if n not in faulty)
            report.check(len(healthy) >= 1 and all(n in logs for n in store),
                         "%s %s: logs found for every job in the store (%d healthy, %d faulty)"
                         % (r, which, len(healthy), len(faulty)))
            healthy_checks(report, "%s %s" % (r, which), logs, store, healthy)
            if which == "baseline":
                report.check(info.get("exit_code") == 0, "%s baseline: colo exited 0" % r)
                continue
            counted = {n: counted_failures(store[n]) for n in healthy if n in store}
            total = sum(len(v) for v in counted.values())
            report.check(total == 0 and len(counted) == len(healthy),
                         "%s fault: failures counted against healthy jobs: %d%s" % (
                             r, total, "".join(
                                 "; %s attempt %d (%s): %s" % (n, a["attempt"], a["state"],
                                                               short(a["reason"], 100))
                                 for n, v in counted.items() for a in v)))
            if not report.check(len(faulty) == 1, "%s fault: one faulty job in the logs (%d)"
                                % (r, len(faulty))):
                continue
            name = faulty[0]
            attempts = logs[name]
            job = store.get(name, {"state": "absent", "reason": "", "attempts": []})
            reason = job["reason"]
            report.check(job["state"] == "failed",
                         "%s fault: %s ended %s in the store (wanted failed)"
                         % (r, name, job["state"]))
            m = re.search(args.assert_pattern, reason)
            report.check(m is not None, "%s fault: %s's reason contains /%s/: %s"
                         % (r, name, args.assert_pattern, short(reason, 160)))
            last = attempts[-1]
            # The reason's assertion text, from the pattern to "failed" (or 60
            # characters), must be in a line of the last log.
            quoted = None
            if m:
                tail = reason[m.start():]
                f = re.search(r"failed\.?", tail)
                quoted = tail[:f.end()] if f and f.end() <= 300 else tail[:60]
                quoted = quoted.strip().rstrip('"\'').strip()
            in_log = bool(quoted) and any(quoted in line for line in last.lines)
            report.check(in_log and bool(last.assertions),
                         "%s fault: colo's assertion text %s is in %s's last log (%s): %s" % (
                             r, json.dumps(short(quoted or "", 80)), name,
                             os.path.basename(last.path),
                             short(last.assertions[0], 120) if last.assertions
                             else "NO line matching /%s/" % args.assert_pattern))
            earlier_mps = [a.number for a in attempts[:-1] if a.mps == "yes"]
            report.check(last.mps == "no" and bool(earlier_mps),
                         "%s fault: %s's last attempt (%d of %d) says mps client: %s; attempts "
                         "under MPS before it: %s" % (
                             r, name, last.number, len(attempts), last.mps or "(no line)",
                             ",".join(map(str, earlier_mps)) or "none"))
            # Meaningful: the fault (in its first MPS attempt, after the end of
            # the epoch before the bad labels) hit while a healthy attempt ran.
            mps_attempts = [a for a in attempts if a.mps == "yes"]
            hit = []
            if mps_attempts:
                a = mps_attempts[0]
                t_fault = a.last_ended() or a.started
                for n in healthy:
                    for h in logs[n]:
                        epochs = epochs_wanted(logs[n]) or 0
                        complete = epochs in h.epoch_numbers()
                        if (h.started is not None and t_fault is not None
                                and h.started <= t_fault
                                and (not complete or (h.last_ended() or 0) >= t_fault)):
                            hit.append("%s#%d" % (n, h.number))
            report.check(bool(hit), "%s fault: healthy attempts running when the faulty job's "
                         "MPS attempt failed: %s" % (r, ", ".join(hit) or "none (the case "
                                                                          "proves nothing)"))
        (b_log, b_colo), (f_log, f_colo) = spans["baseline"], spans["fault"]
        ratio = f_log / b_log if b_log and f_log else None
        if ratio:
            ratios.append(ratio)
        report.say("makespan   %-22s %-22s %s" % ("baseline", "fault", "ratio"))
        report.say("  logs     %-22s %-22s %s" % (fmt(b_log), fmt(f_log),
                                                  "%.2fx" % ratio if ratio else "-"))
        report.say("  colo     %-22s %-22s %s" % (
            fmt(b_colo), fmt(f_colo),
            "%.2fx" % (f_colo / b_colo) if b_colo and f_colo else "-"))
        report.check(ratio is not None and ratio <= args.makespan_ratio,
                     "%s: makespan from the logs, fault %s / baseline %s = %s (at most %.2fx)" % (
                         r, fmt(f_log), fmt(b_log), "%.2fx" % ratio if ratio else "-",
                         args.makespan_ratio))
    if ratios:
        report.say("")
        report.say("makespan ratio over %d repeat(s): min %.2fx, median %.2fx, max %.2fx" % (
            len(ratios), min(ratios), statistics.median(ratios), max(ratios)))


def one_job_case(args, report, case):
    """The logs and store of a case of one job: (name, its attempts' logs,
    colo's record of it), after the lines every such case prints; None when
    its logs are not one job's."""
    logs = find_logs(args.case_dir, args.assert_pattern)
    store = read_store(args.case_dir)
    info = run_info(args.case_dir)
    report.say("%s: colo exited %s after %s%s" % (
        case, info.get("exit_code"), fmt(info.get("seconds")),
        " (TIMED OUT: killed by faults.py)" if info.get("timed_out") else ""))
    job_table(report, logs, store)
    report.check(not info.get("timed_out"), "colo ended by itself")
    if not report.check(len(logs) == 1, "one job's logs found (%d)" % len(logs)):
        return None
    name, attempts = next(iter(logs.items()))
    return name, attempts, store.get(name, {"state": "absent", "reason": "", "attempts": []})


def stall(args, report):
    found = one_job_case(args, report, "stall")
    if found is None:
        return
    name, attempts, job = found
    first = attempts[0]
    after = int(first.arg("--stall-after-epoch", "0") or 0)
    epochs = epochs_wanted(attempts)
    got = sorted(first.epoch_numbers())
    report.check(after > 0 and got == list(range(1, after + 1)),
                 "the first attempt's log shows epochs %s and then nothing (stall after epoch %d%s)"
                 % (ranges(got), after, "; its stall line is there" if first.stalled_after
                    else "; NO stall line"))
    colo_attempts = job["attempts"]
    a1 = colo_attempts[0] if colo_attempts else None
    report.check(a1 is not None and (a1["reason"] or "").startswith("stalled:"),
                 "colo's reason for attempt 1 starts with \"stalled:\": %s"
                 % (short(a1["reason"], 160) if a1 else "(no attempt recorded)"))
    t_last = first.epoch_end(after)
    seconds = [s for e, _, s, _ in first.epochs]
    gaps = [b[3] - a[3] for a, b in zip(first.epochs, first.epochs[1:])]
    epoch_s = max(seconds + gaps) if seconds else None
    bound = 3 * epoch_s + args.stall_floor_s + 10 if epoch_s is not None else None
    detection = (a1["ended_ms"] / 1000.0 - t_last) if a1 and a1["ended_ms"] and t_last else None
    report.say("")
    report.say("stall detection      colo                      logs")
    report.say("  last epoch ended   -                         %s (epoch %d)" % (
        "%.3f" % t_last if t_last else "-", after))
    report.say("  attempt 1 ended    %-25s -" % ("%.3f" % (a1["ended_ms"] / 1000.0)
                                                if a1 and a1["ended_ms"] else "-"))
    report.say("  epoch time         -                         %s (the longest of epochs %s)"
               % (fmt(epoch_s), ranges(got)))
    report.say("  detection          %-25s bound %s = 3 x %s + STALL_FLOOR_S %.0f s + 10 s" % (
        fmt(detection), fmt(bound), fmt(epoch_s), args.stall_floor_s))
    report.check(detection is not None and bound is not None and 0 < detection <= bound,
                 "colo stopped the stalled attempt %s after its last epoch (at most %s)"
                 % (fmt(detection), fmt(bound)))
    ok, missing = coverage(attempts, epochs)
    report.check(job["state"] == "ok" and len(attempts) >= 2 and ok,
                 "the retry ended ok (colo: %s after %d attempt(s)); logs: epochs 1..%s over %d "
                 "attempt(s)%s" % (job["state"], len(colo_attempts), epochs, len(attempts),
                                   "" if ok else ", MISSING " + ranges(missing)))


def gang_rank_exit(args, report):
    found = one_job_case(args, report, "gang-rank-exit")
    if found is None:
        return
    name, attempts, job = found
    report.check(job["state"] == "ok", "%s ended %s in the store (wanted ok)"
                 % (name, job["state"]))
    first = attempts[0]
    exit_epoch = int(first.arg("--exit-at-epoch", "0") or 0)
    exit_rank = int(first.arg("--exit-rank", "1") or 1)
    report.check(
        (exit_rank, exit_epoch) in first.exits and exit_epoch not in first.epoch_numbers(),
        "the first attempt's log shows rank %d's abrupt exit in epoch %d (%s) and no end of "
        "that epoch (epochs ended: %s)" % (
            exit_rank, exit_epoch,
            ", ".join("rank %d in epoch %d" % x for x in first.exits) or "NO exit line",
            ranges(first.epoch_numbers())))
    epochs = epochs_wanted(attempts)
    whole = []
    for i in range(1, len(attempts)):
        ok, _ = coverage(attempts[:i + 1], epochs)
        a = attempts[i]
        trained_all = set(range(a.resumed_at or 1, (epochs or 0) + 1)) <= a.epoch_numbers()
        if ok and trained_all:
            whole.append(a.number)
    report.check(bool(whole), "a later attempt trained every epoch 1..%s (with what it resumed "
                 "from): attempt(s) %s" % (epochs, ",".join(map(str, whole)) or "none"))
    colo_attempts = job["attempts"]
    counted = [a for a in colo_attempts if NOT_COUNTED not in (a["reason"] or "")]
    report.say("colo recorded %d attempt(s); counted (reason without \"%s\"): %d; counted "
               "failures: %d; the logs: %d attempt(s)" % (
                   len(colo_attempts), NOT_COUNTED, len(counted),
                   len(counted_failures(job)) if job["attempts"] else 0, len(attempts)))


def main(argv=None):
    p = argparse.ArgumentParser(description="bench/faults.py's independent check: figures "
                                "from the jobs' logs beside colo's store.")
    p.add_argument("case", choices=["neighbour-assert", "stall", "gang-rank-exit"])
    p.add_argument("case_dir")
    p.add_argument("--stall-floor-s", type=float,
                   default=float(os.environ.get("STALL_FLOOR_S", "60")),
                   help="the floor of colo's stall bound (STALL_FLOOR_S)")
    p.add_argument("--makespan-ratio", type=float, default=1.5,
                   help="the fault case's makespan over the baseline's, at most")
    p.add_argument("--assert-pattern", default="Assertion",
                   help="a regular expression the faulty job's reason and log must match "
                   "(torch's CPU error: 'out of bounds')")
    args = p.parse_args(argv)
    if not os.path.isdir(args.case_dir):
        print("check-faults: no directory %s" % args.case_dir, file=sys.stderr)
        return 2
    report = Report()
    {"neighbour-assert": neighbour_assert, "stall": stall,
     "gang-rank-exit": gang_rank_exit}[args.case](args, report)
    report.say("")
    report.say("result: %s" % ("PASS" if report.failures == 0
                               else "FAIL (%d check(s) failed)" % report.failures))
    print("\n".join(report.lines))
    return 0 if report.failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
