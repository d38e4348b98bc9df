"""Distributed throughput: 1, 2 and 4 workers sharing one Redis frontier against one local-mode crawl.

Every run crawls the same page set (the Python docs' ``c-api/`` subtree, 64
pages, Debian ``python3.11-doc``) from a loopback server that holds each
response ``--delay`` seconds, so a worker is I/O bound as against a remote
site; each worker gets ``--concurrency`` requests at a time and no politeness
delay. The rate is pages written (all workers' graphs together) over the wall
time from launch to the last worker's exit: process start-up and detection are
included, as a user would see them; the "spiders" figure is the same pages over
the time from the first spider opened to the last closed (no interpreter
start-up). Both count detection, which one worker runs while the others wait
for its profile (skillgraph/distributed/detection.py), or, in the "each"
runs (``SKILLGRAPH_DISTRIBUTED_SHARED_DETECTION=False``), every worker runs;
"probes" counts the detection requests the server saw (llms*.txt,
sitemap.xml). The baseline is a local-mode crawl (no Redis) in the same run;
ratios are printed against it.

    .venv/bin/python bench/distributed.py [--delay 0.2] [--concurrency 2] [--subtree c-api] [--shared-only]
                                          [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

from loopback import LoopbackServer  # bench/loopback.py (scripts run with bench/ on sys.path)

ROOT = Path(__file__).resolve().parent.parent
DOCS = Path("/usr/share/doc/python3.11/html")


PROBES = ("llms-full.txt", "llms.txt", "sitemap.xml")


class SlowHandler(SimpleHTTPRequestHandler):
    delay = 0.2
    probes: list[str] = []  # detection requests seen (the server's threads append)

    def do_GET(self) -> None:
        if self.path.endswith(PROBES):
            self.probes.append(self.path)
        time.sleep(self.delay)
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_redis(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(directory)], stdout=subprocess.DEVNULL)
    for _ in range(100):
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    return proc, f"redis://127.0.0.1:{port}/0"


def run(workers: int, url: str, port: int, concurrency: int, tmp: Path, redis_url: str | None,
        shared_detection: bool = True) -> dict[str, Any]:
    procs, stats_files = [], []
    SlowHandler.probes.clear()
    started = time.monotonic()
    for n in range(workers):
        out = tmp / f"w{n}"
        stats_files.append(out / "stats.json")
        args = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={url}", "-a", "graph=bench"]
        settings = {"DOWNLOAD_DELAY": 0, "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency, "LOG_LEVEL": "WARNING",
                    "SKILLGRAPH_GRAPHS_DIR": out / "graphs", "SKILLGRAPH_ITEMS_DIR": out / "items",
                    "SKILLGRAPH_STATE_PATH": out / "state.sqlite3", "SKILLGRAPH_STATS_FILE": out / "stats.json",
                    "SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{port}", "SKILLGRAPH_RENDER_ENABLED": False,
                    "SKILLGRAPH_RECENCY_HOURS": 0, "SKILLGRAPH_MAX_PAGES": 0, "SKILLGRAPH_CONDITIONAL_ENABLED": False}
        if redis_url:
            settings["REDIS_URL"] = redis_url
            settings["SKILLGRAPH_DISTRIBUTED_SHARED_DETECTION"] = shared_detection
        for key, value in settings.items():
            args += ["-s", f"{key}={value}"]
        procs.append(subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    codes = [proc.wait() for proc in procs]
    seconds = time.monotonic() - started
    stats = [json.loads(f.read_text()) for f in stats_files]
    shares = [int(s.get("skillgraph/graph/pages", 0)) for s in stats]
    # spider open to last close: without interpreter start-up (imports), with detection
    window = (max(datetime.fromisoformat(s["finish_time"]) for s in stats)
              - min(datetime.fromisoformat(s["start_time"]) for s in stats)).total_seconds()
    if any(codes) or not sum(shares):
        raise SystemExit(f"{workers} worker(s) failed: exit codes {codes}, pages {shares}")
    return {"workers": workers, "pages": sum(shares), "shares": shares, "probes": len(SlowHandler.probes),
            "seconds": round(seconds, 2),
            "rate": round(sum(shares) / seconds, 2), "window": round(window, 2),
            "window_rate": round(sum(shares) / window, 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--subtree", default="c-api", help="Python docs folder to crawl (c-api: 64 pages, "
                        "library: about 300)")
    parser.add_argument("--shared-only", action="store_true", help="skip the every-worker-detects runs")
    parser.add_argument("--json")
    opts = parser.parse_args()
    if shutil.which("redis-server") is None:
        raise SystemExit("redis-server missing (.ci/apt-packages.txt)")
    SlowHandler.delay = opts.delay
    server = LoopbackServer(("127.0.0.1", 0), partial(SlowHandler, directory=str(DOCS)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = int(server.server_address[1])
    url = f"http://127.0.0.1:{port}/{opts.subtree.strip('/')}/"
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        redis, redis_url = start_redis(tmp)
        try:
            results = [{"mode": "local", **run(1, url, port, opts.concurrency, tmp / "local", None)}]
            results.append({"mode": "redis", **run(1, url, port, opts.concurrency, tmp / "redis1", redis_url)})
            for workers in (2, 4):
                for mode, shared in (("each", False), ("shared", True))[opts.shared_only:]:
                    result = run(workers, url, port, opts.concurrency, tmp / f"{mode}{workers}", redis_url, shared)
                    results.append({"mode": mode, **result})
        finally:
            redis.terminate()
            redis.wait()
            server.shutdown()
    base, base_window = results[0]["rate"], results[0]["window_rate"]
    print(f"{os.cpu_count()} CPUs; delay {opts.delay}s per response; {opts.concurrency} requests per worker")
    for r in results:
        r["ratio"] = round(r["rate"] / base, 2)
        r["window_ratio"] = round(r["window_rate"] / base_window, 2)
        print(f"{r['mode']:6} workers={r['workers']} pages={r['pages']} shares={r['shares']} probes={r['probes']} "
              f"wall {r['seconds']:6.2f}s {r['rate']:6.2f} pages/s x{r['ratio']:.2f} | "
              f"spiders {r['window']:6.2f}s {r['window_rate']:6.2f} pages/s x{r['window_ratio']:.2f}")
    if opts.json:
        Path(opts.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
