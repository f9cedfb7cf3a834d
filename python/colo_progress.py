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

Profiling (docs/profiling.md): a job whose file asks for a window
(`profile = { tool = "torch", after_epoch = 1, steps = 20 }`), or that
`colo profile JOB` asks while it runs, gets torch.profiler started and stopped
by this module around its own epoch_end() and step() calls; it writes a
Chrome trace and a summary into COLO_PROFILE_DIR. torch is imported only then.
"""

import atexit
import collections
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
        self._profiler = _Profiler(self) if self.path is not None else None

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
        if self._profiler is not None:
            self._profiler.tick("epoch_end", epoch, samples)

    def step(self, step, samples=None, **metrics):
        """Step (iteration) `step` finished, having processed `samples` samples."""
        self._emit("step", metrics, step=step, samples=self._global(samples))
        if self._profiler is not None:
            self._profiler.tick("step", None, samples)

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


# A window with neither steps nor a duration: at most this many steps (a
# trace of a whole epoch can take the job a minute to write).
_DEFAULT_STEPS = 20

# A window of steps that sees no step (a job that reports none) closes after
# its steps at the job's median step time, else after this many seconds.
_NO_STEP_BOUND_S = 5.0


def _env_number(name, kind):
    try:
        return kind(os.environ[name])
    except (KeyError, ValueError):
        return None


class _Profiler:
    """Profiling windows of torch.profiler around the job's own reports.

    A window opens when the job file's (COLO_PROFILE=torch, with
    COLO_PROFILE_AFTER_EPOCH or COLO_PROFILE_AFTER_S) is due, or when
    `colo profile` left COLO_PROFILE_DIR/request.json (looked for at most once
    a second); it closes after its steps (COLO_PROFILE_STEPS) or its duration
    (COLO_PROFILE_DURATION_S), else after 20 steps or at the next epoch's end,
    whichever comes first; a window of steps that sees no step report (a job
    that reports none) closes after its steps at the median of the job's
    last step times, else, in a job that never reported a step, after as
    many forward passes of its model as it has steps (the first module whose
    forward runs in the window is taken as the model), else after 5 s
    (checked at the job's reports and, with torch's global module hook, at
    each module's forward on the training thread, which is the thread that
    must stop the profiler), or at the end of a whole epoch without one; one still open when the job's interpreter
    exits closes then (a profiler left running at exit can crash the
    process). A report's samples count once: a job whose steps carry samples
    is counted by its steps (its epoch ends repeat them), else by its epoch
    ends, as colo's epoch rate counts them. Each window
    writes torch-trace-N.json (a Chrome trace) and torch-summary-N.json (by
    torch's key_averages(), its top kernels by GPU time when the GPU ran any,
    else its top operators by self CPU time; the GPU's busy
    share and memcpy time from the trace; the job's rate inside the window,
    over the 30 s before it, and from its end to the job's next report after
    it), and reports a "profile" event. Nothing here ever
    raises into training: a failure is said once on stderr and ends profiling."""

    def __init__(self, progress):
        self._progress = progress
        self.dir = os.environ.get("COLO_PROFILE_DIR") or None
        self._planned = os.environ.get("COLO_PROFILE") == "torch"
        self._after_epoch = _env_number("COLO_PROFILE_AFTER_EPOCH", int)
        self._after_s = _env_number("COLO_PROFILE_AFTER_S", float)
        self._steps = _env_number("COLO_PROFILE_STEPS", int)
        self._duration_s = _env_number("COLO_PROFILE_DURATION_S", float)
        self._born = time.time()
        self._next_look = 0.0
        self._window = None
        self._done = 0
        # (time, samples) of the reports of the last 30 s, and their samples
        # summed: the rate before a window, kept in O(1) a report (a job may
        # report a thousand steps a second).
        self._recent = collections.deque()
        self._recent_samples = 0
        self._after = None  # the last window's summary, until the job's rate after it is known
        self._step_samples = False  # its steps carry samples: its epoch ends' repeat them
        self._last_step = None  # the time of its last step report
        self._step_times = collections.deque(maxlen=64)  # seconds between its last steps
        self._hooks = []  # torch's hooks an open window of steps without a step checks its bound at
        self._exit_hook = False
        self._broken = self.dir is None

    def tick(self, kind, epoch, samples):
        if self._broken:
            return
        try:
            now = time.time()
            if kind == "step":
                if isinstance(samples, (int, float)):
                    self._step_samples = True
                if self._last_step is not None and now > self._last_step:
                    self._step_times.append(now - self._last_step)
                self._last_step = now
            elif kind == "epoch_end" and self._step_samples:
                samples = None  # the sum of its steps', counted already
            if self._window is not None:
                self._advance(kind, samples, now)
                return
            if isinstance(samples, (int, float)):
                if self._after is not None:
                    self._rate_after(kind, samples, now)
                self._remember(now, samples)
            if self._planned and self._due(kind, epoch, now):
                self._planned = False
                self._open("job file", self._steps, self._duration_s, kind, now)
            elif now >= self._next_look:
                self._next_look = now + 1.0
                self._look_for_request(kind, now)
        except Exception as error:  # noqa: BLE001 - never into training
            self._stop_broken(error)

    def _stop_broken(self, error):
        """Profiling failed: say so once and stop it for good, never into training."""
        self._broken = True
        try:
            sys.stderr.write("colo_progress: profiling stopped: %r\n" % (error,))
        except Exception:  # noqa: BLE001 - a closed stderr must not reach training either
            pass
        self._abandon()

    def _abandon(self):
        """Stops an open window's profiler without writing it (profiling broke)."""
        w, self._window = self._window, None
        self._unhook()
        if w is not None:
            try:
                w["profile"].stop()
            except Exception:  # noqa: BLE001 - already broken
                pass

    def _remember(self, now, samples):
        self._recent.append((now, samples))
        self._recent_samples += samples
        while self._recent[0][0] < now - 30:
            self._recent_samples -= self._recent.popleft()[1]

    def _due(self, kind, epoch, now):
        if self._after_epoch is not None:
            return kind == "epoch_end" and epoch is not None and epoch >= self._after_epoch
        if self._after_s is not None:
            return now - self._born >= self._after_s
        return True

    def _look_for_request(self, kind, now):
        path = os.path.join(self.dir, "request.json")
        if not os.path.exists(path):
            return
        taken = os.path.join(self.dir, "request-%d.taken.json" % (self._done + 1))
        os.replace(path, taken)  # one window per request
        with open(taken, encoding="utf-8") as f:
            request = json.load(f)
        if request.get("tool", "torch") != "torch":
            return
        self._open("colo profile", request.get("steps"), request.get("duration_s"), kind, now)

    def _open(self, trigger, steps, duration_s, kind, now):
        """`kind`: the report it opens at ("step", "epoch_end", ...)."""
        import torch  # only now: a job never profiled never imports it

        activities = [torch.profiler.ProfilerActivity.CPU]
        cuda = torch.cuda.is_available()
        if cuda:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        profile = torch.profiler.profile(activities=activities)
        profile.start()
        span = (now - self._recent[0][0]) if self._recent else 0
        # The first report only starts the span: its samples came before it.
        before = (self._recent_samples - self._recent[0][1]) / span if span > 0 else None
        if not self._exit_hook:
            self._exit_hook = True
            atexit.register(self._at_exit)
        bound = None
        if steps is not None and duration_s is None:
            times = sorted(self._step_times)
            bound = times[len(times) // 2] * steps if times else _NO_STEP_BOUND_S
        self._window = {
            "profile": profile, "cuda": cuda, "trigger": trigger, "started": now,
            "steps_wanted": steps, "duration_s": duration_s, "steps": 0, "samples": 0,
            "at_epoch_end": kind == "epoch_end", "no_step_bound_s": bound,
            "rate_before": before,
            # A job that never reported a step: its model's forward passes stand in for steps.
            "count_forwards": bound is not None and not self._step_times, "model": None,
            "forwards": 0,
        }
        if bound is not None:
            self._hook(torch)

    def _hook(self, torch):
        """Checks the bound of a window of steps without a step at each
        module's forward: the training thread's, between the job's reports."""
        register = getattr(getattr(getattr(torch, "nn", None), "modules", None), "module", None)
        register = getattr(register, "register_module_forward_pre_hook", None)
        if register is not None:
            self._hooks.append(register(lambda module, inputs: self._check_bound(module)))

    def _unhook(self):
        hooks, self._hooks = self._hooks, []
        for handle in hooks:
            try:
                handle.remove()
            except Exception:  # noqa: BLE001 - the window ends anyway
                pass

    def _check_bound(self, module):
        if self._broken or self._window is None:
            return None
        try:
            now = time.time()
            w = self._window
            if w["count_forwards"] and w["steps"] == 0:
                if w["model"] is None:
                    w["model"] = id(module)
                if id(module) == w["model"]:
                    if w["forwards"] >= w["steps_wanted"]:  # its steps' passes, backward too, are done
                        self._close(now, "forwards")
                        return None
                    w["forwards"] += 1
            if self._bound_passed(w, now):
                self._close(now, "no step")
        except Exception as error:  # noqa: BLE001 - never into training
            self._stop_broken(error)
        return None

    @staticmethod
    def _bound_passed(w, now):
        return (w["no_step_bound_s"] is not None and w["steps"] == 0
                and now - w["started"] >= w["no_step_bound_s"])

    def _advance(self, kind, samples, now):
        w = self._window
        if isinstance(samples, (int, float)):
            w["samples"] += samples
        if kind == "step":
            w["steps"] += 1
        closed_by = None
        if w["steps_wanted"] is not None:
            if w["steps"] >= w["steps_wanted"]:
                closed_by = "steps"
            elif self._bound_passed(w, now):
                closed_by = "no step"
            elif kind == "epoch_end" and w["steps"] == 0 and w["at_epoch_end"]:
                closed_by = "epoch end"  # a whole epoch without a step: it reports none
        elif w["duration_s"] is not None:
            if now - w["started"] >= w["duration_s"]:
                closed_by = "duration"
        elif kind == "epoch_end":  # an epoch at most, and _DEFAULT_STEPS of a job that reports steps
            closed_by = "epoch end"
        elif w["steps"] >= _DEFAULT_STEPS:
            closed_by = "steps"
        if closed_by is not None:
            self._close(now, closed_by)

    def _at_exit(self):
        if self._window is None or self._broken:
            return
        try:
            self._close(time.time(), "job end")
        except Exception as error:  # noqa: BLE001 - the job is ending anyway
            try:
                sys.stderr.write("colo_progress: the profiling window open at exit could not "
                                 "be written: %r\n" % (error,))
            except Exception:
                pass

    def _close(self, now, closed_by):
        w, self._window = self._window, None
        self._unhook()
        self._done += 1
        n = self._done
        profile = w["profile"]
        if w["cuda"]:
            import torch

            torch.cuda.synchronize()
        profile.stop()
        trace_name = "torch-trace-%d.json" % n
        trace = os.path.join(self.dir, trace_name)
        profile.export_chrome_trace(trace)
        # GPU kernels by their GPU time when the GPU ran any, else CPU
        # operators by their own (self) CPU time.
        kernels, ops = [], []
        for e in profile.key_averages():
            if getattr(e, "is_user_annotation", False):
                continue  # a span on the GPU's timeline (Optimizer.step#SGD.step), not a kernel
            device = getattr(e, "self_device_time_total", None)
            if device is None:
                device = getattr(e, "self_cuda_time_total", 0)
            entry = {"name": e.key, "calls": e.count, "self_cpu_us": e.self_cpu_time_total,
                     "cpu_total_us": e.cpu_time_total, "self_device_us": device}
            on_cpu = "CPU" in str(getattr(e, "device_type", "CPU"))
            (ops if on_cpu else kernels).append(entry)
        if any(k["self_device_us"] > 0 for k in kernels):
            top, by = kernels, "self_device_us"
        else:
            top, by = ops, "self_cpu_us"
        top.sort(key=lambda t: t[by], reverse=True)
        elapsed = now - w["started"]
        summary = {
            "tool": "torch", "window": n, "trigger": w["trigger"], "started": w["started"],
            "ended": now, "steps": w["steps"], "samples": w["samples"],
            "rate_in": w["samples"] / elapsed if elapsed > 0 and w["samples"] else None,
            "rate_before": w["rate_before"], "trace": trace_name, "sorted_by": by,
            "closed_by": closed_by, "no_step_bound_s": w.get("no_step_bound_s"),
            "forwards": w.get("forwards", 0),
            "top": top[:20],
        }
        figures, spans = _trace_gpu_figures(trace, elapsed)
        summary.update(figures)
        if spans:
            # The device spans on the wall clock, for one timeline across the
            # jobs that share a GPU (`colo profile --gpu`).
            summary["kernels"] = _write_spans(self.dir, n, spans)
        # Writing the trace takes the job's time too (seconds for a large
        # one): said apart, and the rate after the window counts from here.
        summary["written_s"] = time.time() - now
        self._write(summary)
        self._after = summary
        self._recent.clear()
        self._recent_samples = 0
        self._remember(time.time(), 0)
        figures = {"window": n, "steps": w["steps"]}
        for key in ("rate_in", "rate_before", "gpu_busy_pct"):
            if summary.get(key) is not None:
                figures[key] = summary[key]
        self._progress._emit("profile", figures)


    def _write(self, summary):
        path = os.path.join(self.dir, "torch-summary-%d.json" % summary["window"])
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(summary, f)
        os.replace(path + ".tmp", path)

    def _rate_after(self, kind, samples, now):
        """The job's rate from the window's files written to its first report
        after it: the rate outside the window, beside the one inside. A job
        counted by its epoch ends whose window closed inside an epoch (no
        step came) has that epoch's samples partly before the window: its
        rate after counts from that epoch's end to the next one's."""
        if (kind == "epoch_end" and not self._step_samples
                and self._after["closed_by"] not in ("epoch end", "job end")
                and "after_from" not in self._after):
            self._after["after_from"] = now
            return
        summary, self._after = self._after, None
        since = summary.pop("after_from", summary["ended"] + summary["written_s"])
        if now > since:
            summary["rate_after"] = samples / (now - since)
            self._write(summary)
            self._progress._emit("profile", {"window": summary["window"],
                                             "rate_after": summary["rate_after"]})


def _trace_gpu_figures(trace, elapsed_s):
    """The GPU's busy share of the window (the union of its kernels'
    intervals) and its memcpy time, from the Chrome trace, and its device
    spans (start and end in microseconds since the Unix epoch, name); empty
    without GPU events (a CPU-only job).

    A trace's "ts" are microseconds on the host's clock, counted from its
    "baseTimeNanoseconds" when it has one (newer PyTorch), else since the
    epoch: the same clock in every process of the machine."""
    with open(trace, encoding="utf-8") as f:
        data = json.load(f)
    events = data if isinstance(data, list) else data.get("traceEvents", [])
    base_us = 0.0
    if isinstance(data, dict) and data.get("baseTimeNanoseconds"):
        base_us = float(data["baseTimeNanoseconds"]) / 1000.0
    spans, named, memcpy_us = [], [], 0.0
    for e in events:
        cat = str(e.get("cat", "")).lower()
        if e.get("ph") != "X" or "dur" not in e:
            continue
        if cat == "kernel" or cat.startswith("gpu_"):
            start = float(e["ts"])
            spans.append((start, start + float(e["dur"])))
            named.append((base_us + start, base_us + start + float(e["dur"]), str(e.get("name", ""))))
            if cat == "gpu_memcpy":
                memcpy_us += float(e["dur"])
    if not spans:
        return {}, []
    spans.sort()
    busy, end = 0.0, None
    for start, stop in spans:
        if end is None or start > end:
            busy += stop - start
            end = stop
        elif stop > end:
            busy += stop - end
            end = stop
    return ({"gpu_busy_pct": 100.0 * busy / (elapsed_s * 1e6) if elapsed_s > 0 else None,
             "memcpy_us": memcpy_us}, named)


def _write_spans(directory, window, spans):
    """Writes torch-kernels-N.tsv: a line per device span, "start_us end_us
    name" (tab-separated, microseconds since the Unix epoch, names cut at 200
    characters); returns its file name."""
    name = "torch-kernels-%d.tsv" % window
    path = os.path.join(directory, name)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        for start, stop, kernel in sorted(spans):
            f.write("%.3f\t%.3f\t%s\n" % (start, stop, kernel.replace("\t", " ").replace("\n", " ")[:200]))
    os.replace(path + ".tmp", path)
    return name

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
