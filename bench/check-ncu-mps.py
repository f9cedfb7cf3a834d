"""Checks bench/profile-ncu-mps.sh's two passes from the jobs' own logs and the
files on disk, not from colo's code or store:
  - each job profiled in the ncu pass (its `profile = { tool = "ncu" ...}` line
    in the pass's jobs.toml) trained all its epochs (its log's last epoch line
    is epoch N/N); the report ncu said it wrote ("==PROF== Report: PATH" in the
    job's log) is there and not empty; and the process ncu said it profiled
    ("==PROF== Connected to process P") is the job's own (train.py's
    "pid=P"), so two profiled jobs on one host never swapped reports;
  - each other job of the ncu pass trained all its epochs, at a steady rate
    (median of epochs 2..n, samples over the time since the previous epoch
    ended) within 10% of the same job's in the plain pass.
Prints one line per finding and exits 1 when one fails.

    python3 bench/check-ncu-mps.py RESULTS_DIR"""
import glob
import os
import re
import statistics
import sys

LINE = re.compile(r"epoch (?P<epoch>\d+)/(?P<of>\d+)\b.*?\b(?P<samples>\d+) samples\b.*?"
                  r"ended at (?P<end>[0-9.]+)")


def epochs(path):
    """[(epoch, of, samples, end)] of the epoch lines train.py printed."""
    found = []
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.search(line)
            if m:
                found.append((int(m["epoch"]), int(m["of"]), int(m["samples"]), float(m["end"])))
    return found


def log_of(pass_dir, name):
    """The log colo kept for job NAME (logs/NAME*.log), or None."""
    logs = sorted(glob.glob(os.path.join(pass_dir, "logs", "**", f"*-{name}.log"), recursive=True))
    return logs[-1] if logs else None


def steady_rate(ep):
    rates = [ep[i][2] / (ep[i][3] - ep[i - 1][3]) for i in range(1, len(ep)) if ep[i][3] > ep[i - 1][3]]
    return statistics.median(rates) if rates else None


def profiled_jobs(pass_dir):
    """The names of the jobs.toml's jobs that carry an ncu profile line."""
    names, name = [], None
    with open(os.path.join(pass_dir, "jobs.toml")) as f:
        for line in f:
            m = re.match(r'name = "([^"]+)"', line)
            if m:
                name = m[1]
            elif line.startswith("profile =") and '"ncu"' in line and name:
                names.append(name)
    return names


def main():
    out = sys.argv[1]
    failed = False

    def say(ok, text):
        nonlocal failed
        failed |= not ok
        print(("ok   " if ok else "FAIL ") + text)

    for pass_name in ("plain", "ncu"):
        for name in "abc":
            log = log_of(os.path.join(out, pass_name), name)
            ep = epochs(log) if log else []
            done = bool(ep) and ep[-1][0] == ep[-1][1]
            say(done, f"{pass_name}/{name}: {len(ep)} epoch lines" + ("" if log else " (no log found)"))
    profiled = profiled_jobs(os.path.join(out, "ncu"))
    say(bool(profiled), "profiled in the ncu pass: " + (", ".join(profiled) or "none"))
    for name in profiled:
        log = log_of(os.path.join(out, "ncu"), name)
        text = open(log, errors="replace").read() if log else ""
        own = re.findall(r"colo attempt: .*\bpid=(\d+)", text)
        attached = re.findall(r"==PROF== Connected to process (\d+)", text)
        say(bool(own) and attached == own[-1:],
            f"{name}: ncu attached to process {', '.join(attached) or 'none'}, the job's own is "
            f"{own[-1] if own else 'unknown'}")
        # Where the log's path is not this machine's (results kept elsewhere):
        # the file of that name under the pass's directory.
        reports = [r if os.path.isfile(r) else next(iter(glob.glob(os.path.join(
            out, "ncu", "**", os.path.basename(r)), recursive=True)), r)
            for r in re.findall(r"==PROF== Report: (\S+)", text)]
        sizes = [os.path.getsize(r) if os.path.isfile(r) else 0 for r in reports]
        say(bool(reports) and all(sizes),
            f"{name}: report " + (", ".join(f"{r} ({n} bytes)" for r, n in zip(reports, sizes)) or "none"))
    for name in (n for n in "abc" if n not in profiled):
        logs = [log_of(os.path.join(out, p), name) for p in ("plain", "ncu")]
        if None in logs:
            say(False, f"{name}: a log is missing")
            continue
        plain, ncu = (steady_rate(epochs(log)) for log in logs)
        if not plain or not ncu:
            say(False, f"{name}: fewer than two epochs in a pass")
            continue
        say(ncu >= 0.9 * plain, f"{name}: {ncu:.0f} img/s beside the ncu job, {plain:.0f} beside plain ones "
            f"({ncu / plain:.2f}x)")
    sys.exit(1 if failed else 0)


main()
