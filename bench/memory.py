"""Memory of a build as the site grows: peak RSS and RSS growth per 1,000 pages; a 100,000-URL frontier.

1. **Site**: ``scrapy crawl docs`` on a synthetic docs site of ``--pages`` pages
   (default 20,000) generated on loopback: each page has headings, prose, a
   code block and a table, links to ten child pages, its neighbours and a
   30-link navigation bar. The crawl process's RSS is sampled twice a second
   against the documents written so far; growth per 1,000 pages is the slope
   of the peak RSS from 2,000 pages to the end (start-up and warm-up
   excluded), and over the second half of the crawl; ``commit`` is what the
   peak rose after the last document (the graph's files and ``sources.json``).
   The frontier (Scrapy's queue peaks at 15-25%) is in the early growth; ``--narrow``
   links each page to the next 24 instead of ten children: a frontier of a few dozen.
2. **Frontier**: one index page linking 100,000 pages, ``SKILLGRAPH_MAX_PAGES=50``:
   every link is learned and queued. Measured with Scrapy's memory queue,
   with ``JOBDIR`` (disk queue) and, when ``redis-server`` is installed, with
   the shared Redis frontier (the worker's RSS and Redis's ``used_memory``).

    .venv/bin/python bench/memory.py [--pages 20000] [--narrow] [--frontier 100000] [--no-frontier] [--json OUT]
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from loopback import LoopbackServer  # bench/loopback.py (scripts run with bench/ on sys.path)
from measure import tree_sample

ROOT = Path(__file__).resolve().parent.parent
WORDS = ["parser", "configuration", "request", "response", "scheduler", "middleware", "pipeline", "extension",
         "selector", "encoding", "timeout", "frontier", "document", "heading", "table", "value", "default",
         "option", "argument"]


def page(i: int, pages: int, frontier: int, narrow: bool = False) -> bytes:
    if i < 0:  # the frontier index: one page naming every page
        links = "".join(f'<li><a href="p/{n}.html">Page {n}</a></li>' for n in range(frontier))
        return (f"<html><head><title>Index</title></head><body><main><h1>Index</h1><ul>{links}</ul></main>"
                "</body></html>").encode()
    children = [n for n in (range(i + 1, i + 25) if narrow else range(10 * i + 1, 10 * i + 11)) if n < pages]
    nav = "".join(f'<li><a href="{n}.html">Section {n}</a></li>' for n in range(30))
    near = "".join(f'<a href="{n}.html">page {n}</a> ' for n in (i - 1, i + 1) if 0 <= n < pages)
    prose = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(120))
    rows = "".join(f"<tr><td>{WORDS[(i + r) % len(WORDS)]}</td><td>{r * i}</td></tr>" for r in range(8))
    sub = "".join(f'<li><a href="{n}.html#intro">Child topic {n}</a></li>' for n in children)
    body = (f"<h1>Topic {i}</h1><p>{prose}.</p><h2>Usage</h2><p>{prose[::-1]}.</p>"
            f"<pre><code>def topic_{i}(value):\n    return value * {i}\n</code></pre>"
            f"<h2>Options</h2><table><tr><th>name</th><th>value</th></tr>{rows}</table>"
            f"<h2>See also</h2><ul>{sub}</ul><p>{near}</p>")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Topic {i}</title></head><body>"
            f"<nav><ul>{nav}</ul></nav><main>{body}</main><footer>Synthetic docs</footer></body></html>").encode()


def serve(pages: int, frontier: int, narrow: bool = False) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            number = None
            if path == "/docs/index.html":
                number = -1
            elif path.startswith("/docs/p/") and path.endswith(".html"):
                try:
                    number = int(path[len("/docs/p/"):-len(".html")])
                except ValueError:
                    number = None
            if number is None or number >= max(pages, frontier):
                self.send_error(404)
                return
            body = page(number, pages, frontier, narrow)
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = LoopbackServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def crawl(url: str, tmp: Path, allow: str, settings: dict[str, object]) -> dict[str, object]:
    """Run one crawl; sample (documents written, RSS of the crawl process, PSS of its tree) twice a second."""
    items = tmp / "items"
    args = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={url}", "-a", "graph=synthetic",
            "-L", "WARNING"]
    base = {"DOWNLOAD_DELAY": 0, "AUTOTHROTTLE_ENABLED": False, "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
            "SKILLGRAPH_GRAPHS_DIR": tmp / "graphs", "SKILLGRAPH_ITEMS_DIR": items, "SKILLGRAPH_STATE_PATH":
            tmp / "state.sqlite3", "SKILLGRAPH_SSRF_ALLOWLIST": allow, "SKILLGRAPH_CRAWL_TIMEOUT": 0,
            "SKILLGRAPH_RENDER_ENABLED": False, "SKILLGRAPH_STATS_FILE": tmp / "stats.json",
            "SKILLGRAPH_SUMMARY_FORMAT": "none", "SKILLGRAPH_PROGRESS_ENABLED": False}
    for name, value in {**base, **settings}.items():
        args += ["-s", f"{name}={value}"]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL)
    samples: list[tuple[int, float]] = []
    peak_tree = 0
    cpu: dict[int, float] = {}
    docs = items / "docs"
    while proc.poll() is None:
        written = sum(1 for e in os.scandir(docs) if e.name.endswith(".json")) if docs.exists() else 0
        samples.append((written, rss_mb(proc.pid)))
        peak_tree = max(peak_tree, tree_sample(proc.pid, cpu))
        time.sleep(0.5)
    if proc.returncode not in (0, 2):  # 2: truncated at the page bound, on purpose in the frontier run
        raise SystemExit(f"crawl failed (exit {proc.returncode})")
    stats = json.loads((tmp / "stats.json").read_text())
    return {"samples": samples, "peak_rss_mb": round(max(r for _, r in samples), 1),
            "peak_tree_pss_mb": round(peak_tree / 2**20, 1), "pages": stats.get("skillgraph/graph/pages", 0),
            "seconds": round(float(stats.get("elapsed_time_seconds", 0)), 1)}


def growth(samples: list[tuple[int, float]], after: int = 2000) -> float | None:
    """MB of RSS per 1,000 documents, from ``after`` documents to the end (peak RSS so far, so noise only rises)."""
    peak, points = 0.0, []
    for written, rss in samples:
        peak = max(peak, rss)
        if written >= after:
            points.append((written, peak))
    if len(points) < 2 or points[-1][0] == points[0][0]:
        return None
    return round(1000 * (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0]), 3)


def curve(samples: list[tuple[int, float]], step: int) -> dict[int, float]:
    """Peak RSS so far (MB) when every ``step`` documents had been written: where the growth happens."""
    points: dict[int, float] = {}
    peak = 0.0
    for written, rss in samples:
        peak = max(peak, rss)
        points[written // step * step] = round(peak, 1)
    return points


def site_figures(run: dict[str, object], pages: int) -> dict[str, object]:
    """Growth figures of a site crawl (its samples dropped)."""
    samples: list[tuple[int, float]] = run.pop("samples")  # type: ignore[assignment]
    last = samples[-1][0] if samples else 0
    crawling = [r for w, r in samples if w < last]
    run["growth_mb_per_1000_pages"] = growth(samples)
    run["growth_second_half_mb_per_1000_pages"] = growth(samples, pages // 2)
    run["commit_mb"] = round(max(r for _, r in samples) - max(crawling, default=0.0), 1)
    run["peak_rss_by_pages"] = curve(samples, max(1, pages // 10))
    print(f"{run['site']}: {run['pages']} pages in {run['seconds']}s, peak RSS {run['peak_rss_mb']} MB (tree PSS "
          f"{run['peak_tree_pss_mb']} MB), growth {run['growth_mb_per_1000_pages']} MB / 1,000 pages (second half "
          f"{run['growth_second_half_mb_per_1000_pages']}; the commit {run['commit_mb']} MB)\n  peak RSS by "
          f"documents written: {run['peak_rss_by_pages']}", flush=True)
    return run


def redis_frontier(url: str, allow: str, frontier: int) -> dict[str, object] | None:
    if shutil.which("redis-server") is None:
        return None
    import redis

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory() as data:
        server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--dir", data], stdout=subprocess.DEVNULL)
        try:
            client = redis.Redis(port=port)
            for _ in range(100):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            peak = 0
            stop = threading.Event()

            def watch() -> None:
                nonlocal peak
                while not stop.wait(0.5):
                    peak = max(peak, int(client.info("memory")["used_memory"]))

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            with tempfile.TemporaryDirectory() as tmp:
                result = crawl(url, Path(tmp), allow, {"SKILLGRAPH_MAX_PAGES": 50,
                                                       "REDIS_URL": f"redis://127.0.0.1:{port}/0"})
            stop.set()
            watcher.join()
            result["redis_used_memory_peak_mb"] = round(peak / 2**20, 1)
            return result
        finally:
            server.terminate()
            server.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=20000)
    parser.add_argument("--frontier", type=int, default=100000)
    parser.add_argument("--frontier-only", action="store_true", help="skip the site crawl")
    parser.add_argument("--narrow", action="store_true", help="also crawl the narrow site (a small frontier)")
    parser.add_argument("--no-frontier", action="store_true", help="skip the 100,000-URL frontier runs")
    parser.add_argument("--json", type=Path)
    parser.add_argument("-s", dest="settings", action="append", default=[],
                        help="extra NAME=VALUE for the site crawls (e.g. SCRAPER_SLOT_MAX_ACTIVE_SIZE=1000000)")
    args = parser.parse_args()
    server = serve(args.pages, args.frontier)
    host, port = server.server_address[:2]
    allow = f"{host}:{port}"
    result: dict[str, object] = {}
    site: dict[str, object] = {"pages": args.pages}
    limit: dict[str, object] = {"SKILLGRAPH_MAX_PAGES": args.pages,
                                **dict(setting.split("=", 1) for setting in args.settings)}
    if not args.frontier_only:
        with tempfile.TemporaryDirectory() as tmp:
            site = crawl(f"http://{host}:{port}/docs/p/0.html", Path(tmp), allow, limit)
        result["site"] = site = site_figures({"site": "site", **site}, args.pages)
    if args.narrow:
        narrow = serve(args.pages, 0, narrow=True)
        where = "{}:{}".format(*narrow.server_address[:2])
        with tempfile.TemporaryDirectory() as tmp:  # depth grows by one every 24 pages: no DEPTH_LIMIT
            run = crawl(f"http://{where}/docs/p/0.html", Path(tmp), where, {**limit, "DEPTH_LIMIT": 0})
        narrow.shutdown()
        result["narrow site"] = site_figures({"site": "narrow site", **run}, args.pages)
    index = f"http://{host}:{port}/docs/index.html"
    frontiers = () if args.no_frontier else (("memory queue", {}), ("JOBDIR", {"JOBDIR": "JOB"}))
    for name, settings in frontiers:
        with tempfile.TemporaryDirectory() as tmp:
            if "JOBDIR" in settings:
                settings = {"JOBDIR": Path(tmp) / "job"}
            run = crawl(index, Path(tmp), allow, {"SKILLGRAPH_MAX_PAGES": 50, **settings})
        run.pop("samples")
        result[f"frontier {name}"] = run
        print(f"frontier of {args.frontier} URLs, {name}: peak RSS {run['peak_rss_mb']} MB in {run['seconds']}s",
              flush=True)
    shared = None if args.no_frontier else redis_frontier(index, allow, args.frontier)
    if shared is not None:
        shared.pop("samples")
        result["frontier redis"] = shared
        print(f"frontier of {args.frontier} URLs, Redis: worker peak RSS {shared['peak_rss_mb']} MB, "
              f"Redis used_memory peak {shared['redis_used_memory_peak_mb']} MB", flush=True)
    server.shutdown()
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if int(site["pages"]) >= 0.95 * args.pages else 1  # type: ignore[call-overload]


if __name__ == "__main__":
    sys.exit(main())
