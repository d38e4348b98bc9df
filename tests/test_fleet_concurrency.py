"""One host's concurrency and Retry-After hold, kept by the whole fleet (skillgraph/distributed/hostleases.py).

Real ``redis-server``, real ``scrapy crawl`` workers, and a loopback HTTP server that stamps
every request it serves (arrival, end, status) and counts the requests it has in flight at
once: the bounds are measured where the host sees them, never from the test's clock.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from skillgraph.distributed import SCHEDULER
from skillgraph.distributed import hostleases as hostleases_module
from skillgraph.distributed.hostleases import ACQUIRE, RELEASE, HostLeases
from skillgraph.distributed.keys import BuildKeys
from skillgraph.distributed.limits import fleet_link
from tests.conftest import ROOT
from tests.redis_server import RedisServer, redis_server  # noqa: F401 - fixture
from tests.servers import LoopbackHTTPServer
from tests.test_fleet_limits import FLEET, handbook, queued, run_fleet

HOST = "127.0.0.1"


@dataclass
class Served:
    start: float
    end: float
    path: str
    status: int


class HostRecorder(LoopbackHTTPServer):
    """Serve ``root``, each answer after ``delay`` s; ``once``: a path's status and headers the first time.

    Records every request (:attr:`served`) and the most requests it had in flight at once (:attr:`max_in_flight`).
    """

    def __init__(self, root: Path, delay: float = 0.0, once: dict[str, tuple[int, dict[str, str]]] | None = None):
        self.served: list[Served] = []
        self.in_flight = self.max_in_flight = 0
        self.once = dict(once or {})
        lock, server = threading.Lock(), self

        class Handler(SimpleHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, directory=str(root), **kwargs)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def send_response(self, code: int, message: str | None = None) -> None:
                self.status_sent = code
                super().send_response(code, message)

            def do_GET(self) -> None:
                start, self.status_sent = time.monotonic(), 0
                with lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    answer = server.once.pop(self.path, None)
                try:
                    time.sleep(delay)
                    if answer is None:
                        return super().do_GET()
                    status, headers = answer
                    self.send_response(status)
                    for name, value in {**headers, "Content-Length": "0"}.items():
                        self.send_header(name, value)
                    self.end_headers()
                finally:
                    with lock:
                        server.in_flight -= 1
                        server.served.append(Served(start, time.monotonic(), self.path, self.status_sent))

        super().__init__(Handler)

    def starts(self) -> list[Served]:
        return sorted(self.served, key=lambda s: s.start)


# the scripts and the component, on a real Redis --------------------------------------------------------------------


def test_the_fleet_never_holds_more_leases_than_the_bound(redis_server: RedisServer) -> None:  # noqa: F811
    keys = BuildKeys.for_frontier("docs:unit")
    client, slot, leases, wake = redis_server.client(), keys.slot(HOST), keys.leases(HOST), keys.wake(HOST)
    acquire, release = client.register_script(ACQUIRE), client.register_script(RELEASE)

    def take(lease: str) -> int:
        return int(acquire(keys=[slot, leases], args=[0, 60, lease, 2, 30])[0])

    assert [take("a"), take("b"), take("c")] == [1, 1, 0], "the third waits"
    assert take("a") == 1, "a lease already held is renewed, not counted twice"
    assert release(keys=[leases, wake], args=["a", 2, 60]) == 1
    assert client.llen(wake) == 1, "a release wakes one waiter"
    assert take("c") == 1 and take("d") == 0
    assert 0 < client.ttl(leases) <= 60 and 0 < client.ttl(wake) <= 60
    assert release(keys=[leases, wake], args=["a", 2, 60]) == 0, "released twice: nothing freed"
    for lease in ("b", "c"):
        release(keys=[leases, wake], args=[lease, 2, 60])
    assert client.llen(wake) == 2, "tokens nobody took are kept up to the bound"


def opened_leases(redis_url: str, download_timeout: float, **settings: Any) -> tuple[HostLeases, Any]:
    """A crawler's :class:`HostLeases` on the build ``docs:unit`` (``link.spider_opened`` opens it), and its crawler."""
    crawler = get_crawler(Spider, {"REDIS_URL": redis_url, "SCHEDULER": SCHEDULER,
                                   "DOWNLOAD_TIMEOUT": download_timeout, **settings})
    crawler.spider = Spider("docs")
    crawler.spider.graph_name = "unit"  # type: ignore[attr-defined]
    crawler.stats.open_spider()
    link = fleet_link(crawler)
    assert link is not None
    return HostLeases(crawler, link), crawler


HOLDER = """
import asyncio, sys, time
from scrapy import Request
from tests.test_fleet_concurrency import opened_leases

async def main():
    leases, _ = opened_leases(sys.argv[1], 0.5)  # leases end 2 s after their send time (2 x the timeout, 1 s at least)
    await leases.link.spider_opened()
    for n in range(2):
        assert await leases.take(Request(f"http://127.0.0.1/{n}"), "127.0.0.1", 2, 0.0) is not None
    print("held", flush=True)
    time.sleep(60)  # killed here, its leases never given back

asyncio.run(main())
"""


def test_a_killed_workers_leases_expire(redis_server: RedisServer) -> None:  # noqa: F811
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, redis_server.url], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True, env={**os.environ})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
    leases_key = BuildKeys.for_frontier("docs:unit").leases(HOST)
    assert redis_server.client().zcard(leases_key) == 2, "a SIGKILLed worker gives nothing back"
    leases, crawler = opened_leases(redis_server.url, 30)

    async def run() -> float:
        await leases.link.spider_opened()
        started = time.monotonic()
        assert await leases.take(Request("http://127.0.0.1/next"), HOST, 2, 0.0) is not None
        waited = time.monotonic() - started
        await leases.link.engine_stopped()
        return waited

    waited = asyncio.run(run())
    assert crawler.stats.get_value(FLEET + "concurrency/waited") == 1, "the bound was full: the request waited"
    assert waited < 10, f"{waited:.1f} s: the dead worker's leases did not expire"


def test_a_release_wakes_a_waiting_worker_at_once(redis_server: RedisServer,  # noqa: F811
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hostleases_module, "WAKE_SECONDS", 4.0)  # a wake missed would cost 4 s
    first, _ = opened_leases(redis_server.url, 30)
    second, crawler = opened_leases(redis_server.url, 30)
    holding, waiting = Request("http://127.0.0.1/a"), Request("http://127.0.0.1/b")

    async def run() -> float:
        await first.link.spider_opened()
        await second.link.spider_opened()
        assert await first.take(holding, HOST, 1, 0.0) is not None
        waiter = asyncio.ensure_future(second.take(waiting, HOST, 1, 0.0))
        await asyncio.sleep(0.3)
        assert not waiter.done(), "the bound (1) is held by the first worker"
        released = time.monotonic()
        first.left_downloader(holding)  # its download is over
        assert await asyncio.wait_for(waiter, 10) is not None
        woken = time.monotonic() - released
        for leases in (first, second):
            await leases.spider_closed()
            await leases.link.engine_stopped()
        return woken

    woken = asyncio.run(run())
    assert woken < 3.0, f"woken {woken:.2f} s after the release: not by the release"
    assert crawler.stats.get_value(FLEET + "concurrency/released") == 1, "the second worker's lease went back at close"
    assert redis_server.client().zcard(BuildKeys.for_frontier("docs:unit").leases(HOST)) == 0


def test_redis_lost_the_request_goes_on_alone_and_its_release_follows_later(
        redis_server: RedisServer) -> None:  # noqa: F811
    leases, crawler = opened_leases(redis_server.url, 30, SKILLGRAPH_REDIS_RETRY_SECONDS=0.2)
    first, second = Request("http://127.0.0.1/a"), Request("http://127.0.0.1/b")
    leases_key = BuildKeys.for_frontier("docs:unit").leases(HOST)

    async def run() -> None:
        await leases.link.spider_opened()
        assert await leases.take(first, HOST, 2, 0.0) is not None
        redis_server.stop()  # saved: the lease is there again when Redis is back
        assert await leases.take(second, HOST, 2, 0.0) is None, "Redis away: the worker's own slot decides"
        leases.left_downloader(first)
        await asyncio.gather(*leases.releasing)
        redis_server.start()
        await asyncio.sleep(0.3)  # past SKILLGRAPH_REDIS_RETRY_SECONDS
        assert await leases.take(second, HOST, 2, 0.0) is not None
        await asyncio.gather(*leases.releasing)
        assert redis_server.client().zrange(leases_key, 0, -1) == [leases.held[second][1].encode()]
        await leases.link.engine_stopped()

    asyncio.run(run())
    assert crawler.stats.get_value(FLEET + "concurrency/release_failed") == 1
    assert crawler.stats.get_value(FLEET + "concurrency/released") == 1, "sent again once Redis answered"


# crawls: two workers on one host -------------------------------------------------------------------------------------


def test_two_workers_keep_the_hosts_concurrency(tmp_path: Path, redis_server: RedisServer) -> None:  # noqa: F811
    topics = 30
    server = HostRecorder(handbook(tmp_path / "site", topics), delay=0.2)
    try:
        stats = run_fleet(tmp_path, server.url + "docs/", redis_server, server,
                          CONCURRENT_REQUESTS_PER_DOMAIN=2, DOWNLOAD_DELAY=0)
    finally:
        server.stop()
    print(f"at most {server.max_in_flight} requests in flight at the host ({len(server.served)} served)")
    assert len(queued(redis_server)) == topics + 1, "every page"
    # each worker alone keeps 2: the host had 4 in flight before the bound was the fleet's
    assert server.max_in_flight <= 2
    for worker in stats:
        assert worker.get(FLEET + "concurrency/acquired", 0) >= 3, worker
        assert worker[FLEET + "concurrency/acquired"] == worker.get(FLEET + "concurrency/released"), "a lease leaked"
    assert sum(w.get(FLEET + "concurrency/waited", 0) for w in stats) >= 1, "the fleet's bound made requests wait"


def test_a_retry_after_holds_every_worker_off_the_host(tmp_path: Path, redis_server: RedisServer) -> None:  # noqa: F811
    topics, url_path = 30, "/docs/t7.html"
    server = HostRecorder(handbook(tmp_path / "site", topics), delay=0.05,
                          once={url_path: (503, {"Retry-After": "2"})})
    try:
        stats = run_fleet(tmp_path, server.url + "docs/", redis_server, server, DOWNLOAD_DELAY=0)
    finally:
        server.stop()
    assert len(queued(redis_server)) == topics + 1, "every page, the one answered 503 included (retried)"
    served = server.starts()
    refused = next(s for s in served if s.status == 503)
    after = [s.start - refused.start for s in served if s.start > refused.start]
    # requests already on their way when the hold reached Redis may still arrive: the one in flight beside the
    # 503 and those that took the leases freed meanwhile (the fleet's bound is 2; 8-13 when it was each worker's)
    stragglers = [t for t in after if t < 0.5]
    gap = min(t for t in after if t >= 0.5)
    print(f"after the 503: {len(stragglers)} requests already on their way, then none for {gap:.2f} s")
    assert len(stragglers) <= 3, stragglers
    assert gap >= 1.9, f"a request {gap:.2f} s after a Retry-After: 2"
    assert [s.path for s in served].count(url_path) == 2, "the page is fetched again after its hold"
    assert sum(w.get(FLEET + "politeness/retry_after", 0) for w in stats) == 1
