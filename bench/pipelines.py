"""Per-item cost of the dedup / dual-write pipelines (and the recency / conditional middlewares).

Two measurements, each against a baseline measured in the same run:

1. crawls: ``scrapy crawl docs`` over the real Python docs (Debian python3.11-doc)
   served on 127.0.0.1, with the issue-5 components switched off (baseline), in
   local mode (SQLite + disk items), in Redis mode (real redis-server: + queue),
   and a local *recrawl* (conditional GETs, 304s). Crawl time is Scrapy's own
   ``elapsed_time_seconds``; rounds alternate the configurations; medians.
2. in-process: N documents through ContentDedupPipeline + DualWritePipeline
   (local, Redis) against the GraphWriterPipeline alone; and SQLite call times
   (why they run on a worker thread).

Usage: .venv/bin/python bench/pipelines.py [--pages 120] [--rounds 3] [--items 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scrapy import Spider  # noqa: E402
from scrapy.utils.misc import build_from_crawler  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

from skillgraph.build.state import SqliteState  # noqa: E402
from skillgraph.items import DocumentItem  # noqa: E402
from skillgraph.pipelines.dedup import ContentDedupPipeline  # noqa: E402
from skillgraph.pipelines.dual_write import DualWritePipeline  # noqa: E402
from skillgraph.pipelines.graph import GraphWriterPipeline  # noqa: E402
from tests.conftest import PYTHON_DOCS  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402
from tests.servers import SiteServer  # noqa: E402

OFF = {
    "ITEM_PIPELINES": {"skillgraph.pipelines.dedup.ContentDedupPipeline": None,
                       "skillgraph.pipelines.dual_write.DualWritePipeline": None},
    "DOWNLOADER_MIDDLEWARES": {"skillgraph.middlewares.recency.RecencyMiddleware": None,
                               "skillgraph.middlewares.conditional.ConditionalMiddleware": None},
    "SPIDER_MIDDLEWARES": {"skillgraph.middlewares.resume.ResumeJournal": None},
}


def crawl(site: SiteServer, work: Path, pages: int, extra: dict[str, Any]) -> dict[str, Any]:
    stats = work / "stats.json"
    settings: dict[str, Any] = {
        "DOWNLOAD_DELAY": 0, "CONCURRENT_REQUESTS_PER_DOMAIN": 16, "LOG_LEVEL": "WARNING",
        "SKILLGRAPH_GRAPHS_DIR": work / "graphs", "SKILLGRAPH_ITEMS_DIR": work / "items",
        "SKILLGRAPH_STATE_PATH": work / "state.sqlite3", "SKILLGRAPH_STATS_FILE": stats,
        "SKILLGRAPH_MAX_PAGES": pages, "SKILLGRAPH_RENDER_ENABLED": False, "SKILLGRAPH_RECENCY_HOURS": 0,
        "SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{site.port}", **extra}
    args = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={site.url}library/index.html",
            "-a", "graph=bench"]
    for key, value in settings.items():
        args += ["-s", f"{key}={json.dumps(value) if isinstance(value, dict) else value}"]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 or not stats.exists():
        raise SystemExit(f"crawl failed:\n{proc.stderr[-3000:]}")
    return json.loads(stats.read_text())  # type: ignore[no-any-return]


def crawls(pages: int, rounds: int, redis: RedisServer) -> None:
    site = SiteServer(PYTHON_DOCS)
    per_item: dict[str, list[float]] = {"baseline (components off)": [], "local (SQLite + disk)": [],
                                        "redis (+ queue)": [], "local recrawl (304s)": []}
    items: dict[str, int] = {}
    try:
        for _ in range(rounds):
            for label, extra, again in (("baseline (components off)", OFF, False),
                                        ("local (SQLite + disk)", {}, True),
                                        ("redis (+ queue)", {"REDIS_URL": redis.url}, False)):
                redis.flush()
                with tempfile.TemporaryDirectory() as tmp:
                    stats = crawl(site, Path(tmp), pages, extra)
                    per_item[label].append(stats["elapsed_time_seconds"] / stats["skillgraph/graph/pages"])
                    items[label] = stats["skillgraph/graph/pages"]
                    if again:
                        stats = crawl(site, Path(tmp), pages, extra)
                        label = "local recrawl (304s)"
                        per_item[label].append(stats["elapsed_time_seconds"] / stats["skillgraph/graph/pages"])
                        items[label] = stats.get("skillgraph/conditional/not_modified", 0)
    finally:
        site.stop()
    base = statistics.median(per_item["baseline (components off)"])
    print(f"\n## crawls: {pages} pages of the Python docs, {rounds} rounds, medians (elapsed_time_seconds / page)")
    print(f"{'configuration':32} {'ms/page':>9} {'ratio':>7}  pages (304s for the recrawl)")
    for label, values in per_item.items():
        value = statistics.median(values)
        print(f"{label:32} {value * 1000:9.2f} {value / base:7.2f}  {items[label]}")


def document(i: int) -> DocumentItem:
    text = f"# Page {i}\n\n" + ("Some documentation prose with `code` and a [link](x.html). " * 40) + "\n"
    url = f"http://127.0.0.1:1/docs/p{i}.html"
    return DocumentItem(url=url, title=f"Page {i}", markdown=text, fetched_at="2026-11-29T12:00:00Z",
                        source=url, domain="127.0.0.1", strategy="crawl", tier="html")


class GraphSpider(Spider):
    name = "bench"
    graph_name = "bench"


async def run_stage(n: int, tmp: Path, settings: dict[str, Any], stages: str) -> float:
    crawler = get_crawler(GraphSpider, {"SKILLGRAPH_GRAPHS_DIR": str(tmp / "graphs"),
                                        "SKILLGRAPH_ITEMS_DIR": str(tmp / "items"),
                                        "SKILLGRAPH_STATE_PATH": str(tmp / "state.sqlite3"), **settings})
    crawler.spider = GraphSpider()
    chain: list[Any] = []
    if "dedup" in stages:
        chain += [build_from_crawler(ContentDedupPipeline, crawler), build_from_crawler(DualWritePipeline, crawler)]
        chain[1].open_spider()
    if "graph" in stages:
        graph = build_from_crawler(GraphWriterPipeline, crawler)
        graph.open_spider()
        chain.append(graph)
    docs = [document(i) for i in range(n)]
    started = time.perf_counter()
    for doc in docs:
        item: Any = doc
        for stage in chain:
            result = stage.process_item(item)
            item = await result if asyncio.iscoroutine(result) else result
    return (time.perf_counter() - started) / n


def in_process(n: int, redis: RedisServer) -> None:
    results = {}
    for label, settings, stages in (("graph writer alone (baseline)", {}, "graph"),
                                    ("dedup + dual write, local", {}, "dedup"),
                                    ("dedup + dual write, redis", {"REDIS_URL": redis.url}, "dedup")):
        redis.flush()
        with tempfile.TemporaryDirectory() as tmp:
            results[label] = asyncio.run(run_stage(n, Path(tmp), settings, stages))
    base = results["graph writer alone (baseline)"]
    print(f"\n## in-process: {n} documents (~2.4 kB markdown each) per stage")
    print(f"{'stage':32} {'us/item':>9} {'ratio':>7}")
    for label, value in results.items():
        print(f"{label:32} {value * 1e6:9.0f} {value / base:7.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        state = SqliteState(Path(tmp) / "state.sqlite3")
        worst, total = 0.0, 0.0
        for i in range(n):
            started = time.perf_counter()
            state._put("INSERT OR REPLACE INTO content_hash VALUES (?, ?)", f"u{i}", "ab" * 32)
            state._get("SELECT sha256 FROM content_hash WHERE url = ?", f"u{i}")
            spent = time.perf_counter() - started
            worst, total = max(worst, spent), total + spent
        asyncio.run(state.close())
    print(f"SQLite set+get (on the state's worker thread, not the reactor): mean {total / n * 1e6:.0f} us, "
          f"worst {worst * 1e3:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--items", type=int, default=1000)
    opts = parser.parse_args()
    if shutil.which("redis-server") is None or not (PYTHON_DOCS / "index.html").exists():
        raise SystemExit("needs redis-server and python3.11-doc")
    with tempfile.TemporaryDirectory() as tmp:
        redis = RedisServer(Path(tmp))
        redis.start()
        try:
            in_process(opts.items, redis)
            crawls(opts.pages, opts.rounds, redis)
        finally:
            if redis.proc is not None:
                redis.proc.terminate()
                redis.proc.wait()


if __name__ == "__main__":
    main()
