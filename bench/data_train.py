#!/usr/bin/env python3
"""A trainer for bench/data-sharing.sh: a timm model trained on a JPEG dataset
read either through colo's shared loader (--loader shared: python/colo_data.py)
or through its own PyTorch DataLoader (--loader torch: torchvision's
ImageFolder with RandomResizedCrop, flip and Normalize, or the same with PIL
when torchvision is missing), so that the two can be compared under one CPU
budget.

The peers of one configuration meet at a barrier (a directory where each
leaves a file), train --warmup seconds, then measure --duration seconds
(synchronized at both ends), then keep training --tail seconds so that the
others' windows end under the same load. The log (JSON, --log) holds what this
trainer measured in its window: images, seconds, time waiting for data, the
CPU time of whatever decoded its data (the shared loader's process, or its
DataLoader workers), and the busy time of the CPUs (/proc/stat).

Progress goes to colo (python/colo_progress.py): a step event with the
samples since the last one every second of the window.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import colo_progress as colo  # under colo, or installed (scripts/install-python-client.sh)
except ImportError:  # a checkout: python/ beside this directory
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    import colo_progress as colo

CLK_TCK = os.sysconf("SC_CLK_TCK")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--loader", choices=["shared", "torch"], required=True)
    p.add_argument("--data", help="ImageFolder directory (--loader torch)")
    p.add_argument("--model", default="resnet50", help="timm model, or 'tiny' (a small CNN)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--size", type=int, default=224, help="crop size (--loader torch)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--workers", type=int, default=4, help="DataLoader workers (--loader torch)")
    p.add_argument("--worker-cpus", default="", help="CPU list for DataLoader workers")
    p.add_argument("--budget-cpus", default="", help="CPU list whose busy time is logged")
    p.add_argument("--peers", type=int, default=1, help="trainers meeting at the barrier")
    p.add_argument("--barrier", default="", help="directory of the barrier")
    p.add_argument("--warmup", type=float, default=10.0)
    p.add_argument("--duration", type=float, default=30.0)
    p.add_argument("--tail", type=float, default=2.0)
    p.add_argument("--log", required=True)
    return p.parse_args(argv)


def cpu_list(text):
    cpus = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return sorted(cpus)


def process_cpu_seconds(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime
    except (OSError, IndexError, ValueError):
        return None


def busy_cpu_seconds(cpus):
    """Busy seconds (all but idle and iowait) of each listed CPU, from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            name, *values = line.split()
            if not name.startswith("cpu") or name == "cpu":
                continue
            cpu = int(name[3:])
            if cpus and cpu not in cpus:
                continue
            v = [int(x) for x in values]
            out[cpu] = (sum(v[:8]) - v[3] - v[4]) / CLK_TCK
    return out


class TinyNet:
    """A small CNN for CPU runs of the benchmark's logic."""

    @staticmethod
    def create(torch, num_classes):
        nn = torch.nn
        return nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                             nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, num_classes))


def torch_loader(torch, args, device):
    """K independent DataLoaders' one: what a PyTorch training script does."""
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    try:
        from torchvision import datasets, transforms
        transform = transforms.Compose([
            transforms.RandomResizedCrop(args.size), transforms.RandomHorizontalFlip(),
            transforms.ToTensor(), transforms.Normalize(mean, std)])
        dataset = datasets.ImageFolder(args.data, transform=transform)
        num_classes, kind = len(dataset.classes), "torchvision ImageFolder"
    except ImportError:
        dataset, num_classes = PilImageFolder.create(torch, args.data, args.size, mean, std)
        kind = "PIL ImageFolder (no torchvision)"
    cpus = cpu_list(args.worker_cpus)

    def pin_worker(_):
        if cpus:
            os.sched_setaffinity(0, cpus)

    loader = torch.utils.data.DataLoader(
        dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
        pin_memory=device.type == "cuda", persistent_workers=args.workers > 0,
        worker_init_fn=pin_worker, drop_last=False)
    return loader, num_classes, kind


class PilImageFolder:
    """torchvision's ImageFolder + RandomResizedCrop + flip + Normalize, with PIL only."""

    @staticmethod
    def create(torch, root, size, mean, std):
        import math
        import random

        import numpy as np
        from PIL import Image

        classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
        files = [(os.path.join(root, c, f), i) for i, c in enumerate(classes)
                 for f in sorted(os.listdir(os.path.join(root, c)))]
        mean_t = torch.tensor(mean).view(3, 1, 1)
        std_t = torch.tensor(std).view(3, 1, 1)

        class Dataset(torch.utils.data.Dataset):
            def __len__(self):
                return len(files)

            def __getitem__(self, i):
                path, label = files[i]
                img = Image.open(path).convert("RGB")
                w, h = img.size
                for _ in range(10):
                    area = w * h * random.uniform(0.08, 1.0)
                    ratio = math.exp(random.uniform(math.log(3 / 4), math.log(4 / 3)))
                    cw, ch = round(math.sqrt(area * ratio)), round(math.sqrt(area / ratio))
                    if 0 < cw <= w and 0 < ch <= h:
                        x, y = random.randint(0, w - cw), random.randint(0, h - ch)
                        break
                else:
                    cw, ch, x, y = w, h, 0, 0
                img = img.resize((size, size), Image.BILINEAR, box=(x, y, x + cw, y + ch))
                if random.random() < 0.5:
                    img = img.transpose(Image.FLIP_LEFT_RIGHT)
                t = torch.from_numpy(np.asarray(img, dtype=np.uint8).copy()).permute(2, 0, 1)
                return (t.float() / 255 - mean_t) / std_t, label

        return Dataset(), len(classes)


def barrier(directory, peers, timeout=600):
    if not directory or peers <= 1:
        return
    os.makedirs(directory, exist_ok=True)
    open(os.path.join(directory, "ready.%d" % os.getpid()), "w").close()
    deadline = time.time() + timeout
    while len([f for f in os.listdir(directory) if f.startswith("ready.")]) < peers:
        if time.time() > deadline:
            raise SystemExit("data_train.py: the other trainers did not arrive")
        time.sleep(0.02)


def main(argv=None):
    args = parse_args(argv)
    import torch

    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
    if args.loader == "shared":
        import colo_data
        loader = colo_data.Loader(batch_size=args.batch_size, device=args.device)
        num_classes, kind = loader.num_classes, "colo shared loader"
        decoder_pids = lambda: [loader.info["loader_pid"]]  # noqa: E731
    else:
        loader, num_classes, kind = torch_loader(torch, args, device)
        decoder_pids = lambda: [w.pid for w in getattr(loader._iterator, "_workers", [])]  # noqa

    if args.model == "tiny":
        model = TinyNet.create(torch, num_classes)
    else:
        import timm
        model = timm.create_model(args.model, pretrained=False, num_classes=num_classes)
    channels_last = device.type == "cuda"
    if channels_last:
        model = model.to(device, memory_format=torch.channels_last)
    else:
        model = model.to(device)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def batches():
        while True:
            for x, y in loader:
                yield x, y

    stream = batches()

    def fetch():
        start = time.perf_counter()
        x, y = next(stream)
        if args.loader == "torch":
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
        return x, y, time.perf_counter() - start

    def train_step(x, y):
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                            enabled=device.type == "cuda"):
            loss = loss_fn(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    def synchronize():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    print("data_train.py: %s, %s, batch %d, device %s, pid %d"
          % (args.model, kind, args.batch_size, device, os.getpid()), flush=True)
    for _ in range(3):  # compile, autotune and start the workers before meeting the others
        x, y, _ = fetch()
        train_step(x, y)
    synchronize()
    barrier(args.barrier, args.peers)
    end_warmup = time.perf_counter() + args.warmup
    while time.perf_counter() < end_warmup:
        x, y, _ = fetch()
        train_step(x, y)
    synchronize()

    budget = cpu_list(args.budget_cpus)
    pids = decoder_pids()
    cpu0 = {pid: process_cpu_seconds(pid) for pid in pids}
    busy0, all0 = busy_cpu_seconds(budget), busy_cpu_seconds([])
    self0 = time.process_time()
    client_wait0 = loader.wait_seconds if args.loader == "shared" else None
    wall0 = time.time()
    start = time.perf_counter()
    images = steps = 0
    waited = 0.0
    colo.step(0, samples=0)
    last_report, reported = start, 0
    while time.perf_counter() - start < args.duration:
        x, y, wait = fetch()
        waited += wait
        train_step(x, y)
        images += x.shape[0]
        steps += 1
        if time.perf_counter() - last_report >= 1.0:
            colo.step(steps, samples=images - reported)
            last_report, reported = time.perf_counter(), images
    synchronize()
    window = time.perf_counter() - start
    wall1 = time.time()
    colo.step(steps, samples=images - reported)
    cpu1 = {pid: process_cpu_seconds(pid) for pid in pids}
    busy1, all1 = busy_cpu_seconds(budget), busy_cpu_seconds([])
    self1 = time.process_time()
    client_wait1 = loader.wait_seconds if args.loader == "shared" else None
    decoder_cpu = sum(cpu1[p] - cpu0[p] for p in pids
                      if cpu0.get(p) is not None and cpu1.get(p) is not None)

    end_tail = time.perf_counter() + args.tail
    while time.perf_counter() < end_tail:
        x, y, _ = fetch()
        train_step(x, y)
    synchronize()

    log = {
        "loader": args.loader, "kind": kind, "model": args.model, "batch_size": args.batch_size,
        "device": str(device), "pid": os.getpid(), "images": images, "steps": steps,
        "window_s": window, "window_start": wall0, "window_end": wall1,
        "img_per_s": images / window, "wait_s": waited, "wait_fraction": waited / window,
        "decoder_pids": pids, "decoder_cpu_s": decoder_cpu,
        "budget_cpus": budget,
        "budget_busy_s": sum(busy1[c] - busy0[c] for c in busy1 if c in busy0),
        "all_busy_s": sum(all1[c] - all0[c] for c in all1 if c in all0),
        "self_cpu_s": self1 - self0,
    }
    if args.loader == "shared":
        log["consumer"] = loader.stats()
        # colo_data's own count (what colo records for this consumer), in the window.
        log["client_wait_s"] = client_wait1 - client_wait0
    with open(args.log + ".tmp", "w") as f:
        json.dump(log, f, indent=1)
    os.replace(args.log + ".tmp", args.log)
    print("data_train.py: %.0f img/s, waited %.1f%% of the window for data"
          % (log["img_per_s"], 100 * log["wait_fraction"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
