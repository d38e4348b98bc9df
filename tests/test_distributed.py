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
from skillgraph.distributed import SCHEDULER, serializer
from skillgraph.distributed.detection import shared_detection_enabled
from skillgraph.distributed.frontier import Frontier
from skillgraph.distributed.keys import FrontierKeys
from skillgraph.spiders.mediawiki import MediaWikiSpider
from skillgraph.strategy.mediawiki import SiteInfo
from skillgraph.urls import default_graph_name
from tests.conftest import PYTHON_DOCS, ROOT, SITES, TEST_SETTINGS, corpus_file
from tests.redis_server import RedisServer, redis_server  # noqa: F401 - fixture
from tests.servers import Rule, SiteServer, copy_site

SUBTREE = "c-api/"  # 64 pages of the real Python docs: a few seconds per crawl
DETECT = "skillgraph/distributed/detect/"
PROBE_SUFFIXES = ("llms-full.txt", "llms.txt", "sitemap.xml")


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
    (tmp / name).mkdir(parents=True, exist_ok=True)  # the stats file's folder, when no item is written there
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


@pytest.mark.parametrize(("settings", "shared"), [
    ({}, False),
    ({"REDIS_URL": "redis://127.0.0.1:1/0", "SCHEDULER": SCHEDULER}, True),
    ({"REDIS_URL": "redis://127.0.0.1:1/0", "SCHEDULER": SCHEDULER, "SKILLGRAPH_DISTRIBUTED_ENABLED": False}, False),
    ({"REDIS_URL": "redis://127.0.0.1:1/0", "SCHEDULER": SCHEDULER, "SKILLGRAPH_DISTRIBUTED_SHARED_DETECTION": False},
     False),
    # plain scrapy-redis: no idle wait, so a worker without seeds would close at once; every worker detects
    ({"REDIS_URL": "redis://127.0.0.1:1/0", "SCHEDULER": "scrapy_redis.scheduler.Scheduler"}, False),
])
def test_shared_detection_only_with_the_distributed_scheduler(settings: dict[str, Any], shared: bool) -> None:
    assert shared_detection_enabled(get_crawler(PageSpider, settings)) is shared


class WikiSpider(MediaWikiSpider):
    name = "unit_wiki"
    start_url = "http://127.0.0.1:1/wiki/Main_Page"


def test_mediawiki_followers_adopt_the_leaders_siteinfo() -> None:
    leader, follower = WikiSpider(), WikiSpider()
    assert leader.shared_state() == {}, "no API answered: nothing to share"
    leader.wiki = SiteInfo("Wiki", "MediaWiki 1.39.10", "http://127.0.0.1:1/wiki/$1", first_letter=False)
    follower.adopt_shared_state(json.loads(json.dumps(leader.shared_state())))
    assert follower.wiki == leader.wiki and follower.wiki is not leader.wiki


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
    assert start_fetches <= 2, "the leader's Link-header probe and one page fetch"
    # one worker detected, the other adopted its profile: every detection probe was sent once in total
    probes = Counter(p for p in docs_server.paths() if p.endswith(PROBE_SUFFIXES))
    assert len(probes) >= 5 and set(probes.values()) == {1}, probes
    # robots.txt: the leader's probe, plus RobotsTxtMiddleware's own fetch in each worker
    assert sum(1 for p in docs_server.paths() if p == "/robots.txt") == 1 + 2
    leader, follower = (s1, s2) if s1.get(DETECT + "leader") else (s2, s1)
    assert (leader.get(DETECT + "leader"), leader.get(DETECT + "published"), leader.get(DETECT + "follower")) == (
        1, 1, None)
    assert (follower.get(DETECT + "follower"), follower.get(DETECT + "leader")) == (1, None)
    assert "skillgraph/profiler/probes" not in follower and leader["skillgraph/profiler/probes"] >= 5
    # both did a share; items and queue hold every document exactly once
    u1, u2 = item_urls(tmp_path, "w1"), item_urls(tmp_path, "w2")
    assert len(u1) >= 5 and len(u2) >= 5, (len(u1), len(u2))
    assert not set(u1) & set(u2)
    queued = queued_urls(redis_server)
    assert len(queued) == len(set(queued)) == len(u1) + len(u2) >= 45
    assert set(queued) == set(u1) | set(u2)
    assert s1["skillgraph/graph/pages"] + s2["skillgraph/graph/pages"] == len(queued)
    # one graph out of the fleet (tests/test_assemble.py): the last worker out wrote every page, with the leader's
    # detection; no worker committed a partial graph of its own
    name = default_graph_name(url)
    graphs = [tmp_path / worker / "graphs" / name / "sources.json" for worker in ("w1", "w2")]
    assert sum(g.exists() for g in graphs) == 1
    sources = json.loads(next(g for g in graphs if g.exists()).read_text())
    assert len(sources["pages"]) == len(queued) and not any(w["kind"] == "partial" for w in sources["warnings"])
    profile = sources["scrape_profile"]
    assert profile["strategy"] == "crawl" and len(profile["probes"]) >= 5
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
        # read again once it is dead: a request that finished between the first read and the kill left the
        # hash (its page reached the queue from the first worker); what remains is exactly what the reaper owes
        in_flight = client.hgetall(f"docs:{name}:inflight:".encode() + workers[0])
        assert in_flight, "the killed worker left requests in flight"
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


def wait_until(condition: Any, procs: list[subprocess.Popen[str]], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert all(p.poll() is None for p in procs), f"a worker exited before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def log_of(tmp: Path, name: str) -> str:
    return (tmp / f"{name}.log").read_text()


def test_leader_killed_during_detection_a_follower_takes_over(tmp_path: Path,
                                                               redis_server: RedisServer) -> None:  # noqa: F811
    slow = "/docs/llms-full.txt"  # the leader's first probe: it hangs there until killed
    server = SiteServer(copy_site(SITES / "crawl_site", tmp_path / "site"), rules={slow: Rule(delay=60)})
    try:
        url = server.url + "docs/"
        keys = FrontierKeys.for_name(f"docs:{default_graph_name(url)}")
        client = redis_server.client()
        ttl = {"SKILLGRAPH_DISTRIBUTED_DETECT_TIMEOUT": 1.0}
        leader = start_worker(tmp_path, "w1", url, redis_server.url, server, **ttl)
        wait_until(lambda: slow in server.paths(), [leader], "the leader's first probe")
        holder = client.get(keys.detect_lock)
        assert holder and b":" in holder
        follower = start_worker(tmp_path, "w2", url, redis_server.url, server, **ttl)
        wait_until(lambda: "waits for the detection" in log_of(tmp_path, "w2"), [leader, follower], "a follower")
        time.sleep(2.0)  # twice the lock's TTL: the living leader keeps it by refreshing
        assert client.get(keys.detect_lock) == holder and not client.exists(keys.profile)
        assert "takes over" not in log_of(tmp_path, "w2")
        leader.send_signal(signal.SIGKILL)
        leader.wait(timeout=10)
        del server.rules[slow]
        assert wait_all([follower]) == [0], log_of(tmp_path, "w2")[-3000:]
        stats = stats_of(tmp_path, "w2")
        assert (stats[DETECT + "takeover"], stats[DETECT + "leader"], stats[DETECT + "published"]) == (1, 1, 1)
        assert stats["skillgraph/graph/pages"] == len(item_urls(tmp_path, "w2")) == 7, "docs/ and its six guides"
        sources = json.loads((tmp_path / "w2" / "graphs" / default_graph_name(url) / "sources.json").read_text())
        assert sources["scrape_profile"]["strategy"] == "crawl" and len(sources["pages"]) == 7
        assert server.paths().count(slow) == 2, "probed by the killed leader, then by the one that took over"
    finally:
        server.stop()


def test_llms_full_follower_writes_no_page_and_leaves_the_graph_alone(tmp_path: Path,
                                                                       redis_server: RedisServer) -> None:  # noqa: F811
    root = copy_site(SITES / "llms_scoped", tmp_path / "site")
    (root / "docs" / "llms-full.txt").write_bytes(corpus_file("llms_full/litellm-docs__static_llms-full.txt")
                                                  .read_bytes())
    server = SiteServer(root)
    try:
        url = server.url + "docs/"
        name = default_graph_name(url)
        keys = FrontierKeys.for_name(f"docs:{name}")
        client = redis_server.client()
        client.set(keys.detect_lock, "stand-in", px=60_000)  # both workers start as followers of a stand-in
        graphs = tmp_path / "graphs"  # one graphs dir: a follower must not write a failure beside the good graph
        procs = [start_worker(tmp_path, n, url, redis_server.url, server, SKILLGRAPH_GRAPHS_DIR=graphs)
                 for n in ("w1", "w2")]
        wait_until(lambda: all("waits for the detection of stand-in" in log_of(tmp_path, n) for n in ("w1", "w2")),
                   procs, "two followers")
        client.delete(keys.detect_lock)  # the stand-in is gone without a profile: one worker takes over
        assert wait_all(procs) == [0, 0], log_of(tmp_path, "w1")[-3000:] + log_of(tmp_path, "w2")[-3000:]
        s1, s2 = stats_of(tmp_path, "w1"), stats_of(tmp_path, "w2")
        (leader, lead_name), (follower, follow_name) = sorted(
            [(s1, "w1"), (s2, "w2")], key=lambda pair: -pair[0].get(DETECT + "leader", 0))
        assert (leader[DETECT + "leader"], leader[DETECT + "takeover"], follower[DETECT + "follower"]) == (1, 1, 1)
        pages = leader["skillgraph/graph/pages"]
        assert pages >= 10
        # the last worker out, whichever it was, committed the fleet's graph (tests/test_assemble.py)
        assert leader.get("skillgraph/graph/committed", 0) + follower.get("skillgraph/graph/committed", 0) == 1
        # the follower had nothing to do: no page, no failure record, an empty share
        assert follower["finish_reason"] == "finished" and follower["skillgraph/graph/empty_share"] == 1
        assert not {"skillgraph/graph/pages", "skillgraph/graph/failed", "skillgraph/profiler/probes"} & set(follower)
        assert not item_urls(tmp_path, follow_name) and len(item_urls(tmp_path, lead_name)) == pages
        assert not (graphs / f"{name}.failed.json").exists()
        sources = json.loads((graphs / name / "sources.json").read_text())
        assert sources["scrape_profile"]["strategy"] == "llms-full" and len(sources["pages"]) == pages
        assert {p["tier"] for p in sources["pages"]} == {"corpus"}
        assert server.paths().count("/docs/llms-full.txt") == 1
    finally:
        server.stop()
