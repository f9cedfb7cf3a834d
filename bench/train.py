#!/usr/bin/env python3
"""colo's reference training workload: a timm image model on synthetic data.

The models and input sizes are the ones the collocation study measured:
resnet26, resnet50, resnet152, efficientnetv2_s and cait_xxs24_224 on data
shaped like CIFAR-10 (32 px, 10 classes), ImageNet64 (64 px, 1000 classes) or
ImageNet (224 px, 1000 classes).

The data is synthetic and generated once on the device (a small pool of random
batches reused cyclically), so no CPU data loader limits the GPU. Training is
SGD with momentum under bf16 autocast, with cudnn.benchmark on.

Progress goes to colo through python/colo_progress.py (a no-op outside colo):
one epoch_end per epoch with the samples processed and the loss, and at the
end the metrics max_memory_reserved_mib (what PyTorch's caching allocator held
at most) and device_used_mib (device memory in use at the end, all processes),
from which bench/memory_check.py derives the job's own footprint to compare
with the peak colo measured through NVML. One line
per epoch goes to stdout, with the samples it trained and the wall-clock time
(seconds since 1970) it ended, which bench/verify-speedup.py reads to check
colo's speed-up from the logs alone, and which a job file's epoch_regex can
read when --no-progress-client keeps the script from talking to colo:

    epoch 2/5: 12.3s, 4065 img/s, loss 2.3026, 50048 samples, ended at 1732278012.345

Its first line says when it started ("train.py: started at 1732278000.123"),
so that a makespan can be taken from the logs too (bench/sweep_check.py); its
second, its arguments, so that a log says which grid point it trained
(bench/check-learned.py).

Under torchrun (WORLD_SIZE > 1) it trains data-parallel: one rank per GPU
(cuda:LOCAL_RANK; NCCL, or gloo on the CPU), DistributedDataParallel, each
rank its own synthetic data. Rank 0 alone prints and reports, and its figures
are the global batch's (samples x WORLD_SIZE): a colo gang (`gpus = N`).

`python3 bench/train.py --help` works without PyTorch; training needs torch
and timm.
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

MODELS = ["resnet26", "resnet50", "resnet152", "efficientnetv2_s", "cait_xxs24_224"]

# name -> (image size in pixels, number of classes)
DATASETS = {
    "cifar10": (32, 10),
    "imagenet64": (64, 1000),
    "imagenet": (224, 1000),
}

# Transformer models built for a fixed input size; timm adapts their patch
# embedding and position embeddings when given img_size. Convolutional models
# take any size and do not accept the argument.
MODELS_WITH_IMG_SIZE = {"cait_xxs24_224"}

# Largest synthetic pool kept on the device, so that ImageNet-sized inputs do
# not add much to the job's own memory.
MAX_POOL_BYTES = 256 * 2**20


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Train a timm model on synthetic data shaped like a real dataset "
        "(colo's reference workload).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--model", choices=MODELS, default="resnet26", help="timm model")
    parser.add_argument(
        "--dataset",
        choices=sorted(DATASETS),
        default="cifar10",
        help="input shape: cifar10 32 px/10 classes, imagenet64 64 px/1000, imagenet 224 px/1000",
    )
    parser.add_argument("--batch-size", type=int, default=128, help="samples per step")
    parser.add_argument(
        "--epoch-samples",
        type=int,
        default=50000,
        help="samples per epoch (CIFAR-10's training set has 50000); rounded up to whole batches",
    )
    parser.add_argument("--epochs", type=int, default=5, help="epochs to train")
    parser.add_argument("--lr", type=float, default=0.1, help="SGD learning rate")
    parser.add_argument("--momentum", type=float, default=0.9, help="SGD momentum")
    parser.add_argument("--weight-decay", type=float, default=0.0, help="SGD weight decay")
    parser.add_argument("--device", default="cuda", help="torch device, e.g. cuda, cuda:1, cpu")
    parser.add_argument("--seed", type=int, default=0, help="seed of weights and data")
    parser.add_argument(
        "--channels-last", action="store_true", help="use the channels-last memory format"
    )
    parser.add_argument(
        "--no-progress-client",
        action="store_true",
        help="report nothing through python/colo_progress.py, only the printed epoch lines "
        "(as a script colo cannot change; colo then reads epochs through epoch_regex)",
    )
    parser.add_argument(
        "--pool-batches",
        type=int,
        default=16,
        help="distinct synthetic batches kept on the device (fewer when they would exceed "
        "256 MiB)",
    )
    args = parser.parse_args(argv)
    for name in ("batch_size", "epoch_samples", "epochs", "pool_batches"):
        if getattr(args, name) < 1:
            parser.error("--%s must be at least 1" % name.replace("_", "-"))
    if args.lr <= 0:
        parser.error("--lr must be positive")
    if args.weight_decay < 0:
        parser.error("--weight-decay must not be negative")
    return args


def make_pool(torch, args, image_size, num_classes, device, memory_format):
    """Random images and labels, generated once on the device."""
    batch_bytes = args.batch_size * 3 * image_size * image_size * 4
    count = max(1, min(args.pool_batches, MAX_POOL_BYTES // batch_bytes))
    generator = torch.Generator(device=device)
    generator.manual_seed(args.seed)
    images, labels = [], []
    for _ in range(count):
        x = torch.randn(
            args.batch_size, 3, image_size, image_size, device=device, generator=generator
        )
        images.append(x.contiguous(memory_format=memory_format))
        labels.append(
            torch.randint(
                0, num_classes, (args.batch_size,), device=device, generator=generator
            )
        )
    return images, labels


def main(argv=None):
    args = parse_args(argv)
    print("train.py: started at %.3f" % time.time(), flush=True)
    print("train.py: arguments: %s" % " ".join(argv if argv is not None else sys.argv[1:]), flush=True)
    if args.no_progress_client:
        os.environ.pop(colo.ENV_VAR, None)

    import torch  # imported after argparse so that --help works without torch
    import timm

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("train.py: --device %s asked for, but CUDA is not available" % args.device,
              file=sys.stderr)
        return 2
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:  # torchrun: one rank per GPU
        import torch.distributed as dist
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        args.seed += rank  # each rank its own data
    say = print if rank == 0 else (lambda *a, **k: None)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.benchmark = True

    image_size, num_classes = DATASETS[args.dataset]
    kwargs = {"pretrained": False, "num_classes": num_classes}
    if args.model in MODELS_WITH_IMG_SIZE:
        kwargs["img_size"] = image_size
    model = timm.create_model(args.model, **kwargs)
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(device=device, memory_format=memory_format)
    model.train()
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)

    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                                weight_decay=args.weight_decay)
    loss_fn = torch.nn.CrossEntropyLoss()
    images, labels = make_pool(torch, args, image_size, num_classes, device, memory_format)
    steps = math.ceil(args.epoch_samples / args.batch_size)
    samples = steps * args.batch_size

    def synchronize():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    params = sum(p.numel() for p in model.parameters())
    say(
        "train.py: %s on synthetic %s (%d px, %d classes), %.1fM parameters, batch %d, "
        "%d steps (%d samples) per epoch, %d epochs, device %s%s"
        % (args.model, args.dataset, image_size, num_classes, params / 1e6, args.batch_size,
           steps, samples, args.epochs, device,
           ", %d ranks (the figures below: all of them)" % world if world > 1 else ""),
        flush=True,
    )
    colo.start()
    synchronize()
    run_start = time.perf_counter()
    warned_loss = False
    for epoch in range(1, args.epochs + 1):
        colo.epoch_start(epoch)
        epoch_start = time.perf_counter()
        loss_sum = torch.zeros((), device=device)
        for i in range(steps):
            x = images[i % len(images)]
            y = labels[i % len(labels)]
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss_sum += loss.detach().float()
            if epoch == 1 and i == 0:
                # Its first step has run: its memory is nearly all allocated now,
                # which is what colo waits for before it places this job's
                # siblings by it (one synchronisation, once).
                synchronize()
                colo.step(1)
        mean_loss = (loss_sum / steps).item()  # also waits for the epoch's work
        synchronize()
        seconds = time.perf_counter() - epoch_start
        ended = time.time()
        rate = samples * world / seconds
        say(
            "epoch %d/%d: %.1fs, %.0f img/s, loss %.4f, %d samples, ended at %.3f"
            % (epoch, args.epochs, seconds, rate, mean_loss, samples * world, ended),
            flush=True,
        )
        colo.epoch_end(epoch, samples=samples, loss=mean_loss, epoch_time_s=seconds,
                       img_per_s=rate)
        if not math.isfinite(mean_loss) and not warned_loss:
            # Throughput is what this workload measures; keep going.
            print("train.py: the loss is %s (random data, lr %g)" % (mean_loss, args.lr),
                  file=sys.stderr)
            warned_loss = True

    total = time.perf_counter() - run_start
    final = {"total_time_s": total, "img_per_s": samples * world * args.epochs / total}
    if rank == 0:
        report_end(colo, torch, device, "train.py", total, final)
    if world > 1:
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
