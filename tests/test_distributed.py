"""Distributed mode against a real redis-server: shared frontier, reliable pop, idle close, JSON frontier."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.settings import Settings
from scrapy.utils.request import request_from_dict
from scrapy.utils.test import get_crawler

from skillgraph.addon import Addon
from skillgraph.distributed import serializer
from skillgraph.distributed.frontier import Frontier, FrontierKeys
from skillgraph.urls import default_graph_name
from tests.conftest import PYTHON_DOCS, ROOT, TEST_SETTINGS
from tests.redis_server import RedisServer, redis_server  # noqa: F401 - fixture
from tests.servers import Rule, SiteServer

SUBTREE = "c-api/"  # 64 pages of the real Python docs: a few seconds per crawl


class PageSpider(Spider):
    name = "unit"

    def parse_page(self, response: Any, follow: bool = False) -> None:
        pass


@pytest.fixture
def docs_server() -> Any:
    """The Python docs, each response a little slow: two workers' crawls overlap."""
    server = SiteServer(PYTHON_DOCS, default=Rule(delay=0.1))
    yield server
    server.stop()


def start_worker(tmp: Path, name: str, url: str, redis_url: str, server: SiteServer,
                 **settings: Any) -> subprocess.Popen[str]:
    merged = {**TEST_SETTINGS, "CONCURRENT_REQUESTS_PER_DOMAIN": 2, "REDIS_URL": redis_url,
              "SKILLGRAPH_GRAPHS_DIR": tmp / name / "graphs", "SKILLGRAPH_ITEMS_DIR": tmp / name / "items",
              "SKILLGRAPH_STATE_PATH": tmp / name / "state.sqlite3", "SKILLGRAPH_STATS_FILE": tmp / name / "stats.json",
              "SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{server.port}", "SKILLGRAPH_RENDER_ENABLED": False,
              "SKILLGRAPH_DISTRIBUTED_WORKER_TIMEOUT": 2, **settings}
    args = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={url}"]
    for key, value in merged.items():
        args += ["-s", f"{key}={value}"]
    log = open(tmp / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(args, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ})


def stats_of(tmp: Path, name: str) -> dict[str, Any]:
    return json.loads((tmp / name / "stats.json").read_text())


def item_urls(tmp: Path, name: str) -> list[str]:
    return [json.loads(p.read_text())["url"] for p in (tmp / name / "items" / "docs").glob("*.json")]


def queued_urls(server: RedisServer) -> list[str]:
    return [json.loads(raw)["url"] for raw in server.client().lrange("skillgraph:queue", 0, -1)]


def page_paths(server: SiteServer, start: str) -> Counter[str]:
    """Page fetches of the subtree (probes of robots.txt, llms*.txt and sitemaps are not pages)."""
    return Counter(p for p in server.paths() if p.startswith(start) and p.endswith(".html"))


# unit: settings, serializer, frontier ---------------------------------------------------------------------------


def addon_settings(**values: Any) -> Settings:
    settings = Settings(values, priority="cmdline")
    Addon().update_settings(settings)
    return settings


def test_distributed_mode_only_with_redis_url_and_enabled() -> None:
    assert addon_settings().get("SCHEDULER") != "skillgraph.distributed.scheduler.DistributedScheduler"
    on = addon_settings(REDIS_URL="redis://127.0.0.1:1/0")
    assert on.get("SCHEDULER") == "skillgraph.distributed.scheduler.DistributedScheduler"
    assert on.get("SCHEDULER_SERIALIZER") == "skillgraph.distributed.serializer"
    assert on.get("DUPEFILTER_CLASS") == "scrapy_redis.dupefilter.RFPDupeFilter"
    off = addon_settings(REDIS_URL="redis://127.0.0.1:1/0", SKILLGRAPH_DISTRIBUTED_ENABLED=False)
    assert off.get("SCHEDULER") != "skillgraph.distributed.scheduler.DistributedScheduler"


def test_serializer_is_json_and_round_trips_requests() -> None:
    spider = PageSpider()
    request = Request("http://127.0.0.1:1/a.html", callback=spider.parse_page, cb_kwargs={"follow": True},
                      headers={"Accept": "text/markdown"}, body=b"\x00\xff", priority=7,
                      meta={"skillgraph_attempts": [{"tier": "html", "score": 0.1}]})
    data = serializer.dumps(request.to_dict(spider=spider))
    assert json.loads(data)["callback"] == "parse_page"
    again = request_from_dict(serializer.loads(data), spider=spider)
    assert (again.url, again.body, again.priority, again.cb_kwargs) == (request.url, b"\x00\xff", 7, {"follow": True})
    assert again.headers["Accept"] == b"text/markdown" and again.meta == request.meta
    assert again.callback == spider.parse_page
    with pytest.raises(TypeError):
        serializer.dumps({"meta": {"page_method": object()}})


def frontier(server: RedisServer, worker: str) -> Frontier:
    spider = PageSpider()
    spider.crawler = get_crawler(PageSpider)
    return Frontier(server.client(), spider, FrontierKeys.for_name("unit"), worker, serializer)


def test_pop_moves_to_in_flight_ack_removes_reaper_requeues(redis_server: RedisServer) -> None:  # noqa: F811
    a, b = frontier(redis_server, "a"), frontier(redis_server, "b")
    client = redis_server.client()
    a.heartbeat()
    b.heartbeat()
    for n, priority in ((1, 0), (2, 10), (3, 0)):
        a.push(Request(f"http://127.0.0.1:1/{n}.html", priority=priority))
    first = a.pop()
    assert first is not None and first.url.endswith("/2.html"), "highest priority first"
    second = a.pop()
    assert second is not None and len(a) == 1 and client.hlen("unit:inflight:a") == 2
    assert a.progress() == (1, 2)
    a.ack([first])
    assert client.hlen("unit:inflight:a") == 1 and a.progress() == (1, 1)
    # "a" dies: after the timeout, "b" returns its unacknowledged request to the queue, with its priority
    assert b.reap(timeout=60) == (0, 0), "a live worker is never reaped"
    time.sleep(0.3)
    b.heartbeat()
    assert b.reap(timeout=0.2) == (1, 1)
    assert not client.exists("unit:inflight:a") and len(b) == 2
    urls = {b.pop().url, b.pop().url}  # type: ignore[union-attr]
    assert urls == {second.url, "http://127.0.0.1:1/3.html"}
    # b leaves with one request in flight: it goes back; as last worker out, b clears the frontier
    assert b.release(timeout=60, clear_if_last=False) == (2, False)
    assert len(b) == 2
    b.heartbeat()
    client.sadd("unit:dupefilter", "fp")
    assert b.release(timeout=60, clear_if_last=True) == (0, True)
    assert not client.exists("unit:requests", "unit:dupefilter", "unit:workers")


# crawls ------------------------------------------------------------------------------------------------------------


def wait_all(procs: list[subprocess.Popen[str]], timeout: float = 120) -> list[int]:
    deadline = time.monotonic() + timeout
    codes = []
    for proc in procs:
        codes.append(proc.wait(timeout=max(1.0, deadline - time.monotonic())))
    return codes


def test_two_workers_fetch_every_page_once_and_both_close(tmp_path: Path, docs_server: SiteServer,
                                                          redis_server: RedisServer) -> None:  # noqa: F811
    url = docs_server.url + SUBTREE
    procs = [start_worker(tmp_path, name, url, redis_server.url, docs_server) for name in ("w1", "w2")]
    codes = wait_all(procs)
    logs = [(tmp_path / f"{n}.log").read_text() for n in ("w1", "w2")]
    assert codes == [0, 0], logs[0][-3000:] + logs[1][-3000:]
    s1, s2 = stats_of(tmp_path, "w1"), stats_of(tmp_path, "w2")
    assert s1["finish_reason"] == s2["finish_reason"] == "finished", "each closed on its own when drained"
    # every page fetched once across the workers; the start URL is also probed once per worker
    fetched = page_paths(docs_server, "/" + SUBTREE)
    assert len(fetched) >= 50
    assert {p: n for p, n in fetched.items() if n > 1} == {}
    start_fetches = sum(1 for p in docs_server.paths() if p == "/" + SUBTREE)
    assert start_fetches <= 3, "two probes and one page fetch"
    # both did a share; items and queue hold every document exactly once
    u1, u2 = item_urls(tmp_path, "w1"), item_urls(tmp_path, "w2")
    assert len(u1) >= 5 and len(u2) >= 5, (len(u1), len(u2))
    assert not set(u1) & set(u2)
    queued = queued_urls(redis_server)
    assert len(queued) == len(set(queued)) == len(u1) + len(u2) >= 45
    assert set(queued) == set(u1) | set(u2)
    assert s1["skillgraph/graph/pages"] + s2["skillgraph/graph/pages"] == len(queued)
    # each graph is honest about holding a share
    name = default_graph_name(url)
    for worker in ("w1", "w2"):
        sources = json.loads((tmp_path / worker / "graphs" / name / "sources.json").read_text())
        assert sources["pages"] and any(w["kind"] == "partial" for w in sources["warnings"])
    # the last worker out cleared the shared frontier; nothing in flight anywhere
    client = redis_server.client()
    assert not client.keys(f"docs:{name}:*")
    assert s1.get("skillgraph/distributed/frontier_cleared", 0) + s2.get("skillgraph/distributed/frontier_cleared",
                                                                          0) == 1


def test_killed_worker_in_flight_requests_are_fetched_by_a_restart(
        tmp_path: Path, redis_server: RedisServer) -> None:  # noqa: F811
    server = SiteServer(PYTHON_DOCS, default=Rule(delay=0.4))
    try:
        url = server.url + SUBTREE
        name = default_graph_name(url)
        client = redis_server.client()
        first = start_worker(tmp_path, "w1", url, redis_server.url, server, CONCURRENT_REQUESTS_PER_DOMAIN=4)
        deadline = time.monotonic() + 60
        in_flight: dict[bytes, bytes] = {}
        while time.monotonic() < deadline and first.poll() is None:
            workers = client.zrange(f"docs:{name}:workers", 0, -1)
            if client.llen("skillgraph:queue") >= 3 and workers:
                in_flight = client.hgetall(f"docs:{name}:inflight:".encode() + workers[0])
                if in_flight:
                    first.send_signal(signal.SIGKILL)
                    break
            time.sleep(0.02)
        first.wait(timeout=10)
        assert in_flight, "the first worker was killed with requests in flight"
        lost = {json.loads(raw)["url"] for raw in in_flight.values()}
        # the frontier is JSON, not pickle: a stored request names its callback
        stored = client.zrange(f"docs:{name}:requests", 0, 0)
        assert stored and not stored[0].startswith(b"\x80")
        request = json.loads(stored[0])
        assert request["callback"] in ("parse_page", "html_document") and request["url"].startswith(url)

        restart = start_worker(tmp_path, "w2", url, redis_server.url, server, CONCURRENT_REQUESTS_PER_DOMAIN=8)
        assert wait_all([restart]) == [0], (tmp_path / "w2.log").read_text()[-3000:]
        stats = stats_of(tmp_path, "w2")
        assert stats["skillgraph/distributed/reaped"] >= len(lost)
        assert stats["skillgraph/distributed/resumed"] >= 1
        queued = queued_urls(redis_server)
        assert len(queued) == len(set(queued)) >= 45, "every document once"
        assert lost <= set(queued), "the killed worker's in-flight pages reached the queue"
        assert not client.keys(f"docs:{name}:*"), "drained and cleared"
    finally:
        server.stop()
