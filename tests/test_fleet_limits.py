"""Fleet-wide limits of a distributed build (skillgraph/distributed/{fleet,admission,politeness}.py), real Redis.

Two ``scrapy crawl`` workers share one frontier: the page budget, the content hashes and
each host's send times are the fleet's, not each worker's. Rates are measured from the
times the test HTTP server stamped on the requests it served, never from the test's clock.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from skillgraph.distributed import SCHEDULER
from skillgraph.distributed.admission import ADMIT, Admitted, FleetAdmission, held_key
from skillgraph.distributed.admission import HOLD as HOLD_PAGE
from skillgraph.distributed.hostleases import ACQUIRE
from skillgraph.distributed.keys import BuildKeys
from skillgraph.distributed.limits import OPEN
from skillgraph.distributed.politeness import HOLD, FleetPolitenessMiddleware
from skillgraph.urls import default_graph_name
from tests.conftest import PYTHON_DOCS, ROOT, TEST_SETTINGS
from tests.redis_server import RedisServer, redis_server  # noqa: F401 - fixture
from tests.servers import LoopbackHTTPServer, Rule, SiteServer, free_port

SCOPE = "library/"
FLEET = "skillgraph/fleet/"


def start_worker(tmp: Path, name: str, url: str, redis_url: str, server: LoopbackHTTPServer,
                 **settings: Any) -> subprocess.Popen[str]:
    merged = {**TEST_SETTINGS, "CONCURRENT_REQUESTS_PER_DOMAIN": 2, "REDIS_URL": redis_url,
              "SKILLGRAPH_GRAPHS_DIR": tmp / name / "graphs", "SKILLGRAPH_ITEMS_DIR": tmp / name / "items",
              "SKILLGRAPH_STATE_PATH": tmp / name / "state.sqlite3", "SKILLGRAPH_STATS_FILE": tmp / name / "stats.json",
              "SKILLGRAPH_SSRF_ALLOWLIST": f"127.0.0.1:{server.port}", "SKILLGRAPH_RENDER_ENABLED": False,
              "SKILLGRAPH_PROGRESS_ENABLED": False, "SKILLGRAPH_DISTRIBUTED_WORKER_TIMEOUT": 2, **settings}
    args = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"url={url}"]
    for key, value in merged.items():
        args += ["-s", f"{key}={value}"]
    (tmp / name).mkdir(parents=True, exist_ok=True)
    log = open(tmp / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(args, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True, env={**os.environ})


def run_fleet(tmp: Path, url: str, redis: RedisServer, server: LoopbackHTTPServer,
              **settings: Any) -> list[dict[str, Any]]:
    """Two workers on one frontier, to the end; each worker's stats."""
    procs = [start_worker(tmp, name, url, redis.url, server, **settings) for name in ("w1", "w2")]
    codes = [proc.wait(timeout=90) for proc in procs]
    logs = "".join((tmp / f"{n}.log").read_text()[-3000:] for n in ("w1", "w2"))
    assert codes == [0, 0], logs
    return [json.loads((tmp / name / "stats.json").read_text()) for name in ("w1", "w2")]


def queued(redis: RedisServer) -> list[str]:
    return [json.loads(raw)["url"] for raw in redis.client().lrange("skillgraph:queue", 0, -1)]


def graph_sources(tmp: Path, url: str) -> list[dict[str, Any]]:
    """The ``sources.json`` of every graph the workers committed (one each, or one for the fleet when assembled)."""
    found = [json.loads(path.read_text()) for worker in ("w1", "w2")
             if (path := tmp / worker / "graphs" / default_graph_name(url) / "sources.json").exists()]
    assert found, "no worker committed a graph"
    return found


@pytest.fixture
def docs_server() -> Any:
    if not (PYTHON_DOCS / "index.html").exists():
        pytest.fail(f"{PYTHON_DOCS} missing: install Debian's python3.11-doc")
    server = SiteServer(PYTHON_DOCS)
    yield server
    server.stop()


# the scripts, on a real Redis ----------------------------------------------------------------------------------------


def test_admission_script_counts_once_per_content_and_stops_at_the_bound(redis_server: RedisServer) -> None:  # noqa: F811
    client, keys = redis_server.client(), BuildKeys.for_frontier("docs:unit")
    admit, held = client.register_script(ADMIT), held_key(keys.budget)

    def verdict(url: str, sha: str, bound: int = 2) -> list[Any]:
        return [x.decode() if isinstance(x, bytes) else x for x in admit(keys=[keys.budget, keys.hashes, held],
                                                                         args=[url, sha, bound, 60])]

    client.zadd(held, {"http://s/a": 1e12})
    assert verdict("http://s/a", "h1") == ["new", "", 1]
    assert not client.zscore(held, "http://s/a"), "admitted: its place in flight is freed"
    assert verdict("http://s/a-copy", "h1") == ["same-content", "http://s/a", 1], "a duplicate spends nothing"
    assert verdict("http://s/a", "h1") == ["again", "http://s/a", 1], "the same page refetched (a reaped request)"
    assert verdict("http://s/b", "h2") == ["new", "", 2]
    assert verdict("http://s/c", "h3") == ["over-budget", "", 2]
    assert client.hget(keys.hashes, "h3") is None, "no hash recorded for a page refused"
    assert verdict("http://s/c", "h3", bound=0) == ["new", "", 3], "unbounded strategies count, never refuse"
    assert 0 < client.ttl(keys.budget) <= 60 and 0 < client.ttl(keys.hashes) <= 60


def test_a_place_in_flight_counts_until_admitted_released_or_its_lease_ends(
        redis_server: RedisServer) -> None:  # noqa: F811
    client, keys = redis_server.client(), BuildKeys.for_frontier("docs:unit")
    hold, held = client.register_script(HOLD_PAGE), held_key(keys.budget)

    def place(url: str, lease: float = 60) -> list[int]:
        return [int(x) for x in hold(keys=[keys.budget, held], args=[url, 3, lease, 60])]

    client.set(keys.budget, 1)  # one page admitted, bound 3
    assert place("http://s/a") == [1, 1, 1]
    assert place("http://s/b", lease=0.2) == [1, 1, 2]
    assert place("http://s/c") == [0, 1, 2], "admitted + in flight fill the bound: wait"
    assert place("http://s/a") == [1, 1, 2], "a page already holding its place keeps it"
    time.sleep(0.3)  # b's worker died: its lease ends, its place is free again
    assert place("http://s/c") == [1, 1, 2]
    client.zrem(held, "http://s/a")  # a settled without a document
    client.set(keys.budget, 3)
    assert place("http://s/d") == [0, 3, 1], "the fleet admitted the bound: refused"


def test_a_fresh_frontier_resets_the_build_a_busy_one_keeps_it(redis_server: RedisServer) -> None:  # noqa: F811
    client, keys = redis_server.client(), BuildKeys.for_frontier("docs:unit")
    opened = client.register_script(OPEN)
    frontier = ["docs:unit:requests", "docs:unit:dupefilter", "docs:unit:profile", "docs:unit:detect:lock"]
    client.set(keys.budget, 7)
    client.hset(keys.hashes, "h", "http://s/a")
    client.sadd("docs:unit:dupefilter", "fp")  # a build under way: join it
    assert opened(keys=[*frontier, keys.budget, keys.hashes], args=[60]) == [0, 0]
    assert client.get(keys.budget) == b"7" and 0 < client.ttl(keys.budget) <= 60
    client.delete("docs:unit:dupefilter")  # the last worker out cleared the frontier: the next run is a new build
    assert opened(keys=[*frontier, keys.budget, keys.hashes], args=[60]) == [1, 2]
    assert not client.exists(keys.budget, keys.hashes)


def test_reservations_space_a_host_for_every_caller_and_a_hold_pushes_them_all(
        redis_server: RedisServer) -> None:  # noqa: F811
    keys = BuildKeys.for_frontier("docs:unit")
    client, slot, leases = redis_server.client(), keys.slot("127.0.0.1"), keys.leases("127.0.0.1")
    acquire, hold = client.register_script(ACQUIRE), client.register_script(HOLD)

    def reserve(delay: float, lease: str) -> float:  # a bound of 10 leases: never in the way here
        ok, _, wait = acquire(keys=[slot, leases], args=[delay, 60, lease, 10, 30])
        assert ok == 1
        return float(wait)

    waits = [reserve(0.5, f"w{n}") for n in range(4)]  # four workers at the same instant
    assert waits[0] == 0.0
    assert all(0.49 <= b - a <= 0.51 for a, b in pairwise(waits)), waits
    hold(keys=[slot], args=[30, 60])  # one worker saw Retry-After: 30
    assert 29 <= reserve(0.0, "w0") <= 30.01
    assert 0 < client.ttl(slot) <= 60


# off, and Redis unreachable ---------------------------------------------------------------------------------------


def test_local_mode_has_no_fleet_limits() -> None:
    crawler = get_crawler(Spider, {"SKILLGRAPH_MAX_PAGES": 5})
    assert FleetAdmission.of(crawler) is None
    with pytest.raises(NotConfigured):
        FleetPolitenessMiddleware.from_crawler(crawler)
    off = get_crawler(Spider, {"REDIS_URL": "redis://127.0.0.1:1/0", "SCHEDULER": SCHEDULER,
                               "SKILLGRAPH_FLEET_ENABLED": False})
    assert FleetAdmission.of(off) is None


def test_redis_unreachable_at_start_leaves_every_limit_to_the_worker(tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="skillgraph.distributed.limits")
    crawler = get_crawler(Spider, {"REDIS_URL": f"redis://127.0.0.1:{free_port()}/0", "SCHEDULER": SCHEDULER,
                                   "SKILLGRAPH_DISTRIBUTED_CONNECT_TIMEOUT": 0,
                                   "SKILLGRAPH_STATE_PATH": str(tmp_path / "state.sqlite3")})
    crawler.spider = Spider("unit")
    crawler.stats.open_spider()
    admission = FleetAdmission.of(crawler)
    assert admission is not None

    async def run() -> Admitted:
        await admission.link.spider_opened()
        return await admission.admit("http://s/a", "h1")

    assert asyncio.run(run()) == Admitted("new"), "the Build's own rule"
    assert not admission.link.active and crawler.stats.get_value(FLEET + "unavailable") == 1
    said = [r for r in caplog.records if "Fleet-wide limits are off (Redis unreachable at start)" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.INFO], "the start-up warning is the one warning"


# crawls: two workers on one host --------------------------------------------------------------------------------------

PAGE = ("<!doctype html><html><head><title>Topic {n}</title></head><body><main><h1>Topic {n}</h1>"
        "<p>Topic {n} of the handbook explains one part of Gadget thoroughly: what it does, how to set it up, "
        "and what to expect when it runs in production.</p><pre><code>gadget run --topic {n}</code></pre>"
        "</main></body></html>")


def handbook(root: Path, topics: int, copies: bool = False) -> Path:
    """``docs/index.html`` linking ``t<n>.html`` (and, with ``copies``, ``t<n>-copy.html``: the same page)."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    links = "".join(f'<li><a href="t{n}.html">Topic {n}</a></li>'
                    + (f'<li><a href="t{n}-copy.html">Topic {n} again</a></li>' if copies else "")
                    for n in range(topics))
    (docs / "index.html").write_text("<!doctype html><html><head><title>Handbook</title></head><body><main>"
                                     "<h1>Handbook</h1><p>Every topic of Gadget, one page each.</p>"
                                     f"<ul>{links}</ul></main></body></html>")
    for n in range(topics):
        for name in (f"t{n}.html", f"t{n}-copy.html") if copies else (f"t{n}.html",):
            (docs / name).write_text(PAGE.format(n=n))
    return root


def test_two_workers_share_one_host_delay(tmp_path: Path, redis_server: RedisServer) -> None:  # noqa: F811
    # Small pages, so that each worker alone would send as fast as its own delay lets it.
    server = SiteServer(handbook(tmp_path / "site", 60))
    delay = 0.05
    try:
        stats = run_fleet(tmp_path, server.url + "docs/", redis_server, server, DOWNLOAD_DELAY=delay)
    finally:
        server.stop()
    times = sorted(t for t, _, _ in server.requests)  # stamped by the server as it served them
    assert len(times) >= 60
    rate = (len(times) - 1) / (times[-1] - times[0])
    gaps = [b - a for a, b in pairwise(times)]
    close = sum(gap < delay / 2 for gap in gaps) / len(gaps)
    print(f"fleet request rate {rate:.1f}/s at DOWNLOAD_DELAY={delay} ({len(times)} requests), "
          f"{close:.0%} of gaps under half the delay")
    assert rate <= 1.3 / delay, f"{rate:.1f} requests/s: the fleet's delay is not shared"
    # two workers each keeping only its own delay: a third of the gaps were under half the delay (measured)
    assert close <= 0.15, f"{close:.0%} of the gaps under half the delay: requests of the two workers coincide"
    # both took pages from the frontier and reserved their send times in Redis. (Not: both admitted pages.
    # These pages fail the HTML tier; the negotiated request a worker makes goes into the frontier, and the
    # document is written by whichever worker takes it: a worker may fetch 54 pages and admit 1.)
    for worker in stats:
        assert worker["scheduler/dequeued/redis"] >= 5 and worker[FLEET + "politeness/reserved"] >= 5, worker


def test_two_workers_share_one_page_budget(tmp_path: Path, docs_server: SiteServer,
                                           redis_server: RedisServer) -> None:  # noqa: F811
    url = docs_server.url + SCOPE
    stats = run_fleet(tmp_path, url, redis_server, docs_server, SKILLGRAPH_MAX_PAGES=100)
    documents = queued(redis_server)
    refused = sum(s.get(FLEET + "budget/refused", 0) for s in stats)
    print(f"{len(documents)} documents queued by two workers at SKILLGRAPH_MAX_PAGES=100, {refused} pages fetched "
          "and refused at the bound")
    assert 90 <= len(documents) <= 100 and len(set(documents)) == len(documents)
    # requests waiting for a place (or a host) count as the worker's backlog: it stops taking more from the
    # frontier, so few pages are fetched past the bound (15-19 when only download slots counted, measured)
    assert refused <= 5, f"{refused} pages fetched past the bound and refused"
    assert sum(s.get(FLEET + "budget/admitted", 0) for s in stats) == len(documents)
    assert all(s.get(FLEET + "budget/admitted", 0) >= 5 for s in stats), "both workers fetched a share"
    # every URL accounted for: what the bound left is unreached (truncated)
    for graph in graph_sources(tmp_path, url):
        truncated = graph["truncated"]
        assert truncated is not None and truncated["reason"] == "max_pages" and truncated["skipped"] > 0


# crawl: the same content under two URLs, fetched by two workers ------------------------------------------------------


def test_the_same_content_under_two_urls_is_one_document_fleet_wide(tmp_path: Path,
                                                                     redis_server: RedisServer) -> None:  # noqa: F811
    pairs = 12
    # a little slow, so that both workers take pages and some pairs are split between them
    server = SiteServer(handbook(tmp_path / "site", pairs, copies=True), default=Rule(delay=0.05))
    try:
        url = server.url + "docs/"
        stats = run_fleet(tmp_path, url, redis_server, server)
    finally:
        server.stop()
    documents = queued(redis_server)
    assert len(documents) == pairs + 1 == len({json.loads(r)["sha256"] for r in
                                               redis_server.client().lrange("skillgraph:queue", 0, -1)})
    # each topic is one document; its other URL is a duplicate skip in the graph of the worker that fetched it
    duplicates = {e["url"]: e for graph in graph_sources(tmp_path, url) for e in graph["skipped"]
                  if e["reason"] == "duplicate"}
    for n in range(pairs):
        a, b = url + f"t{n}.html", url + f"t{n}-copy.html"
        assert (a in documents) != (b in documents), n
        kept, dup = (a, b) if a in documents else (b, a)
        assert duplicates[dup]["detail"] == f"same content as {kept}"
    # the pairs two workers split were caught in Redis (a local duplicate would have been caught by the Build)
    assert sum(s.get(FLEET + "dedup/duplicate", 0) for s in stats) >= 1
    # (fetched, not admitted: the negotiated request of a page that failed its HTML tier may be the other's)
    assert all(s.get("scheduler/dequeued/redis", 0) >= 1 for s in stats), "both workers fetched pages"
