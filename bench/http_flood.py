#!/usr/bin/env python3
"""colo serve under a connection flood (issue 35, item 5), measured from outside.

  bench/http_flood.py COLO OUT

Starts `colo serve --backend sim --http` in a fresh directory, then:
  1. one user opens 1,100 idle TCP connections and 100 slow clients (each
     sending a request head one byte every 0.5 s), and times 5 GETs of
     /metrics by the same user;
  2. as root only: user `nobody` holds 1,100 idle TCP connections and 1,100
     idle socket connections, and root times /metrics and `colo queue`.
Every latency is this script's own clock around an HTTP GET or a `colo queue`
process; nothing is read from colo's output. Writes OUT/http-flood.txt.
"""
import os
import platform
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

IDLE, SLOW, TRIES = 1100, 100, 5


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed_get(port):
    start = time.monotonic()
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
            ok = r.status == 200 and b"colo_" in r.read()
    except OSError as e:
        ok = "error: %s" % e
    return (time.monotonic() - start) * 1000, ok


def timed_queue(colo, sock):
    start = time.monotonic()
    p = subprocess.run([colo, "queue", "--socket", sock], capture_output=True, text=True,
                       timeout=60)
    return (time.monotonic() - start) * 1000, p.returncode == 0


def open_idle(port, n):
    conns = []
    for _ in range(n):
        c = socket.create_connection(("127.0.0.1", port))
        conns.append(c)
    return conns


def open_idle_unix(path, n):
    conns = []
    for _ in range(n):
        c = socket.socket(socket.AF_UNIX)
        c.connect(path)
        conns.append(c)
    return conns


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    colo, out = os.path.abspath(sys.argv[1]), sys.argv[2]
    os.makedirs(out, exist_ok=True)
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    work = tempfile.mkdtemp(prefix="colo-flood-")
    os.chmod(work, 0o755)
    port = free_port()
    sock = os.path.join(work, "colo.sock")
    serve = subprocess.Popen(
        [colo, "serve", "--backend", "sim", "--db", os.path.join(work, "colo.db"), "--socket",
         sock, "--logs", os.path.join(work, "logs"), "--http", "127.0.0.1:%d" % port],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "serve.log"), "w"),
        env=dict(os.environ, COLO_HOME=work))
    lines = ["# colo serve under a connection flood (bench/http_flood.py)",
             "machine: %s, %d cores, %s" % (platform.node(), os.cpu_count(), platform.platform()),
             "command: bench/http_flood.py build/colo OUT", ""]
    try:
        for _ in range(600):
            if timed_get(port)[1] is True:
                break
            time.sleep(0.1)
        else:
            raise SystemExit("colo serve did not answer /metrics within 60 s")
        lines.append("baseline /metrics: %.1f ms" % timed_get(port)[0])

        idle = open_idle(port, IDLE)
        slow = open_idle(port, SLOW)
        head = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"x" * 64
        stop = threading.Event()

        def trickle():
            for i in range(len(head)):
                if stop.wait(0.5):
                    return
                for c in slow:
                    try:
                        c.send(head[i:i + 1])
                    except OSError:
                        pass
        t = threading.Thread(target=trickle)
        t.start()
        time.sleep(1)
        got = [timed_get(port) for _ in range(TRIES)]
        stop.set()
        t.join()
        lines.append("same user, %d idle + %d slow TCP connections open: /metrics %s" % (
            IDLE, SLOW, ", ".join("%.1f ms%s" % (ms, "" if ok is True else " (%s)" % ok)
                                  for ms, ok in got)))
        for c in idle + slow:
            c.close()

        if os.geteuid() == 0:
            os.chmod(sock, 0o666)
            r, w = os.pipe()
            release_r, release_w = os.pipe()
            child = os.fork()
            if child == 0:
                os.close(r)
                os.close(release_w)
                os.setgid(65534)
                os.setuid(65534)
                held = open_idle(port, IDLE) + open_idle_unix(sock, IDLE)
                os.write(w, b"y")
                os.read(release_r, 1)
                del held
                os._exit(0)
            os.close(w)
            os.close(release_r)
            os.read(r, 1)
            time.sleep(1)
            got = [timed_get(port) for _ in range(TRIES)]
            queue = [timed_queue(colo, sock) for _ in range(TRIES)]
            os.close(release_w)
            os.waitpid(child, 0)
            lines.append("user nobody holding %d idle TCP and %d idle socket connections: "
                         "root's /metrics %s" % (IDLE, IDLE, ", ".join(
                             "%.1f ms%s" % (ms, "" if ok is True else " (%s)" % ok)
                             for ms, ok in got)))
            lines.append("  root's colo queue %s" % ", ".join(
                "%.0f ms%s" % (ms, "" if ok else " (failed)") for ms, ok in queue))
        else:
            lines.append("(not root: the second user's case was not run)")
    finally:
        serve.terminate()
        serve.wait(timeout=60)
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "http-flood.txt"), "w") as f:
        f.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
