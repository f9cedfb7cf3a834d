#!/usr/bin/env python3
"""What MPS does with two Unix users (issue 32), read off the real GPU.

Starts a private MPS control daemon (its own pipe and log directories under a
temporary directory, stopped at the end), then:

  1. a CUDA client of the service's user (this script's, root on the device
     machine) through MPS, busy for HOLD seconds;
  2. while it runs, a client of another user (uid/gid 65534, `nobody`) through
     the same MPS control daemon: when does its first CUDA work finish?
  3. while the first still runs, a client of the other user without MPS (no
     CUDA_MPS_PIPE_DIRECTORY: a plain context beside the MPS server);
  4. and one of the other user through a second MPS control daemon of its own
     (its own pipe and log directories, on the same GPU).

Each client prints wall-clock times (time.time()) of its start, its first
finished CUDA work and its end; the summary says whether the other user's
clients ran while the first one did, and the MPS control log is kept.

  python3 bench/mps_users_probe.py OUT [--hold 20]

Needs root (to run a client as another user), torch with CUDA.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

CLIENT = r"""
import json, sys, time
t = {"start": time.time()}
import torch
x = torch.randn(2048, 2048, device="cuda")
torch.cuda.synchronize()
t["first_cuda_done"] = time.time()
print(json.dumps({"ready": t["first_cuda_done"]}), flush=True)
hold = float(sys.argv[1])
n = 0
while time.time() - t["first_cuda_done"] < hold:
    y = x @ x
    torch.cuda.synchronize()
    n += 1
t["end"] = time.time()
t["matmuls"] = n
print(json.dumps(t), flush=True)
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--hold", type=float, default=20.0)
    p.add_argument("--other-uid", type=int, default=65534)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    base = tempfile.mkdtemp(prefix="colo-mps-users-")
    os.chmod(base, 0o755)
    pipe, logs = os.path.join(base, "pipe"), os.path.join(base, "log")
    pipe2, logs2 = os.path.join(base, "pipe2"), os.path.join(base, "log2")
    for d in (pipe, logs, pipe2, logs2):
        os.makedirs(d)
        os.chmod(d, 0o777 if "pipe" in d else 0o755)
    home = os.path.join(base, "home")
    os.makedirs(home)
    os.chown(home, args.other_uid, args.other_uid)
    script = os.path.join(base, "client.py")
    with open(script, "w") as f:
        f.write(CLIENT)
    os.chmod(script, 0o644)
    mps_env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=pipe, CUDA_MPS_LOG_DIRECTORY=logs)
    own_env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=pipe2, CUDA_MPS_LOG_DIRECTORY=logs2)
    plain_env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_MPS")}
    other = dict(uid=args.other_uid, gid=args.other_uid)
    result = {"hold_s": args.hold, "other_uid": args.other_uid}
    daemon = subprocess.run(["nvidia-cuda-mps-control", "-d"], env=mps_env,
                            capture_output=True, text=True)
    result["daemon_rc"] = daemon.returncode
    daemon2 = subprocess.run(["nvidia-cuda-mps-control", "-d"], env=own_env,
                             capture_output=True, text=True)
    result["second_daemon_rc"] = daemon2.returncode
    procs = {}
    try:
        def start(name, env, **who):
            e = dict(env, HOME=home if who else env.get("HOME", "/root"), PYTHONUNBUFFERED="1")
            out = open(os.path.join(args.out, name + ".log"), "w")
            procs[name] = (subprocess.Popen([sys.executable, script, str(args.hold)], env=e,
                                            stdout=out, stderr=subprocess.STDOUT, cwd=base,
                                            **({"user": who["uid"], "group": who["gid"]}
                                               if who else {})), out, time.time())

        start("first-user-mps", mps_env)
        deadline = time.time() + 120
        path = os.path.join(args.out, "first-user-mps.log")
        while time.time() < deadline and '"ready"' not in open(path).read():
            time.sleep(0.2)
        start("other-user-mps", mps_env, **other)
        start("other-user-plain", plain_env, **other)
        start("other-user-own-daemon", own_env, **other)
        for name, (proc, out, _) in procs.items():
            try:
                proc.wait(timeout=args.hold * 4 + 120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            out.close()
        for name, (proc, _, launched) in procs.items():
            last = {}
            with open(os.path.join(args.out, name + ".log")) as f:
                for line in f:
                    if line.startswith("{"):
                        last.update(json.loads(line))
            last.update({"launched": launched, "rc": proc.returncode})
            result[name] = last
    finally:
        for env, d, prefix in ((mps_env, logs, "mps-"), (own_env, logs2, "mps2-")):
            subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", env=env, text=True,
                           capture_output=True)
            time.sleep(2)
            for f in os.listdir(d):
                shutil.copy(os.path.join(d, f), os.path.join(args.out, prefix + f))
        shutil.rmtree(base, ignore_errors=True)
    first = result.get("first-user-mps", {})
    lines = ["MPS with two Unix users: a client of uid %d beside a client of uid %d (MPS, busy "
             "%.0f s)" % (args.other_uid, os.getuid(), args.hold)]
    for name in ("other-user-mps", "other-user-plain", "other-user-own-daemon"):
        r = result.get(name, {})
        done = r.get("first_cuda_done")
        if done is None:
            lines.append("%s: no CUDA work finished (rc %s)" % (name, r.get("rc")))
            continue
        lines.append("%s: launched %.1f s after the first user's client was ready, first CUDA "
                     "work done %.1f s after launch; the first user's client ended %.1f s after "
                     "its ready; %s" % (
                         name, r["launched"] - first.get("first_cuda_done", 0),
                         done - r["launched"],
                         first.get("end", 0) - first.get("first_cuda_done", 0),
                         "ran WHILE the first user's ran" if done < first.get("end", 0)
                         else "waited until the first user's client ENDED"))
    result["summary"] = lines
    with open(os.path.join(args.out, "result.json"), "w") as f:
        json.dump(result, f, indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
