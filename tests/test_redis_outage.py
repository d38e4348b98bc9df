"""Redis lost mid-crawl: workers pause, reconnect, and finish from the shared frontier; or give up with exit 1.

Real redis-server (AOF ``appendfsync always``, SIGKILLed and restarted on its port), real crawls of the Python
``library/`` docs on loopback, two worker processes.
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from scrapy import Request
from scrapy_redis.dupefilter import RFPDupeFilter

from skillgraph.distributed.held import HeldRequests
from skillgraph.urls import default_graph_name
from tests.conftest import PYTHON_DOCS
from tests.redis_server import RedisServer, redis_server  # noqa: F401 - fixture
from tests.servers import SiteServer
from tests.test_distributed import frontier, item_urls, log_of, queued_urls, start_worker, stats_of, wait_all

OUTAGE = "skillgraph/distributed/outage/"
#: Small bounds, so an outage is sat out (or given up) in seconds
FAST = {"SKILLGRAPH_DISTRIBUTED_RECONNECT_BACKOFF_MAX": 0.5, "SKILLGRAPH_REDIS_RETRY_SECONDS": 0.5,
        "SKILLGRAPH_RECENCY_HOURS": 0}


@pytest.fixture
def aof_redis(tmp_path: Path) -> Any:
    server = RedisServer(tmp_path / "redis")
    server.dir.mkdir()
    server.appendfsync = "always"  # every write on disk before its reply: a crash loses nothing
    server.start()
    yield server
    server.kill()


def library_pages() -> set[str]:
    return {p.name for p in (PYTHON_DOCS / "library").glob("*.html")}


def page_name(url: str) -> str:
    name = url.split("#", 1)[0].rsplit("/", 1)[-1]
    return name or "index.html"


def kill_when(server: RedisServer, procs: list[subprocess.Popen[str]], queued: int) -> None:
    """SIGKILL Redis once ``queued`` documents are in ``skillgraph:queue`` (both workers still running)."""
    client = server.client()
    deadline = time.monotonic() + 60
    while client.llen("skillgraph:queue") < queued:
        assert all(p.poll() is None for p in procs), "a worker exited before the outage"
        assert time.monotonic() < deadline, "the crawl never queued enough documents"
        time.sleep(0.01)
    server.kill()


def test_redis_killed_mid_crawl_workers_reconnect_and_queue_every_page_once(
        tmp_path: Path, python_docs: SiteServer, aof_redis: RedisServer) -> None:
    url = python_docs.url + "library/"
    procs = [start_worker(tmp_path, n, url, aof_redis.url, python_docs, **FAST) for n in ("w1", "w2")]
    kill_when(aof_redis, procs, queued=40)
    time.sleep(1.5)  # Redis is away; both workers notice it meanwhile
    aof_redis.start()  # same port, same AOF
    codes = wait_all(procs)
    assert codes == [0, 0], log_of(tmp_path, "w1")[-3000:] + log_of(tmp_path, "w2")[-3000:]
    stats = [stats_of(tmp_path, n) for n in ("w1", "w2")]
    seen = [{k: v for k, v in s.items() if "outage" in k or "dual_write" in k or k == "finish_reason"} for s in stats]
    assert all(s["finish_reason"] == "finished" for s in stats), seen
    assert all(s.get(OUTAGE + "started", 0) == s.get(OUTAGE + "recovered") >= 1 for s in stats), seen
    assert not any(OUTAGE + "gave_up" in s for s in stats)
    # every library/ page queued exactly once: none missing, no duplicate
    queued = queued_urls(aof_redis)
    duplicates = {u: n for u, n in Counter(queued).items() if n > 1}
    assert not duplicates, duplicates
    names = Counter(page_name(u) for u in queued if "/library/" in u)
    assert set(names) == library_pages() and len(names) == 317, sorted(library_pages() - set(names))
    assert set(names.values()) == {1}
    # documents written while Redis was away were pushed when it came back, not left for `scrapy replay`
    assert sum(s.get("skillgraph/dual_write/pending_pushed", 0) for s in stats) >= 1, seen
    assert not [p for n in ("w1", "w2") for p in (tmp_path / n / "items" / "docs" / "pending").glob("[!.]*")], seen
    assert set(queued) == set(item_urls(tmp_path, "w1")) | set(item_urls(tmp_path, "w2"))
    name = f"docs:{default_graph_name(url)}"
    frontier = [f"{name}:{key}" for key in ("requests", "dupefilter", "workers", "profile")]
    assert not aof_redis.client().exists(*frontier) and not aof_redis.client().keys(f"{name}:inflight:*"), "cleared"


def test_redis_that_never_returns_ends_the_worker_with_exit_1_and_the_frontier_intact(
        tmp_path: Path, python_docs: SiteServer, aof_redis: RedisServer) -> None:
    url = python_docs.url + "library/"
    worker = start_worker(tmp_path, "w1", url, aof_redis.url, python_docs, **FAST,
                          SKILLGRAPH_DISTRIBUTED_RECONNECT_TIMEOUT=2)
    kill_when(aof_redis, [worker], queued=20)
    assert wait_all([worker], timeout=60) == [1], log_of(tmp_path, "w1")[-3000:]
    stats = stats_of(tmp_path, "w1")
    assert stats["finish_reason"] == "redis_unreachable" and stats[OUTAGE + "gave_up"] == 1
    assert stats[OUTAGE + "attempts"] >= 2 and OUTAGE + "recovered" not in stats
    log = log_of(tmp_path, "w1")
    assert "stayed unreachable for 2 s mid-crawl" in log, "one sentence says why"
    assert "was not built" in log, "the build is not committed"
    # the frontier is as the crash left it: queue, dupefilter, registry, and the unacknowledged pages
    aof_redis.start()
    client = aof_redis.client()
    name = f"docs:{default_graph_name(url)}"
    assert client.zcard(f"{name}:requests") > 0 and client.scard(f"{name}:dupefilter") > 20
    assert client.zcard(f"{name}:workers") == 1 and client.exists(f"{name}:profile")
    assert client.keys(f"{name}:inflight:*"), "its in-flight pages stay for the next worker to requeue"
    pending = list((tmp_path / "w1" / "items" / "docs" / "pending").glob("[!.]*"))
    assert len(pending) == stats["skillgraph/dual_write/pending_left"] >= 1, "kept for `scrapy replay`"


# the pieces, against a real Redis ----------------------------------------------------------------------------------


def test_held_requests_go_through_the_dupefilter_and_survive_a_failed_flush(
        redis_server: RedisServer) -> None:  # noqa: F811
    queue = frontier(redis_server, "a")
    no_retry = redis.Redis(host="127.0.0.1", port=redis_server.port, password=redis_server.password,
                           retry=Retry(NoBackoff(), 0))  # a dead server fails at once, not after redis-py's retries
    df = RFPDupeFilter(no_retry, key="unit:dupefilter")
    new, known, lost_reply = (Request(f"http://127.0.0.1:1/{n}.html") for n in ("new", "known", "lost"))
    df.request_seen(known)  # another worker found it first
    df.request_seen(lost_reply)  # this worker's SADD ran, its reply was lost: not to be filtered as itself
    held = HeldRequests()
    held.add(new, ask=True)
    held.add(known, ask=True)
    held.add(lost_reply, ask=False)
    flushed = held.flush(df, queue)
    assert (flushed.pushed, flushed.seen, flushed.local, len(held)) == (2, [known], [], 0)
    assert {queue.pop().url, queue.pop().url} == {new.url, lost_reply.url}  # type: ignore[union-attr]
    redis_server.kill()
    later = Request("http://127.0.0.1:1/later.html")
    held.add(later, ask=True)
    with pytest.raises(redis.ConnectionError):
        held.flush(df, queue)
    assert len(held) == 1 and held.entries[0].request is later, "still held for the next attempt"


def test_a_pop_whose_reply_was_lost_goes_back_to_the_queue(redis_server: RedisServer) -> None:  # noqa: F811
    queue = frontier(redis_server, "a")
    queue.heartbeat()
    queue.push(Request("http://127.0.0.1:1/kept.html"))
    queue.push(Request("http://127.0.0.1:1/lost.html", priority=5))
    queue._pop(keys=[queue.key, queue.inflight_key], args=["lost-reply"])  # Redis popped it; the worker never knew
    kept = queue.pop()
    assert kept is not None and len(queue) == 0 and queue.progress() == (0, 2)
    assert queue.requeue_orphans() == 1 and queue.progress() == (1, 1), "the orphan back, the held one kept"
    again = queue.pop()
    assert again is not None and again.url.endswith("/lost.html") and again.priority == 5
