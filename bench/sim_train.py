#!/usr/bin/env python3
"""A stand-in for bench/train.py (and bench/dlrm.py) on the simulated backend.

`colo bench --backend sim` runs this script by default so that the benchmark
suites run end to end in CI, where there is no GPU and no PyTorch. It takes the
same arguments as bench/train.py (plus dlrm.py's --memory-gib), trains nothing,
and needs only the standard library. Nothing it reports is a measurement.

Each epoch does a little real, deterministic pure-Python work (a checksum over
the epoch's "batches") and then sleeps so that the epoch takes

    epoch_samples / rate(model) * slowdown   seconds,

where rate(model) comes from RATES below (the solo throughputs colo's planner
assumes, samples/s on an H200) and

    slowdown = max(1, sharing * SM_SHARE[model] / 100)

with `sharing` the number of jobs sharing the GPU, read from the environment
variable COLO_SIM_SHARING (colo bench sets it; 1 when absent). So a job alone
runs at its table rate and jobs that together ask for more than the whole GPU
slow down in proportion. The first epoch takes WARMUP_S longer, as real
training does.

Progress goes to colo through python/colo_progress.py like train.py's: one
epoch_end per epoch, and at the end max_memory_reserved_mib (the memory below;
for dlrm --memory-gib). As it starts, it tells colo's simulated GPU what it
holds there (progress metrics simulated_gpu_memory_mib and
simulated_sm_active_pct; dlrm: --memory-gib): MEMORY_MIB scaled as 40% fixed and 60% in
proportion to the batch size over 128, and SM_SHARE scaled by the square root
of that ratio, so that a batch-size sweep has memory and load that grow with
the batch, as a real one does.

Under MPS with a pinned memory limit (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, which
colo's auto policy gives a job it has never measured), a model whose memory
exceeds the limit fails as PyTorch would, with "CUDA out of memory", once it
has taken what the limit allows: the overrun colo must contain. And it is a
client of the MPS server it finds (the pid the stand-in control program,
tests/integration/fake-mps-control, writes to nvidia-cuda-mps-server.pid in
CUDA_MPS_PIPE_DIRECTORY): when that server dies, it fails with a CUDA error,
as a real client does.
"""

import argparse
import math
import os
import sys
import time
import zlib

try:
    import colo_progress as colo  # under colo, or installed (scripts/install-python-client.sh)
except ImportError:  # a checkout: python/ beside this directory
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import colo_progress as colo

# model -> solo samples/s (bench/planner.h's table)
RATES = {
    "resnet26": 15900.0,
    "resnet50": 7900.0,
    "efficientnetv2_s": 750.0,
    "resnet152": 810.0,
    "cait_xxs24_224": 1040.0,
    "dlrm": 335000.0,
}

# model -> SM activity of one job alone, percent (a rough figure per model)
SM_SHARE = {
    "resnet26": 35.0,
    "resnet50": 60.0,
    "efficientnetv2_s": 50.0,
    "resnet152": 90.0,
    "cait_xxs24_224": 85.0,
    "dlrm": 30.0,
}

# model -> what torch would reserve, MiB (bench/planner.h's table less the CUDA context)
MEMORY_MIB = {
    "resnet26": 410.0,
    "resnet50": 1008.0,
    "efficientnetv2_s": 600.0,
    "resnet152": 4246.0,
    "cait_xxs24_224": 10242.0,
}

WARMUP_S = 0.2
DATASETS = ["cifar10", "imagenet64", "imagenet", "criteo"]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Stand-in for bench/train.py on colo's simulated backend: sleeps instead of "
        "training (for tests; nothing it reports is measured).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--model", choices=sorted(RATES), default="resnet26")
    parser.add_argument("--dataset", choices=DATASETS, default="cifar10")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--epoch-samples", type=int, default=50000)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--memory-gib", type=float, default=16.0, help="dlrm: table size")
    parser.add_argument("--overrun-s", type=float, default=1.5,
                        help="over its MPS memory limit: how long it holds the limit before it "
                        "fails (its allocations growing)")
    # Accepted for compatibility with train.py, ignored.
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--pool-batches", type=int, default=16)
    parser.add_argument("--no-progress-client", action="store_true",
                        help="report only through the printed epoch lines, as train.py")
    args = parser.parse_args(argv)
    for name in ("batch_size", "epoch_samples", "epochs"):
        if getattr(args, name) < 1:
            parser.error("--%s must be at least 1" % name.replace("_", "-"))
    return args


def sharing():
    """Jobs sharing the GPU, from COLO_SIM_SHARING (1 when absent or malformed)."""
    try:
        return max(1, int(os.environ.get("COLO_SIM_SHARING", "1")))
    except ValueError:
        return 1


def mps_memory_limit_mib():
    """The MPS pinned device memory limit of device 0 ("0=1234M"), in MiB; None without one."""
    for entry in os.environ.get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "").split(","):
        device, _, value = entry.partition("=")
        if device.strip() != "0" or not value:
            continue
        units = {"M": 1.0, "G": 1024.0, "K": 1.0 / 1024}
        try:
            return float(value[:-1]) * units[value[-1]] if value[-1] in units else float(value) / 2**20
        except ValueError:
            return None
    return None


def mps_server():
    """The pid of the MPS server this job is a client of; None when not under MPS."""
    pipe_dir = os.environ.get("CUDA_MPS_PIPE_DIRECTORY")
    if not pipe_dir:
        return None
    deadline = time.monotonic() + 2.0  # the control daemon starts a server for its clients
    while time.monotonic() < deadline:
        try:
            with open(os.path.join(pipe_dir, "nvidia-cuda-mps-server.pid")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            time.sleep(0.05)
    return None


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def sleep_as_client(seconds, server):
    """Sleeps; False as soon as the MPS server is gone."""
    end = time.monotonic() + seconds
    while True:
        if server is not None and not alive(server):
            return False
        left = end - time.monotonic()
        if left <= 0:
            return True
        time.sleep(min(left, 0.1))


def work(epoch, steps, seed):
    """A little deterministic CPU work: a CRC over one small buffer per step."""
    crc = seed
    for step in range(steps):
        crc = zlib.crc32(b"%d:%d:%d" % (epoch, step, crc), crc)
    return crc


def main(argv=None):
    args = parse_args(argv)
    print("sim_train.py: started at %.3f" % time.time(), flush=True)
    if args.no_progress_client:
        os.environ.pop(colo.ENV_VAR, None)
    steps = math.ceil(args.epoch_samples / args.batch_size)
    samples = steps * args.batch_size
    slowdown = max(1.0, sharing() * SM_SHARE[args.model] / 100.0)
    epoch_s = samples / RATES[args.model] * slowdown
    print(
        "sim_train.py: SIMULATED %s on %s, batch %d, %d steps (%d samples) per epoch, %d epochs, "
        "%d jobs sharing the GPU: %.2fs per epoch" % (args.model, args.dataset, args.batch_size,
                                                        steps, samples, args.epochs, sharing(),
                                                        epoch_s),
        flush=True,
    )
    batch_ratio = args.batch_size / 128.0
    if args.model == "dlrm":  # its tables (bench/dlrm.py's sparse gradients add little)
        memory_mib = 1024 * args.memory_gib
        sm_pct = SM_SHARE[args.model]
    else:
        memory_mib = MEMORY_MIB[args.model] * (0.4 + 0.6 * batch_ratio)
        sm_pct = min(100.0, max(1.0, SM_SHARE[args.model] * math.sqrt(batch_ratio)))
    limit_mib = mps_memory_limit_mib()
    if limit_mib is None or memory_mib <= limit_mib:
        colo.metric(simulated_gpu_memory_mib=memory_mib, simulated_sm_active_pct=sm_pct)
    else:
        time.sleep(WARMUP_S)  # it allocates as its first step runs
        colo.metric(simulated_gpu_memory_mib=limit_mib, simulated_sm_active_pct=sm_pct)
        time.sleep(args.overrun_s)  # long enough for colo to sample what it held
        print("torch.OutOfMemoryError: CUDA out of memory (simulated: needs %.0f MiB, the MPS "
              "pinned memory limit is %.0f MiB)" % (memory_mib, limit_mib), flush=True)
        return 1
    server = mps_server()
    colo.start()
    run_start = time.monotonic()
    checksum = args.seed
    for epoch in range(1, args.epochs + 1):
        colo.epoch_start(epoch)
        start = time.monotonic()
        checksum = work(epoch, steps, checksum)
        target = epoch_s + (WARMUP_S if epoch == 1 else 0.0)
        if not sleep_as_client(target - (time.monotonic() - start), server):
            print("RuntimeError: CUDA error: the MPS server (pid %d) this client used is gone "
                  "(simulated)" % server, flush=True)
            return 1
        seconds = time.monotonic() - start
        loss = 1.0 + (checksum % 1000) / 1000.0
        print("epoch %d/%d: %.2fs, %.0f img/s, loss %.2f (simulated), %d samples, "
              "ended at %.3f" % (epoch, args.epochs, seconds, samples / seconds, loss, samples,
                                 time.time()), flush=True)
        colo.epoch_end(epoch, samples=samples, loss=loss, epoch_time_s=seconds,
                       img_per_s=samples / seconds)
    total = time.monotonic() - run_start
    colo.metric(max_memory_reserved_mib=memory_mib, simulated=1)
    colo.end(total_time_s=total, img_per_s=samples * args.epochs / total)
    print("sim_train.py: done in %.1fs (simulated)" % total, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
