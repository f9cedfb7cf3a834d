"""A tiny CPU training for the profiling tests (tests/integration/colo_profile_test.cc):
each step one large matrix product (aten::mm dominates the CPU time) and a
small linear layer, reported through colo's Python client (--no-steps: its
epochs only). Runs --epochs epochs of --steps steps, or, with --until FILE,
until FILE exists."""
import argparse
import os
import time

import torch

import colo_progress as colo

ap = argparse.ArgumentParser()
ap.add_argument("--epochs", type=int, default=3)
ap.add_argument("--steps", type=int, default=10)
ap.add_argument("--until", default="")
ap.add_argument("--no-steps", action="store_true", help="report epochs only")
args = ap.parse_args()
torch.manual_seed(0)
a, b = torch.randn(384, 384), torch.randn(384, 384)
layer = torch.nn.Linear(16, 4)
x = torch.randn(8, 16)
step = 0
epoch = 0
while True:
    epoch += 1
    for _ in range(args.steps):
        c = torch.mm(a, b)
        loss = layer(x).sum() + c[0, 0] * 0
        loss.backward()
        step += 1
        if not args.no_steps:
            colo.step(step, samples=8, loss=float(loss))
        if args.until:
            time.sleep(0.05)
    colo.epoch_end(epoch, samples=8 * args.steps, loss=float(loss))
    if args.until and os.path.exists(args.until):
        break
    if not args.until and epoch >= args.epochs:
        break
print("trained %d epochs" % epoch)
