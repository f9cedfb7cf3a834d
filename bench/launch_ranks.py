#!/usr/bin/env python3
"""A minimal stand-in for torchrun (--standalone, one node), for checking gang
benchmarks where torchrun is unusable (Debian's torch 1.13 under Python 3.11
fails in torch.distributed.run): starts N copies of a Python script with
RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set, and, as
torchrun does, stops the others and exits non-zero as soon as one fails.

    python3 bench/launch_ranks.py --nproc_per_node 2 --master_port 29500 train.py ARGS...
"""

import argparse
import os
import subprocess
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nproc_per_node", type=int, required=True)
    p.add_argument("--master_port", type=int, default=29500)
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    ranks = []
    for r in range(a.nproc_per_node):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(a.nproc_per_node),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.master_port))
        ranks.append(subprocess.Popen([sys.executable, a.script] + a.args, env=env))
    while True:
        codes = [r.poll() for r in ranks]
        failed = [c for c in codes if c not in (None, 0)]
        if failed:
            for r in ranks:
                if r.poll() is None:
                    r.terminate()
            return 1
        if all(c == 0 for c in codes):
            return 0
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
