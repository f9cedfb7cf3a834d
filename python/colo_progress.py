"""Report training progress to colo (standard library only).

colo gives every job the environment variable COLO_PROGRESS_FILE, naming a file
to which the job appends one JSON object per line, for example

    {"event": "epoch_end", "time": 1700000000.5, "epoch": 2, "samples": 50000,
     "metrics": {"loss": 0.31}}

Two lines are enough in a training script::

    import colo_progress as colo
    ...
    colo.epoch_end(epoch, samples=n, loss=l)

and any training metric, at any step, for `colo show --sort loss` and the
report's curves::

    colo.log(step=i, loss=l, acc=a)

Outside colo (COLO_PROGRESS_FILE unset) every call does nothing, so the same
script runs anywhere.

In a job that runs on several GPUs at once (a gang: torchrun, DeepSpeed,
Lightning DDP), every rank inherits COLO_PROGRESS_FILE; only rank 0 (RANK
unset or "0") reports, and its `samples` are taken as one rank's share of the
global batch: they are multiplied by WORLD_SIZE, so that colo's rates are the
whole gang's. Pass ``global_samples=True`` to Progress when rank 0 already
counts the global batch. Reporting never raises into the training script: an I/O
error is reported once on stderr and later calls are dropped.

Preemption (colo serve --preempt-after): colo stops a preemptible job with
SIGTERM, waits the service's grace, then kills it; it runs again later in the
same COLO_CHECKPOINT_DIR. A script that calls should_checkpoint() once (at
start) gets SIGTERM caught from then on, and should_checkpoint() returns True
after it came: save into checkpoint_dir() and exit::

    colo.should_checkpoint()          # catch SIGTERM from here on
    start = load(colo.checkpoint_dir()) or 0
    for epoch in range(start, epochs):
        train_one_epoch()
        if colo.should_checkpoint():
            save(colo.checkpoint_dir(), epoch + 1)
            sys.exit(0)
"""

import json
import math
import os
import signal
import sys
import threading
import time

__all__ = [
    "Progress",
    "ENV_VAR",
    "start",
    "epoch_start",
    "epoch_end",
    "step",
    "metric",
    "log",
    "end",
    "should_checkpoint",
    "checkpoint_dir",
]

ENV_VAR = "COLO_PROGRESS_FILE"


def _number(value):
    """The metric as JSON: a float, "nan", "inf" or "-inf" (JSON has no NaN, and
    a diverged loss is worth recording: colo marks the job diverged), or None
    when it is not a number."""
    try:
        if hasattr(value, "item"):  # numpy / torch scalars
            value = value.item()
        number = float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(number):
        return "nan"
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    return number


class Progress:
    """Appends progress events to one file.

    path: the file to append to; defaults to $COLO_PROGRESS_FILE. When neither
    is set, or RANK names a rank other than 0, every method is a no-op
    (``enabled`` is False).
    global_samples: whether `samples` already count every rank's (see the
    module comment); by default they are multiplied by WORLD_SIZE.

    Thread-safe: each event is written as one line under a lock. The file is
    opened lazily in append mode, line-buffered, and flushed after every event.
    """

    def __init__(self, path=None, global_samples=False):
        self.path = path if path is not None else os.environ.get(ENV_VAR) or None
        rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
        if path is None and rank not in (None, "", "0"):
            self.path = None  # another rank of a gang: rank 0 reports
        self._scale = 1
        if not global_samples and rank is not None and world and world.isdigit():
            self._scale = max(1, int(world))
        self._file = None
        self._failed = False
        self._lock = threading.Lock()

    @property
    def enabled(self):
        return self.path is not None and not self._failed

    def start(self, **metrics):
        """The job started (optional; colo also knows when it launched the job)."""
        self._emit("start", metrics)

    def epoch_start(self, epoch):
        self._emit("epoch_start", {}, epoch=epoch)

    def epoch_end(self, epoch, samples=None, **metrics):
        """Epoch `epoch` finished; `samples` is how many samples it processed."""
        self._emit("epoch_end", metrics, epoch=epoch, samples=self._global(samples))

    def step(self, step, samples=None, **metrics):
        """Step (iteration) `step` finished, having processed `samples` samples."""
        self._emit("step", metrics, step=step, samples=self._global(samples))

    def _global(self, samples):
        try:
            return samples * self._scale if samples is not None and self._scale > 1 else samples
        except TypeError:
            return samples  # dropped by _emit as a bad counter

    def metric(self, **metrics):
        """Metrics not tied to an epoch or step."""
        self._emit("metric", metrics)

    def log(self, step=None, epoch=None, **metrics):
        """Training metrics (loss, accuracy, val_loss, ...) at `step` and/or
        `epoch` when given: `colo show` gives each one's last and best value,
        and the report and dashboard draw its curve. With a step it is a step
        event (colo keeps up to 2,000 evenly spaced per job for the curves)."""
        if step is not None:
            self._emit("step", metrics, step=step, epoch=epoch)
        else:
            self._emit("metric", metrics, epoch=epoch)

    def end(self, **metrics):
        """The job finished its work (final metrics, e.g. accuracy)."""
        self._emit("end", metrics)

    def close(self):
        with self._lock:
            if self._file is not None:
                try:
                    self._file.close()
                except OSError:
                    pass
                self._file = None

    def _emit(self, event, metrics, **fields):
        if not self.enabled:
            return
        record = {"event": event, "time": time.time()}
        for key, value in fields.items():
            if value is not None:
                try:
                    record[key] = int(value)
                except (TypeError, ValueError):
                    pass  # a bad counter is dropped, never raised into training
        numbers = {}
        for key, value in metrics.items():
            number = _number(value)
            if number is not None:
                numbers[key] = number
        if numbers:
            record["metrics"] = numbers
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with self._lock:
            if self._failed:
                return
            try:
                if self._file is None:
                    self._file = open(self.path, "a", buffering=1, encoding="utf-8")
                self._file.write(line)
                self._file.flush()
            except (OSError, ValueError) as error:
                self._failed = True
                try:
                    sys.stderr.write(
                        "colo_progress: cannot write progress to %s (%s); "
                        "further progress reports are dropped\n" % (self.path, error)
                    )
                except Exception:  # stderr itself may be gone
                    pass


_default = None
_default_lock = threading.Lock()


def _instance():
    global _default
    with _default_lock:
        if _default is None:
            _default = Progress()
        return _default


def start(**metrics):
    _instance().start(**metrics)


def epoch_start(epoch):
    _instance().epoch_start(epoch)


def epoch_end(epoch, samples=None, **metrics):
    _instance().epoch_end(epoch, samples=samples, **metrics)


def step(step, samples=None, **metrics):
    _instance().step(step, samples=samples, **metrics)


def metric(**metrics):
    _instance().metric(**metrics)


def log(step=None, epoch=None, **metrics):
    _instance().log(step=step, epoch=epoch, **metrics)


def end(**metrics):
    _instance().end(**metrics)


_term = threading.Event()
_term_installed = False


def should_checkpoint():
    """True once colo asked the job to stop (SIGTERM): save and exit.

    The first call installs a SIGTERM handler (from the main thread; a call
    from another thread only reads the flag), so that the signal no longer
    kills the script outright. Outside colo it still works: a SIGTERM sent by
    anyone sets the flag."""
    global _term_installed
    if not _term_installed and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: _term.set())
        _term_installed = True
    return _term.is_set()


def checkpoint_dir():
    """The job's checkpoint directory (COLO_CHECKPOINT_DIR; kept across its
    attempts), or None outside colo."""
    return os.environ.get("COLO_CHECKPOINT_DIR") or None
