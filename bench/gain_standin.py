#!/usr/bin/env python3
"""A stand-in job whose gain from running together is known exactly.

For tests of colo's steady speed-up on the simulated backend (no GPU, no
torch): jobs started from this script coordinate through a directory they
share (--shared). A job first "starts up" (sleeps --startup seconds, or the
start-up its COLO_JOB_NAME picks, see below), then trains --epochs epochs of
--epoch-samples samples. While k jobs are in their epochs, each progresses at

    min(k, --gain) / k

of its solo speed (one epoch per --epoch-s seconds alone). So while four jobs
with --gain 3.2 run together, their combined progress is exactly 3.2 times
that of one job alone, whatever their start-ups.

A job counts as "in its epochs" while the file <shared>/active/<pid> exists:
it creates it when its start-up ends and removes it when its last epoch ends.
Progress is integrated over wall-clock time in small ticks.

Start-ups: with --startup-step S, a job named "<name>#<i>" (colo sets
COLO_JOB_NAME; `repeat = N` names jobs #1..#N) starts up for
--startup + (i - 1) * S seconds, so jobs of one [[job]] block have staggered
start-ups and still one signature (the same command line). Without a "#<i>"
the job starts up for --startup seconds.

Each epoch end goes to stdout as bench/train.py prints it:

    epoch 3/20: 0.62s, 1613 img/s, 1000 samples, ended at 1732278012.345

and, inside colo, to $COLO_PROGRESS_FILE through python/colo_progress.py
(stamped a moment later, well within a millisecond), unless
--no-progress-client makes it a script that only prints (colo then reads its
epochs through the job file's epoch_regex).

For sweeps (grids): --lr, --weight-decay and --seed are accepted and change
nothing; with --memory-mib the job tells colo's simulated GPU, as it starts,
that it holds --memory-mib + --memory-mib-per-sample x --batch-size MiB there
(and --sm-activity percent of its SMs), through the progress metrics
simulated_gpu_memory_mib and simulated_sm_active_pct.
"""

import argparse
import os
import re
import sys
import time

try:
    import colo_progress as colo  # under colo, or installed (scripts/install-python-client.sh)
except ImportError:  # a checkout: python/ beside this directory
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import colo_progress as colo

TICK_S = 0.005


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Stand-in job with a known collocation gain (for tests; trains nothing).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--shared", required=True, help="directory the jobs share")
    parser.add_argument("--gain", type=float, default=3.2,
                        help="combined progress of k jobs together, in solo jobs, at most")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--epoch-s", type=float, default=0.25, help="seconds per epoch alone")
    parser.add_argument("--epoch-samples", type=int, default=1000)
    parser.add_argument("--startup", type=float, default=0.5, help="seconds of start-up")
    parser.add_argument("--startup-step", type=float, default=0.0,
                        help="extra start-up per job index (#i in COLO_JOB_NAME)")
    parser.add_argument("--no-progress-client", action="store_true",
                        help="report only through the printed epoch lines")
    parser.add_argument("--lr", type=float, default=0.1, help="ignored (grids)")
    parser.add_argument("--weight-decay", type=float, default=0.0, help="ignored (grids)")
    parser.add_argument("--seed", type=int, default=0, help="ignored (grids)")
    parser.add_argument("--batch-size", type=int, default=128, help="for --memory-mib-per-sample")
    parser.add_argument("--memory-mib", type=float, default=None,
                        help="simulated GPU memory: the fixed part (MiB); absent: not reported")
    parser.add_argument("--memory-mib-per-sample", type=float, default=0.0,
                        help="simulated GPU memory per sample of the batch (MiB)")
    parser.add_argument("--sm-activity", type=float, default=None,
                        help="simulated SM activity alone (percent); absent: not reported")
    return parser.parse_args(argv)


def report_simulated_load(args):
    """Tells colo's simulated GPU what this job holds there (nothing when not asked)."""
    load = {}
    if args.memory_mib is not None:
        load["simulated_gpu_memory_mib"] = (args.memory_mib
                                            + args.memory_mib_per_sample * args.batch_size)
    if args.sm_activity is not None:
        load["simulated_sm_active_pct"] = args.sm_activity
    if load:
        colo.metric(**load)


def startup_s(args):
    match = re.search(r"#(\d+)$", os.environ.get("COLO_JOB_NAME", ""))
    index = int(match.group(1)) if match else 1
    return args.startup + (index - 1) * args.startup_step


def main(argv=None):
    args = parse_args(argv)
    active_dir = os.path.join(args.shared, "active")
    os.makedirs(active_dir, exist_ok=True)
    me = os.path.join(active_dir, str(os.getpid()))
    if args.no_progress_client:
        os.environ.pop(colo.ENV_VAR, None)

    report_simulated_load(args)
    colo.start()
    time.sleep(startup_s(args))
    open(me, "w").close()
    try:
        progress = 0.0  # epochs done
        epoch = 0
        last = time.monotonic()
        epoch_began = time.time()
        while epoch < args.epochs:
            time.sleep(TICK_S)
            now = time.monotonic()
            k = max(1, len(os.listdir(active_dir)))
            progress += (now - last) / args.epoch_s * min(k, args.gain) / k
            last = now
            while progress >= epoch + 1 and epoch < args.epochs:
                epoch += 1
                ended = time.time()
                seconds = ended - epoch_began
                epoch_began = ended
                print("epoch %d/%d: %.2fs, %.0f img/s, %d samples, ended at %.3f"
                      % (epoch, args.epochs, seconds, args.epoch_samples / seconds,
                         args.epoch_samples, ended), flush=True)
                colo.epoch_end(epoch, samples=args.epoch_samples)
    finally:
        os.remove(me)
    colo.end()
    return 0


if __name__ == "__main__":
    sys.exit(main())
