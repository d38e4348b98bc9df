"""Redis unreachable when a crawl starts: a local crawl, one warning, and ``scrapy replay`` queues it later."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socketserver
import threading
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider, signals
from scrapy.core.scheduler import Scheduler
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from skillgraph.distributed import SCHEDULER, UNAVAILABLE_STAT, redis_unavailable_at_start, wait_for_redis
from skillgraph.distributed.scheduler import DistributedScheduler
from skillgraph.items import DocumentItem, sha256_text
from skillgraph.pipelines.dedup import ContentDedupPipeline
from skillgraph.pipelines.dual_write import DualWritePipeline
from tests.conftest import run_scrapy
from tests.redis_server import RedisServer
from tests.servers import LoopbackHTTPServer, SiteServer, free_port

REDIS_WARNING = re.compile(r"^\S+ \S+ \[[^\]]+\] WARNING: .*redis", re.IGNORECASE | re.MULTILINE)


class DeadRedis(LoopbackHTTPServer):
    """Accepts TCP connections and closes them at once (a Redis that never answers), counting them."""

    def __init__(self) -> None:
        self.connections = 0
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                owner.connections += 1

        super().__init__(Handler, socketserver.ThreadingTCPServer)

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


@pytest.fixture
def dead_redis() -> Any:
    server = DeadRedis()
    yield server
    server.stop()


def replay(redis_url: str, items: Path) -> tuple[int, list[dict[str, Any]], str]:
    proc = run_scrapy(["replay", "-s", f"REDIS_URL={redis_url}", "-s", f"SKILLGRAPH_ITEMS_DIR={items}"], timeout=120)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")], proc.stderr


# the acceptance: closed port at start, crawl on disk, then replay -------------------------------------------------


def test_crawl_with_redis_down_at_start_runs_locally_then_replay_queues_each_document_once(
        crawl: Any, sites: dict[str, SiteServer], tmp_path: Path) -> None:
    port = free_port()
    result = crawl("docs", url=sites["crawl_site"].url + "docs/", settings={
        "REDIS_URL": f"redis://127.0.0.1:{port}/0", "SKILLGRAPH_RECENCY_HOURS": 0})
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log
    stats = result.stats
    assert stats["skillgraph/graph/committed"] == 1 and stats[UNAVAILABLE_STAT] == 1
    assert stats["scheduler/enqueued/memory"] >= 7, "Scrapy's own scheduler held the frontier"
    assert not any(key.startswith("scheduler/enqueued/redis") for key in stats)
    warnings = REDIS_WARNING.findall(result.log)
    assert len(warnings) == 1 and "local frontier" in warnings[0], warnings
    assert "skillgraph/state/redis_error" not in stats and "skillgraph/distributed/detect/redis_error" not in stats
    pages = result.sources["pages"]
    assert len(pages) >= 7, "docs/ and its six guides"
    assert any(w["kind"] == "redis-unavailable" for w in result.sources["warnings"])
    items = tmp_path / "items" / "docs"
    docs = {p.stem: json.loads(p.read_text()) for p in items.glob("*.json")}
    assert {d["url"] for d in docs.values()} <= {p["url"] for p in pages} and len(docs) >= 7
    assert stats["skillgraph/dual_write/pending"] == stats["skillgraph/dual_write/disk_written"] == len(docs)
    assert "skillgraph/dual_write/pushed" not in stats

    redis = RedisServer(tmp_path)
    redis.port = port  # Redis comes up where the crawl looked for it
    redis.start()
    try:
        code, lines, err = replay(redis.url, tmp_path / "items")
        assert code == 0, err[-3000:]
        assert lines == [{"spider": "docs", "pushed": len(docs), "already_queued": 0, "superseded": 0, "missing": 0,
                          "unreadable": 0}]
        client = redis.client()
        queued = [json.loads(raw) for raw in client.lrange("skillgraph:queue", 0, -1)]
        assert sorted(d["sha256"] for d in queued) == sorted(docs), "each disk item queued exactly once"
        assert all(client.get(f"skillgraph:content_hash:{d['url']}") == d["sha256"].encode() for d in queued)
        assert not list((items / "pending").iterdir()), "the markers are settled"
        code, lines, err = replay(redis.url, tmp_path / "items")
        assert code == 0 and lines[0]["pushed"] == 0 and lines[0]["already_queued"] == len(docs), err[-3000:]
        assert client.llen("skillgraph:queue") == len(docs), "a second replay adds nothing"
    finally:
        redis.stop()


def test_replay_with_redis_still_down_fails_in_one_line_and_keeps_the_items(tmp_path: Path) -> None:
    items = tmp_path / "items" / "docs"
    items.mkdir(parents=True)
    doc = {"url": "http://127.0.0.1:1/a.html", "markdown": "# A\n", "sha256": sha256_text("# A\n")}
    (items / f"{doc['sha256']}.json").write_text(json.dumps(doc))
    code, lines, err = replay(f"redis://127.0.0.1:{free_port()}/0", tmp_path / "items")
    assert code == 1 and lines == []
    assert "Traceback" not in err and "scrapy replay: Redis at 127.0.0.1:" in err
    assert (items / f"{doc['sha256']}.json").exists()


# the wait at start ------------------------------------------------------------------------------------------------


def test_wait_for_redis_waits_for_a_server_that_starts_late(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path)
    starter = threading.Timer(0.5, redis.start)
    starter.start()
    try:
        assert asyncio.run(wait_for_redis(redis.url, 30.0)) is None, "answered within the wait"
    finally:
        starter.join()
        redis.stop()


def test_wait_for_redis_gives_up_with_the_error(dead_redis: DeadRedis) -> None:
    error = asyncio.run(wait_for_redis(dead_redis.redis_url, 2.0))
    assert error and "closed" in error.lower(), error
    assert dead_redis.connections >= 2, "tried again during the wait"
    closed = asyncio.run(wait_for_redis(f"redis://127.0.0.1:{free_port()}/0", 0))
    assert closed and ("111" in closed or "refused" in closed.lower()), closed


# the scheduler: Scrapy's own, same order ---------------------------------------------------------------------------


class UnitSpider(Spider):
    name = "unit"


def drain(scheduler: Any) -> list[str]:
    urls = []
    while (request := scheduler.next_request()) is not None:
        urls.append(request.url)
    return urls


#: A local crawl's order settings (breadth first); a priority queue that needs no running engine
ORDER = {"DEPTH_PRIORITY": 1, "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
         "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue"}


def test_scheduler_falls_back_to_scrapys_own_with_the_same_order(dead_redis: DeadRedis,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    crawler = get_crawler(UnitSpider, {"REDIS_URL": dead_redis.redis_url, "SCHEDULER": SCHEDULER,
                                       "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
                                       "SKILLGRAPH_DISTRIBUTED_CONNECT_TIMEOUT": 0,
                                       **ORDER})
    spider = crawler.spider = UnitSpider.from_crawler(crawler)
    crawler.stats.open_spider()
    local = Scheduler.from_crawler(get_crawler(UnitSpider, ORDER))
    requests = [Request(f"http://127.0.0.1:1/{n}.html", priority=p) for n, p in
                enumerate((0, -1, 0, 3, -1, 0, 3))]

    async def scenario() -> DistributedScheduler:
        scheduler = DistributedScheduler.from_crawler(crawler)  # its heartbeat needs a running loop
        with caplog.at_level(logging.WARNING):
            await scheduler._open(spider)
        local.open(spider)
        return scheduler

    scheduler = asyncio.run(scenario())
    assert redis_unavailable_at_start(crawler) and crawler.stats.get_value(UNAVAILABLE_STAT) == 1
    assert isinstance(scheduler.fallback, Scheduler)
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
    assert all(scheduler.enqueue_request(r) for r in requests)
    assert not scheduler.enqueue_request(requests[0].replace()), "Scrapy's dupefilter, in memory"
    for request in requests:
        local.enqueue_request(request)
    assert len(scheduler) == len(requests) and scheduler.has_pending_requests()
    assert drain(scheduler) == drain(local), "the order a local crawl would use"
    assert crawler.stats.get_value("scheduler/enqueued/memory") == len(requests)
    connections = dead_redis.connections
    scheduler.close("finished")
    assert dead_redis.connections == connections == 1, "one attempt at start (timeout 0), none after"


# the dual write: disk only, Redis left alone --------------------------------------------------------------------


def document(n: int) -> DocumentItem:
    url = f"http://127.0.0.1:1/docs/p{n}.html"
    return DocumentItem(url=url, title=f"P{n}", markdown=f"# P{n}\n\nbody {n}\n", fetched_at="2026-11-29T12:00:00Z",
                        source=url, domain="127.0.0.1", strategy="crawl", tier="html")


def test_dual_write_keeps_documents_on_disk_without_touching_redis(tmp_path: Path, dead_redis: DeadRedis,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    crawler = get_crawler(UnitSpider, {"REDIS_URL": dead_redis.redis_url, "SKILLGRAPH_ITEMS_DIR": str(tmp_path),
                                       "SKILLGRAPH_STATE_PATH": str(tmp_path / "state.sqlite3"),
                                       "SKILLGRAPH_DISTRIBUTED_CONNECT_TIMEOUT": 0.3})
    crawler.spider = UnitSpider()
    dedup = build_from_crawler(ContentDedupPipeline, crawler)
    write = build_from_crawler(DualWritePipeline, crawler)
    write.open_spider()
    docs = [document(n) for n in range(6)] + [document(0)]  # the last one: the same document again

    async def scenario() -> None:
        with caplog.at_level(logging.WARNING):
            await crawler.signals.send_catch_log_async(signals.spider_opened, spider=crawler.spider)
            for doc in docs:
                await write.process_item(await dedup.process_item(doc))

    at_start = dead_redis.connections
    asyncio.run(scenario())
    stats = crawler.stats
    assert stats.get_value(UNAVAILABLE_STAT) == 1
    assert stats.get_value("skillgraph/dual_write/disk_written") == 6
    assert stats.get_value("skillgraph/dual_write/pending") == 6
    assert stats.get_value("skillgraph/dual_write/already_saved") == 1
    assert not stats.get_value("skillgraph/dual_write/pushed") and not stats.get_value("skillgraph/state/redis_error")
    assert sorted(p.name for p in (tmp_path / "unit" / "pending").iterdir()) == sorted(
        sha256_text(d.markdown) for d in docs[:6])
    tried = dead_redis.connections - at_start
    assert 1 <= tried <= 4, "only the wait at start, never per document"
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(messages) == 1 and "replay" in messages[0], messages
