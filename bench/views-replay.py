#!/usr/bin/env python3
"""Serves what bench/views-screens.sh captured to colo serve's dashboard page.

The GPU machine has no browser; this lets the dashboard drawn from a real
run's captured API answers be opened, and screenshot, on a machine that has
one. Nothing is recomputed: /api/snapshot answers snapshot-N.json (the
capture chosen with --capture), /api/jobs/ID answers job-ID.json, the page
and ECharts are the files the service itself served.

    python3 bench/views-replay.py OUTPUT_DIR [--port 8471] [--capture 2]
    chromium --headless --window-size=1400,1600 --screenshot=dashboard.png \\
        http://127.0.0.1:8471/dashboard/

Standard library only.
"""

import argparse
import http.server
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="an output directory of bench/views-screens.sh")
    parser.add_argument("--port", type=int, default=8471)
    parser.add_argument("--capture", default="2", help="which snapshot-N.json (1-3, or end)")
    args = parser.parse_args()
    root = os.path.abspath(args.dir)
    snapshot_path = os.path.join(root, "snapshot-%s.json" % args.capture)
    if not os.path.exists(snapshot_path):
        sys.exit("views-replay: %s has no %s: run bench/views-screens.sh first"
                 % (root, os.path.basename(snapshot_path)))

    # Kept captures (docs/results) leave out the page and ECharts, which the
    # service serves from these files of the repository.
    in_repo = {"dashboard.html": os.path.join(REPO, "src", "views", "dashboard.html"),
               "echarts.min.js": os.path.join(REPO, "third_party", "echarts", "echarts.min.js")}

    def read(name):
        path = os.path.join(root, name)
        if name in in_repo and not os.path.exists(path):
            path = in_repo[name]
        with open(path, "rb") as f:
            return f.read()

    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self, status, content_type, body):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802 (the standard library's name)
            path = self.path.split("?")[0]
            if path in ("/dashboard", "/dashboard/") or re.fullmatch(r"/dashboard/job/\d+", path):
                return self.answer(200, "text/html; charset=utf-8", read("dashboard.html"))
            if path == "/dashboard/echarts.min.js":
                return self.answer(200, "application/javascript", read("echarts.min.js"))
            if path == "/api/snapshot":
                return self.answer(200, "application/json", read(os.path.basename(snapshot_path)))
            if path == "/api/service":
                snap = json.loads(read(os.path.basename(snapshot_path)))
                body = {"time_ms": snap["time_ms"], "service": snap["service"]}
                return self.answer(200, "application/json", json.dumps(body).encode())
            match = re.fullmatch(r"/api/jobs/(\d+)", path)
            if match and os.path.exists(os.path.join(root, "job-%s.json" % match.group(1))):
                return self.answer(200, "application/json", read("job-%s.json" % match.group(1)))
            if re.fullmatch(r"/dashboard/runs/\d+/", path) and os.path.exists(
                    os.path.join(root, "report", "index.html")):
                return self.answer(200, "text/html; charset=utf-8",
                                   read(os.path.join("report", "index.html")))
            body = json.dumps({"error": "not captured: " + path}).encode()
            return self.answer(404, "application/json", body)

        def log_message(self, fmt, *values):
            sys.stderr.write("views-replay: " + (fmt % values) + "\n")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print("views-replay: http://127.0.0.1:%d/dashboard/ (capture %s of %s)"
          % (args.port, args.capture, root), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
