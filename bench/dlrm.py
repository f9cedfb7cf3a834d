#!/usr/bin/env python3
"""A DLRM-style recommender on synthetic Criteo-shaped data (colo's memory-heavy workload).

The model follows Facebook Research's DLRM as the collocation study used it,
scaled to a chosen share of GPU memory:

* 26 categorical features, each looked up in its own embedding table (dim 64).
  The tables' row counts keep the proportions of the Criteo Terabyte
  cardinalities and are scaled so that their parameters take --memory-gib GiB
  (fp32). The tables get sparse gradients and plain SGD, so a step touches
  only the rows its batch looked up: the job holds about --memory-gib plus
  the CUDA context and activations, and does little arithmetic per byte it
  holds. That makes it memory-heavy and compute-light, like the paper's
  recommender.
* 13 dense features through a bottom MLP 13 -> 512 -> 256 -> 64.
* Dot-product interaction of the 27 vectors (upper triangle, 351 values) plus
  the bottom output, through a top MLP 415 -> 512 -> 256 -> 1; BCE loss on a
  click label.
* Data: synthetic, Criteo-shaped, generated once on the device (a small pool
  of batches reused cyclically), so no data loader limits the GPU. The MLPs
  and the interaction run under bf16 autocast; the tables stay fp32.

Progress goes to colo through python/colo_progress.py exactly like
bench/train.py's (one epoch_end per epoch, then max_memory_reserved_mib), and
one line per epoch goes to stdout:

    epoch 2/5: 12.3s, 41230 samples/s, loss 0.69

`python3 bench/dlrm.py --help` works without PyTorch; training needs torch.
"""

import argparse
import math
import os
import sys
import time

try:
    import colo_progress as colo  # under colo, or installed (scripts/install-python-client.sh)
except ImportError:  # a checkout: python/ beside this directory
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import colo_progress as colo
from workload_end import report_end  # noqa: E402

# Criteo Terabyte cardinalities of the 26 categorical features (as in DLRM's
# data loader), used only for their proportions.
CRITEO_CARDINALITIES = [
    39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951, 2953546, 403346, 10,
    2208, 11938, 155, 4, 976, 14, 39979771, 25641295, 39664984, 585935, 12972, 108, 36,
]
DENSE_FEATURES = 13
EMBEDDING_DIM = 64
BOTTOM_MLP = [DENSE_FEATURES, 512, 256, EMBEDDING_DIM]
TOP_MLP_HIDDEN = [512, 256]
BYTES_PER_PARAM = 4  # fp32 tables
# Largest synthetic pool kept on the device.
MAX_POOL_BYTES = 256 * 2**20


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Train a DLRM-style recommender on synthetic Criteo-shaped data "
        "(colo's memory-heavy, compute-light workload).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--batch-size", type=int, default=2048, help="samples per step")
    parser.add_argument("--epoch-samples", type=int, default=2048 * 500,
                        help="samples per epoch; rounded up to whole batches")
    parser.add_argument("--epochs", type=int, default=5, help="epochs to train")
    parser.add_argument("--memory-gib", type=float, default=16.0,
                        help="GiB of embedding-table parameters (their dense gradients take as "
                        "much again)")
    parser.add_argument("--lr", type=float, default=0.01, help="SGD learning rate")
    parser.add_argument("--device", default="cuda", help="torch device, e.g. cuda, cuda:1, cpu")
    parser.add_argument("--seed", type=int, default=0, help="seed of weights and data")
    parser.add_argument("--pool-batches", type=int, default=16,
                        help="distinct synthetic batches kept on the device")
    # Accepted so that the same command line as bench/train.py works.
    parser.add_argument("--model", default="dlrm", choices=["dlrm"], help=argparse.SUPPRESS)
    parser.add_argument("--dataset", default="criteo", choices=["criteo"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("batch_size", "epoch_samples", "epochs", "pool_batches"):
        if getattr(args, name) < 1:
            parser.error("--%s must be at least 1" % name.replace("_", "-"))
    if args.memory_gib <= 0:
        parser.error("--memory-gib must be positive")
    if args.lr <= 0:
        parser.error("--lr must be positive")
    return args


def table_rows(memory_gib):
    """Rows per table: Criteo's proportions scaled so the tables hold memory_gib GiB."""
    target_rows = memory_gib * 2**30 / (BYTES_PER_PARAM * EMBEDDING_DIM)
    scale = target_rows / sum(CRITEO_CARDINALITIES)
    return [max(2, int(c * scale)) for c in CRITEO_CARDINALITIES]


def build_model(torch, rows, device):
    nn = torch.nn

    def mlp(sizes, last_activation):
        layers = []
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
            if i < len(sizes) - 2 or last_activation:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    num_vectors = len(rows) + 1
    interactions = num_vectors * (num_vectors - 1) // 2
    top_sizes = [interactions + EMBEDDING_DIM] + TOP_MLP_HIDDEN + [1]

    class Dlrm(nn.Module):
        def __init__(self):
            super().__init__()
            # Created on the device directly: initializing tens of GiB on the
            # CPU first would take minutes and as much host memory.
            self.tables = nn.ModuleList(
                nn.Embedding(n, EMBEDDING_DIM, sparse=True, device=device) for n in rows
            )
            self.bottom = mlp(BOTTOM_MLP, last_activation=True).to(device)
            self.top = mlp(top_sizes, last_activation=False).to(device)
            upper = torch.triu_indices(num_vectors, num_vectors, offset=1, device=device)
            self.register_buffer("upper_rows", upper[0], persistent=False)
            self.register_buffer("upper_cols", upper[1], persistent=False)

        def forward(self, dense, sparse):
            x = self.bottom(dense)                                     # (B, 64)
            # Tables stay fp32; their rows join the bf16 interaction.
            embedded = [t(sparse[:, i]).to(x.dtype) for i, t in enumerate(self.tables)]
            vectors = torch.stack([x] + embedded, dim=1)               # (B, 27, 64)
            dots = torch.bmm(vectors, vectors.transpose(1, 2))         # (B, 27, 27)
            flat = dots[:, self.upper_rows, self.upper_cols]           # (B, 351)
            return self.top(torch.cat([x, flat], dim=1)).squeeze(1)    # (B,)

    return Dlrm()


def make_pool(torch, args, rows, device):
    """Dense features, categorical indices and click labels, generated once on the device."""
    batch_bytes = args.batch_size * (DENSE_FEATURES * 4 + len(rows) * 8 + 4)
    count = max(1, min(args.pool_batches, MAX_POOL_BYTES // batch_bytes))
    generator = torch.Generator(device=device)
    generator.manual_seed(args.seed)
    limits = torch.tensor(rows, device=device, dtype=torch.float64)
    pool = []
    for _ in range(count):
        # Criteo's dense features are log-transformed counts: non-negative, skewed.
        dense = torch.log1p(torch.rand(args.batch_size, DENSE_FEATURES, device=device,
                                       generator=generator) * 100.0)
        uniform = torch.rand(args.batch_size, len(rows), device=device, generator=generator,
                             dtype=torch.float64)
        sparse = (uniform * limits).long()  # in [0, rows) per table
        labels = (torch.rand(args.batch_size, device=device, generator=generator) < 0.25).float()
        pool.append((dense, sparse, labels))
    return pool


def main(argv=None):
    args = parse_args(argv)

    import torch  # imported after argparse so that --help works without torch

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("dlrm.py: --device %s asked for, but CUDA is not available" % args.device,
              file=sys.stderr)
        return 2
    torch.manual_seed(args.seed)

    rows = table_rows(args.memory_gib)
    model = build_model(torch, rows, device)
    model.train()
    # Sparse gradients: a step touches only the rows its batch looked up, as
    # real recommenders train (plain SGD accepts sparse gradients).
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    pool = make_pool(torch, args, rows, device)
    steps = math.ceil(args.epoch_samples / args.batch_size)
    samples = steps * args.batch_size

    def synchronize():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    table_params = sum(rows) * EMBEDDING_DIM
    print(
        "dlrm.py: 26 tables, %d rows, %.2f GiB of parameters (dense gradients as much again), "
        "batch %d, %d steps (%d samples) per epoch, %d epochs, device %s"
        % (sum(rows), table_params * BYTES_PER_PARAM / 2**30, args.batch_size, steps, samples,
           args.epochs, device),
        flush=True,
    )
    colo.start()
    synchronize()
    run_start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        colo.epoch_start(epoch)
        epoch_start = time.perf_counter()
        loss_sum = torch.zeros((), device=device)
        for i in range(steps):
            dense, sparse, labels = pool[i % len(pool)]
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                logits = model(dense, sparse)
            loss = loss_fn(logits.float(), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss_sum += loss.detach()
            if epoch == 1 and i == 0:  # its memory is nearly all allocated now (as train.py)
                synchronize()
                colo.step(1)
        mean_loss = (loss_sum / steps).item()  # also waits for the epoch's work
        synchronize()
        seconds = time.perf_counter() - epoch_start
        rate = samples / seconds
        print("epoch %d/%d: %.1fs, %.0f samples/s, loss %.2f, %d samples, ended at %.3f"
              % (epoch, args.epochs, seconds, rate, mean_loss, samples, time.time()),
              flush=True)
        colo.epoch_end(epoch, samples=samples, loss=mean_loss, epoch_time_s=seconds,
                       samples_per_s=rate)

    total = time.perf_counter() - run_start
    final = {"total_time_s": total, "samples_per_s": samples * args.epochs / total}
    report_end(colo, torch, device, "dlrm.py", total, final)
    return 0


if __name__ == "__main__":
    sys.exit(main())
