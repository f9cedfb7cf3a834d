#!/usr/bin/env python3
"""A tiny real training job that runs anywhere (standard library only).

Logistic regression trained with plain SGD on a synthetic, linearly separable
dataset (fixed seed), a few epochs of well under a second each. It reports
each epoch to colo through python/colo_progress.py and prints one line per
epoch, like a real training script:

    epoch 2/5: 0.62s, 32150 samples/s, loss 0.3124, accuracy 0.912

Used by examples/quickstart.toml to show colo without a GPU or PyTorch.
"""

import argparse
import math
import os
import random
import sys
import time

try:
    import colo_progress as colo  # under colo, or installed (scripts/install-python-client.sh)
except ImportError:  # a checkout: python/ beside this directory
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import colo_progress as colo


def make_dataset(samples, features, seed):
    """Points labelled by a random hyperplane, with 5% of the labels flipped."""
    rng = random.Random(seed)
    true_w = [rng.gauss(0, 1) for _ in range(features)]
    data = []
    for _ in range(samples):
        x = [rng.gauss(0, 1) for _ in range(features)]
        y = 1 if sum(w * v for w, v in zip(true_w, x)) > 0 else 0
        if rng.random() < 0.05:
            y = 1 - y
        data.append((x, y))
    return data


def sigmoid(z):
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def train_epoch(data, w, lr, rng):
    """One pass of SGD over `data` in random order; returns (mean loss, accuracy)."""
    order = list(range(len(data)))
    rng.shuffle(order)
    loss = 0.0
    correct = 0
    for i in order:
        x, y = data[i]
        p = sigmoid(sum(wi * xi for wi, xi in zip(w, x)) + w[-1])
        loss -= math.log(p if y else 1.0 - p) if 0.0 < p < 1.0 else 0.0
        correct += (p > 0.5) == (y == 1)
        g = p - y
        for j, xj in enumerate(x):
            w[j] -= lr * g * xj
        w[-1] -= lr * g
    return loss / len(data), correct / len(data)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Toy logistic-regression training (stdlib only).")
    parser.add_argument("--lr", type=float, default=0.05, help="SGD learning rate")
    parser.add_argument("--epochs", type=int, default=5, help="epochs to train")
    parser.add_argument("--samples", type=int, default=40000, help="samples per epoch")
    parser.add_argument("--features", type=int, default=32, help="input dimension")
    parser.add_argument("--seed", type=int, default=0, help="seed of data and shuffling")
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.samples < 1 or args.features < 1 or args.lr <= 0:
        parser.error("--epochs, --samples and --features must be at least 1, --lr positive")

    data = make_dataset(args.samples, args.features, args.seed)
    rng = random.Random(args.seed + 1)
    w = [0.0] * (args.features + 1)  # weights, then the bias
    print("toy_train: logistic regression, %d samples x %d features, lr %g, %d epochs"
          % (args.samples, args.features, args.lr, args.epochs), flush=True)
    for epoch in range(1, args.epochs + 1):
        colo.epoch_start(epoch)
        start = time.perf_counter()
        loss, accuracy = train_epoch(data, w, args.lr, rng)
        seconds = time.perf_counter() - start
        print("epoch %d/%d: %.2fs, %.0f samples/s, loss %.4f, accuracy %.3f"
              % (epoch, args.epochs, seconds, len(data) / seconds, loss, accuracy), flush=True)
        colo.epoch_end(epoch, samples=len(data), loss=loss, accuracy=accuracy)
    colo.end(loss=loss, accuracy=accuracy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
