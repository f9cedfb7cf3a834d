"""Checks a torch profiling window of the Python client on a GPU, without colo
(issue 58, items 2 and 3): a small CNN on random images trains 3 epochs
through python/colo_progress.py with a `steps = 10` window after epoch 1, as
colo sets it up (COLO_PROFILE=torch, COLO_PROFILE_AFTER_EPOCH=1,
COLO_PROFILE_STEPS=10).

    python3 bench/check-profile-window.py --mode no-steps   # reports epochs only
    python3 bench/check-profile-window.py --mode steps --epoch-steps 6 --epochs 5
        # a step and its samples each; the 10-step window spans an epoch's end

Its own log (every step's end time, kept by this script) is the reference:
with --mode no-steps the window and writing its files must cost the job under
5 s (the client counts the model's forward passes as steps in a job that
never reported one; the time bound is the fallback), which on an H100 needs
an epoch longer than that (--epoch-steps 3000); with --mode steps the
window's rates inside and before it (rate_in, rate_before) must each agree with the rate this script measured over the
same span within 5% (an epoch's end inside the window or the 30 s before it
repeats its steps' samples: counted twice, the rates came out up to 3x). Prints one JSON
line and exits 1 when a check fails."""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

ap = argparse.ArgumentParser()
ap.add_argument("--mode", choices=["no-steps", "steps"], required=True)
ap.add_argument("--epoch-steps", type=int, default=300)
ap.add_argument("--epochs", type=int, default=3)
ap.add_argument("--batch", type=int, default=128)
ap.add_argument("--dir", default="")
args = ap.parse_args()

work = args.dir or tempfile.mkdtemp(prefix="colo-profile-window-")
os.makedirs(os.path.join(work, "profile"), exist_ok=True)
os.environ.update(COLO_PROGRESS_FILE=os.path.join(work, "progress.jsonl"),
                  COLO_PROFILE_DIR=os.path.join(work, "profile"), COLO_PROFILE="torch",
                  COLO_PROFILE_AFTER_EPOCH="1", COLO_PROFILE_STEPS="10")

import torch  # noqa: E402

import colo_progress as colo  # noqa: E402

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
    torch.nn.Conv2d(64, 128, 3, padding=1, stride=2), torch.nn.ReLU(),
    torch.nn.Conv2d(128, 256, 3, padding=1, stride=2), torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(256, 10)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(args.batch, 3, 64, 64, device=device)
y = torch.randint(0, 10, (args.batch,), device=device)

for _ in range(20):  # warm-up, unreported: the rates compared are steady ones
    torch.nn.functional.cross_entropy(model(x), y).backward()
if device == "cuda":
    torch.cuda.synchronize()
step_ends = []  # this script's own log: each step's end, after the GPU finished it
start = time.time()
step = 0
for epoch in range(1, args.epochs + 1):
    for _ in range(args.epoch_steps):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if device == "cuda":
            torch.cuda.synchronize()
        step += 1
        step_ends.append(time.time())
        if args.mode == "steps":
            colo.step(step, samples=args.batch)
    colo.epoch_end(epoch, samples=args.batch * args.epoch_steps, loss=float(loss))
total_s = time.time() - start

with open(os.path.join(work, "profile", "torch-summary-1.json")) as f:
    w = json.load(f)
opened_s = w["ended"] - w["started"]
epoch_s = (step_ends[2 * args.epoch_steps - 1] - step_ends[args.epoch_steps - 1])
out = {"mode": args.mode, "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
       "torch": torch.__version__, "job_s": round(total_s, 2), "epoch_s": round(epoch_s, 2),
       "closed_by": w["closed_by"], "window_s": round(opened_s, 3),
       "written_s": round(w["written_s"], 3), "steps": w["steps"], "samples": w["samples"],
       "rate_in": w.get("rate_in"), "rate_before": w.get("rate_before"),
       "trace_mb": round(os.path.getsize(os.path.join(work, "profile", w["trace"])) / 1e6, 1)}
ok = True
if args.mode == "no-steps":
    # What the window cost the job (open, then writing its files) under 5 s,
    # and it closed for a bound, not an epoch later (at an epoch's end only
    # when the epoch was shorter than the bound).
    out["forwards"] = w.get("forwards")
    out["cost_s"] = round(opened_s + w["written_s"], 3)
    out["check"] = ("the window and writing it cost the job under 5 s; closed after its steps' "
                    "forward passes or the time bound, or at a shorter epoch's end")
    ok = opened_s + w["written_s"] < 5 and (
        w["closed_by"] in ("forwards", "no step") or
        (w["closed_by"] == "epoch end" and epoch_s < 5.5))
else:
    # The rate this script saw over the window: the steps that ended in it.
    inside = [t for t in step_ends if w["started"] < t <= w["ended"]]
    own = len(inside) * args.batch / (w["ended"] - w["started"])
    # Before it: its steps of the last 30 s, the first only starting the span.
    before = [t for t in step_ends if w["started"] - 30 <= t <= w["started"]]
    own_before = (len(before) - 1) * args.batch / (before[-1] - before[0])
    out["own_rate_in"] = round(own, 1)
    out["own_rate_before"] = round(own_before, 1)
    out["rate_in_over_own"] = round(w["rate_in"] / own, 4) if w.get("rate_in") else None
    out["rate_before_over_own"] = (round(w["rate_before"] / own_before, 4)
                                   if w.get("rate_before") else None)
    out["check"] = "rate_in and rate_before within 5% of the script's own rates over their spans"
    ok = all(r is not None and abs(r - 1) <= 0.05
             for r in (out["rate_in_over_own"], out["rate_before_over_own"]))
out["ok"] = ok
print(json.dumps(out))
sys.exit(0 if ok else 1)
