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

Fault injection, for bench/faults.py (issue 31, peaceful sharing under MPS):

  --bad-labels-at-epoch N   from epoch N on, every batch's labels are out of
                            range (labels + num_classes): on CUDA cross_entropy
                            trips a device-side assert ("Assertion `t >= 0 &&
                            t < n_classes` failed"), a fatal fault of the
                            process's GPU context; on the CPU an IndexError.
  --stall-after-epoch N     once epoch N has ended and been reported, sleep
                            for ever holding the GPU memory: a hung job. Once
                            per job: only while COLO_CHECKPOINT_DIR holds no
                            file `stalled-once` (created before it stalls), so
                            that colo's retry trains normally; without
                            COLO_CHECKPOINT_DIR it stalls every time.
  --exit-at-epoch N         rank --exit-rank (default 1) ends with os._exit(1)
                            a few steps into epoch N, abruptly (no cleanup, no
                            traceback): a crashed rank of a gang. Once per
                            job, by the same rule (marker `exited-once`).
  --checkpoint-every-epoch  after each epoch, save the model, the optimizer and
                            the epoch to COLO_CHECKPOINT_DIR/train.pt (written
                            to a temporary file, then renamed), and at start
                            resume from it ("train.py: resumed at epoch E",
                            E the first epoch this attempt trains), so that a
                            job that colo runs again loses at most an epoch.

Its first lines also say whether it is an MPS client ("train.py: mps client:
yes (pipe dir DIR)" when CUDA_MPS_PIPE_DIRECTORY is set, else "train.py: mps
client: no") and, under colo, which job and attempt it is (COLO_JOB_NAME,
COLO_RUN_ID, COLO_JOB_ID, COLO_ATTEMPT, COLO_CHECKPOINT_DIR, those set, and the
uid it runs as), so that bench/check-faults.py can tell from the logs alone where each attempt ran.

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
    faults = parser.add_argument_group(
        "fault injection (bench/faults.py; 0: off)")
    faults.add_argument(
        "--bad-labels-at-epoch", type=int, default=0, metavar="N",
        help="from epoch N on, labels out of range (labels + num_classes): a device-side "
        "assert in cross_entropy on CUDA, an IndexError on the CPU")
    faults.add_argument(
        "--stall-after-epoch", type=int, default=0, metavar="N",
        help="after epoch N has ended and been reported, sleep for ever holding the GPU "
        "memory; once per job: not when COLO_CHECKPOINT_DIR holds the marker 'stalled-once' "
        "(made before stalling); every time without COLO_CHECKPOINT_DIR")
    faults.add_argument(
        "--exit-at-epoch", type=int, default=0, metavar="N",
        help="rank --exit-rank ends with os._exit(1) a few steps into epoch N; once per job "
        "(marker 'exited-once' in COLO_CHECKPOINT_DIR)")
    faults.add_argument(
        "--exit-rank", type=int, default=1, metavar="R",
        help="the rank (RANK; 0 without torchrun) that --exit-at-epoch ends")
    parser.add_argument(
        "--checkpoint-every-epoch", action="store_true",
        help="save model, optimizer and epoch to COLO_CHECKPOINT_DIR/train.pt after every "
        "epoch (a temporary file, then renamed) and resume from it at start")
    args = parser.parse_args(argv)
    for name in ("bad_labels_at_epoch", "stall_after_epoch", "exit_at_epoch", "exit_rank"):
        if getattr(args, name) < 0:
            parser.error("--%s must not be negative" % name.replace("_", "-"))
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


CHECKPOINT_FILE = "train.pt"


def once_per_job(marker):
    """Whether a once-per-job fault is due now: True when COLO_CHECKPOINT_DIR
    is unset (every time), else when `marker` is not there yet, which it then
    creates (so colo's next attempt runs normally)."""
    directory = os.environ.get("COLO_CHECKPOINT_DIR", "")
    if not directory:
        return True
    path = os.path.join(directory, marker)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    except OSError as e:  # an unusable directory: fault every time, as without one
        print("train.py: cannot create %s (%s); faulting anyway" % (path, e), file=sys.stderr,
              flush=True)
        return True
    os.write(fd, ("%.3f %d\n" % (time.time(), os.getpid())).encode())
    os.close(fd)
    return True


def print_context():
    """Where this process runs: an MPS client or not, and colo's job and attempt."""
    pipe = os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "")
    levers = " ".join("%s=%s" % (k, os.environ[k]) for k in
                      ("CUDA_MPS_CLIENT_PRIORITY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                       "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT") if k in os.environ)
    print("train.py: mps client: %s" % ("yes (pipe dir %s%s)" % (pipe, "; " + levers if levers
                                                                   else "") if pipe else "no"),
          flush=True)
    context = ["%s=%s" % (k, os.environ[k]) for k in
               ("COLO_JOB_NAME", "COLO_RUN_ID", "COLO_JOB_ID", "COLO_ATTEMPT",
                "COLO_CHECKPOINT_DIR", "CUDA_VISIBLE_DEVICES") if k in os.environ]
    context.append("uid=%d" % os.getuid())  # whose job it ran as (a root service's users)
    context.append("pid=%d" % os.getpid())  # the process a profiler says it attached to
    if "COLO_JOB_NAME" in os.environ:
        print("train.py: colo attempt: %s" % " ".join(context), flush=True)


def emit(line, stream=None):
    """One line in one write: the ranks of a gang share the job's log, and
    print() writes a line and its newline apart when output is unbuffered."""
    stream = stream or sys.stdout
    stream.write(line + "\n")
    stream.flush()


def main(argv=None):
    args = parse_args(argv)
    emit("train.py: started at %.3f" % time.time())
    emit("train.py: arguments: %s" % " ".join(argv if argv is not None else sys.argv[1:]))
    if os.environ.get("RANK", "0") == "0":
        print_context()
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
    if device.type == "cuda":  # under an MPS thread percentage, the SMs this client may use
        props = torch.cuda.get_device_properties(device)
        say("train.py: device: %s, %d SMs visible" % (props.name, props.multi_processor_count),
            flush=True)

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

    checkpoint = None
    if args.checkpoint_every_epoch:
        if os.environ.get("COLO_CHECKPOINT_DIR"):
            checkpoint = os.path.join(os.environ["COLO_CHECKPOINT_DIR"], CHECKPOINT_FILE)
        else:
            say("train.py: --checkpoint-every-epoch without COLO_CHECKPOINT_DIR: no checkpoints",
                flush=True)
    bare = model.module if world > 1 else model
    first_epoch = 1
    if checkpoint and os.path.exists(checkpoint):
        state = torch.load(checkpoint, map_location=device)
        bare.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        first_epoch = int(state["epoch"]) + 1
        say("train.py: resumed at epoch %d (checkpoint of epoch %d, %s)"
            % (first_epoch, state["epoch"], checkpoint), flush=True)
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
    exit_step = min(3, steps - 1)  # "a few steps" into the epoch
    for epoch in range(first_epoch, args.epochs + 1):
        colo.epoch_start(epoch)
        epoch_start = time.perf_counter()
        loss_sum = torch.zeros((), device=device)
        bad_labels = 0 < args.bad_labels_at_epoch <= epoch
        if bad_labels:
            say("train.py: epoch %d: labels out of range from now on (--bad-labels-at-epoch %d)"
                % (epoch, args.bad_labels_at_epoch), flush=True)
        for i in range(steps):
            if (epoch == args.exit_at_epoch and i == exit_step and rank == args.exit_rank
                    and once_per_job("exited-once")):
                synchronize()
                sys.stdout.flush()
                emit("train.py: rank %d exits abruptly (os._exit(1)) in epoch %d at step %d, "
                     "at %.3f" % (rank, epoch, i, time.time()), sys.stderr)
                os._exit(1)
            x = images[i % len(images)]
            y = labels[i % len(labels)]
            if bad_labels:
                y = y + num_classes
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss_sum += loss.detach().float()
            if epoch == first_epoch and i == 0:
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
        if checkpoint and rank == 0:
            temporary = checkpoint + ".tmp"
            torch.save({"model": bare.state_dict(), "optimizer": optimizer.state_dict(),
                        "epoch": epoch}, temporary)
            os.replace(temporary, checkpoint)
        if epoch == args.stall_after_epoch and once_per_job("stalled-once"):
            print("train.py: stalling after epoch %d at %.3f, holding its GPU memory "
                  "(--stall-after-epoch)" % (epoch, time.time()), flush=True)
            while True:
                time.sleep(3600)
        if not math.isfinite(mean_loss) and not warned_loss:
            # Throughput is what this workload measures; keep going.
            print("train.py: the loss is %s (random data, lr %g)" % (mean_loss, args.lr),
                  file=sys.stderr)
            warned_loss = True

    total = time.perf_counter() - run_start
    trained = max(0, args.epochs - first_epoch + 1)
    final = {"total_time_s": total, "img_per_s": samples * world * trained / total}
    if rank == 0:
        report_end(colo, torch, device, "train.py", total, final)
    if world > 1:
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
