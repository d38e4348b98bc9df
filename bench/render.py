"""Render tier cost: 200 browser renders against the HTML tier, same content, same run.

A loopback site holds 200 client-side-rendered pages (empty ``#root``, a module
script that fetches the page's own JSON and mounts it) and the same 200 pages
as static HTML. ``scrapy crawl docs`` builds each (sitemap strategy, the same
settings): the static set ends on the ``html`` tier, the CSR set on ``render``
(real Chromium via scrapy-playwright). Printed: pages/s of each and their ratio,
peak memory (PSS of the crawl process and every descendant: Playwright's driver,
Chromium's processes), and memory flatness over the renders: the mean memory
while renders 1-50 ran against renders 151-200 (each render fetches its page's
JSON once, so the server counts renders as they happen). pages/s is the steady
rate, between the 10th and the 90th percentile page (start-up excluded); the
wall-clock rate, start-up included, is printed too.

    .venv/bin/python bench/render.py [--pages 200] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

from loopback import LoopbackServer  # bench/loopback.py (scripts run with bench/ on sys.path)

ROOT = Path(__file__).resolve().parent.parent
SHELL = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Page {n}</title>
<script type="module" src="app.js"></script></head><body><div id="root"></div></body></html>"""
APP = """const n = location.pathname.match(/page-(\\d+)/)[1];
const page = await (await fetch(`data/page-${n}.json`)).json();
document.title = page.title;
document.getElementById("root").innerHTML = page.html;"""
STATIC = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>
<body><div id="root">{html}</div></body></html>"""


def page_content(n: int) -> dict[str, str]:
    paragraphs = "".join(
        f"<p>Section {i} of page {n} explains how the scheduler orders job {i} by its next run time, "
        f"why a failing job is retried with backoff, and how to cancel it by name.</p>" for i in range(6))
    code = f"scheduler.every({n})(job_{n})\nscheduler.run(once=True)\n"
    pre = f'<pre><code class="language-python">{code}</code></pre>'
    html = f"<main><h1>Scheduler guide, part {n}</h1>{paragraphs}{pre}</main>"
    return {"title": f"Scheduler guide, part {n}", "html": html}


def build_site(root: Path, pages: int, origin: str) -> None:
    for kind in ("csr", "static"):
        (root / kind / "data").mkdir(parents=True)
    (root / "csr" / "app.js").write_text(APP)
    for n in range(pages):
        content = page_content(n)
        (root / "csr" / f"page-{n}.html").write_text(SHELL.format(n=n))
        (root / "csr" / "data" / f"page-{n}.json").write_text(json.dumps(content))
        (root / "static" / f"page-{n}.html").write_text(STATIC.format(**content))
    for kind in ("csr", "static"):
        urls = "".join(f"<url><loc>{origin}/{kind}/page-{n}.html</loc></url>" for n in range(pages))
        (root / kind / "sitemap.xml").write_text(
            f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>')


class Server(LoopbackServer):
    done = 0  #: pages served to their final tier: static pages, or render JSON fetches
    times: list[float]


class Handler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        if "/data/page-" in self.path or "/static/page-" in self.path:
            self.server.done += 1  # type: ignore[attr-defined]
            self.server.times.append(time.monotonic())  # type: ignore[attr-defined]
        super().do_GET()


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(children.get(current, []))
    return found


def pss_mb(pid: int) -> float:
    total = 0
    for p in descendants(pid):
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def crawl(kind: str, origin: str, server: Server, work: Path, extra: dict[str, str]) -> dict[str, Any]:
    stats_file = work / f"stats-{kind}.json"
    settings = {"DOWNLOAD_DELAY": "0", "CONCURRENT_REQUESTS_PER_DOMAIN": "8", "LOG_LEVEL": "WARNING",
                "SKILLGRAPH_GRAPHS_DIR": str(work / "graphs"), "SKILLGRAPH_STATS_FILE": str(stats_file),
                "SKILLGRAPH_ITEMS_DIR": str(work / "items"), "SKILLGRAPH_STATE_PATH": str(work / "state.sqlite3"),
                "SKILLGRAPH_RECENCY_HOURS": "0", "SKILLGRAPH_SSRF_ALLOWLIST": origin.split("//")[1],
                "SKILLGRAPH_MAX_PAGES": "0", **extra}
    args = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={origin}/{kind}/page-0.html",
            "-a", f"graph=bench-{kind}"]
    for key, value in settings.items():
        args += ["-s", f"{key}={value}"]
    server.done, server.times = 0, []
    samples: list[tuple[int, float]] = []
    start = time.monotonic()
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while proc.poll() is None:
        samples.append((server.done, pss_mb(proc.pid)))
        time.sleep(0.25)
    wall = time.monotonic() - start
    log = proc.stderr.read() if proc.stderr else ""
    if proc.returncode != 0 or not stats_file.exists():
        raise SystemExit(f"{kind} crawl failed ({proc.returncode}):\n{log[-3000:]}")
    stats = json.loads(stats_file.read_text())
    tiers = {k.rsplit("/", 1)[1]: v for k, v in stats.items() if k.startswith("skillgraph/tiers/document/")}
    pages = stats.get("skillgraph/graph/pages", 0)
    return {"kind": kind, "pages": pages, "tiers": tiers, "wall_s": round(wall, 2),
            "wall_pages_per_s": round(pages / wall, 2), "pages_per_s": steady_rate(server.times),
            "peak_mb": round(max(m for _, m in samples), 1), "samples": samples,
            "pages_closed": stats.get("playwright/page_count/closed"),
            "pages_opened": stats.get("playwright/page_count")}


def steady_rate(times: list[float]) -> float:
    """Pages per second between the 10th and the 90th percentile page (start-up and tail excluded)."""
    times = sorted(times)
    lo, hi = len(times) // 10, len(times) * 9 // 10
    return round((hi - lo) / (times[hi] - times[lo]), 2)


def flatness(samples: list[tuple[int, float]], pages: int) -> tuple[float, float]:
    """Mean memory while renders 1-50 ran, and while the last 50 ran."""
    window = min(50, pages // 4)
    first = [m for r, m in samples if 0 < r <= window]
    last = [m for r, m in samples if pages - window < r <= pages]
    return statistics.mean(first), statistics.mean(last)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        server = Server(("127.0.0.1", 0), partial(Handler, directory=str(work / "site")))
        origin = f"http://127.0.0.1:{server.server_address[1]}"
        build_site(work / "site", options.pages, origin)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        html = crawl("static", origin, server, work, {"SKILLGRAPH_RENDER_ENABLED": "False"})
        render = crawl("csr", origin, server, work, {})
        server.shutdown()
    for result in (html, render):
        if result["pages"] != options.pages:
            raise SystemExit(f"{result['kind']}: {result['pages']} pages, expected {options.pages}: {result['tiers']}")
    first, last = flatness(render["samples"], options.pages)
    report = {
        "pages": options.pages,
        "html_tier": {k: v for k, v in html.items() if k != "samples"},
        "render_tier": {k: v for k, v in render.items() if k != "samples"},
        "speed_ratio_render_vs_html": round(render["pages_per_s"] / html["pages_per_s"], 3),
        "peak_memory_ratio_render_vs_html": round(render["peak_mb"] / html["peak_mb"], 2),
        "memory_first_50_renders_mb": round(first, 1),
        "memory_last_50_renders_mb": round(last, 1),
        "memory_growth_last_vs_first": round(last / first, 3),
    }
    print(json.dumps(report, indent=2))
    if options.json:
        options.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
