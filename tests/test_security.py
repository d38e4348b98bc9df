"""Locked down by default (docs/distributed.md, "Security"): Redis with a password and a worker ACL user.

Real ``redis-server`` processes on loopback (``tests/redis_server.py`` runs every one with
``--requirepass``). The ACL line is read from docs/distributed.md, so the documented line is
the tested one; ``ACL LOG`` must stay empty through a real distributed crawl and a store
worker's run (a refused command that some ``except RedisError`` swallowed would show there).
TLS (``rediss://``) is checked through the parsing and client-building functions, and by
pointing a TLS URL at a plain server: the TLS handshake fails, so the URL reached redis-py as
``rediss://``. scrapyd's credentials are in tests/test_scrapyd.py.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import socketserver
from pathlib import Path
from typing import Any

import pytest
import redis
from scrapy.settings import Settings

from skillgraph.addon import Addon
from skillgraph.build.state import connect_redis
from skillgraph.commands.settings_check import SettingsError, check_settings
from skillgraph.distributed import REFUSED_STAT, enabled, redis_location, wait_for_redis
from skillgraph.distributed.connection import RedisRefused, redacted, refusal
from tests.conftest import ROOT, run_scrapy
from tests.redis_server import RedisServer, redis_server  # noqa: F401 - fixture
from tests.servers import LoopbackHTTPServer, SiteServer

SECRET = "s3cr3t-Pa55"
DOCS = ROOT / "docs" / "distributed.md"
HASHING = "SKILLGRAPH_STORE_EMBEDDER=skillgraph.store.embed.HashingEmbedder"


def addon_settings(**values: str) -> Settings:
    """``-s`` values, then the add-on (which switches distributed mode on when ``REDIS_URL`` is set)."""
    settings = Settings(values, priority="cmdline")
    Addon().update_settings(settings)
    return settings


def worker_acl() -> list[str]:
    """The ``user skillgraph ...`` line of docs/distributed.md, as ``ACL SETUSER`` arguments."""
    lines = [line.strip() for line in DOCS.read_text().splitlines() if line.strip().startswith("user skillgraph ")]
    assert len(lines) == 1, "docs/distributed.md shows one worker ACL line"
    return lines[0].split()[1:]


def add_worker_user(server: RedisServer) -> str:
    """Create the documented worker user on ``server``; its URL."""
    password = secrets.token_hex(16)
    rules = [f">{password}" if rule == ">WORKER_PASSWORD" else rule for rule in worker_acl()]
    assert f">{password}" in rules, "the documented line sets the password with >WORKER_PASSWORD"
    server.client().execute_command("ACL", "SETUSER", *rules)
    return f"redis://{rules[0]}:{password}@127.0.0.1:{server.port}/0"


def said(stderr: str, prefix: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(prefix)]


# REDIS_URL: checked at start, TLS passed through, never shown with its password ----------------------------------


@pytest.mark.parametrize(("url", "problem"), [
    (f"http://:{SECRET}@127.0.0.1:6379/0", "the scheme must be"),
    (f"redis://:{SECRET}@127.0.0.1:6379/zero", "database number"),
    (f"redis://:{SECRET}@:6379/0", "names no host"),
    ("redis://:s3cr/3t@127.0.0.1:6379/0", "must be percent-encoded"),  # the '/' ends the netloc inside the password
    (f"redis://{SECRET}@127.0.0.1:0/0", "port must be"),
])
def test_a_bad_redis_url_is_refused_at_start_without_its_password(url: str, problem: str) -> None:
    with pytest.raises(SettingsError) as info:
        check_settings(addon_settings(REDIS_URL=url))
    message = str(info.value)
    assert message.startswith("invalid setting REDIS_URL=") and problem in message and "\n" not in message
    assert SECRET not in message and "s3cr" not in message and "3t@" not in message


@pytest.mark.parametrize("url", [
    "rediss://skillgraph:pw@redis.lan:6380/2?ssl_ca_certs=/etc/skillgraph/ca.pem",
    "rediss://:pw@redis.lan/0", "redis://skillgraph:pw@redis.lan:6379/0", "unix://:pw@/run/redis/redis.sock?db=1",
])
def test_redis_tls_urls_pass_every_check_and_reach_redis_py_unchanged(url: str) -> None:
    from scrapy_redis.connection import get_redis_from_settings

    settings = addon_settings(REDIS_URL=url)
    check_settings(settings)
    assert enabled(settings) and settings["SCHEDULER"].endswith("DistributedScheduler")
    tls = url.startswith("rediss://")
    for client in (connect_redis(url), get_redis_from_settings(settings), redis.Redis.from_url(url)):
        pool = client.connection_pool  # built from the URL, not connected yet
        assert ("SSL" in pool.connection_class.__name__) is tls, (type(client), pool.connection_class)
        assert pool.connection_kwargs["password"] == "pw"
        if tls and "ssl_ca_certs" in url:
            assert pool.connection_kwargs["ssl_ca_certs"] == "/etc/skillgraph/ca.pem"
    location = redis_location(url)
    assert "pw" not in location and location in ("redis.lan:6380/2", "redis.lan:6379/0", "/run/redis/redis.sock")


@pytest.mark.parametrize(("url", "shown"), [
    ("redis://:pw@h:6379/0", "redis://:***@h:6379/0"),
    ("rediss://skillgraph:pw@h:6380/0", "rediss://skillgraph:***@h:6380/0"),
    ("redis://pw@h/0", "redis://***@h/0"),  # a lone token may be the password
    ("redis://:p@w/x@h:6379/0", "redis://:***@h:6379/0"),
    ("redis://h:6379/0?password=pw&db=1", "redis://h:6379/0?password=***&db=1"),
    ("redis://h:6379/0", "redis://h:6379/0"),
])
def test_redacted_and_redis_location_never_show_a_password(url: str, shown: str) -> None:
    assert redacted(url) == shown
    assert "pw" not in redis_location(url)


class Handshakes(LoopbackHTTPServer):
    """Records the first bytes of every connection, then closes it: a TLS client opens with a handshake record."""

    def __init__(self) -> None:
        self.openings: list[bytes] = []
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                owner.openings.append(self.request.recv(3))

        super().__init__(Handler, socketserver.ThreadingTCPServer)


def test_a_tls_url_makes_every_client_speak_tls(tmp_path: Path) -> None:
    server = Handshakes()
    url = f"rediss://:{SECRET}@127.0.0.1:{server.port}/0"
    try:
        error = asyncio.run(wait_for_redis(url, 0))  # the crawl's look at start, and the reconnects
        assert error is not None and not isinstance(error, RedisRefused)
        for command in (["worker", "--burst", "-s", HASHING, "-s", f"SKILLGRAPH_STORE_URL=sqlite:///{tmp_path}/s.db"],
                        ["replay", "-s", f"SKILLGRAPH_ITEMS_DIR={tmp_path}"]):
            proc = run_scrapy([*command, "-s", f"REDIS_URL={url}"], timeout=60)
            lines = said(proc.stderr, f"scrapy {command[0]}:")
            assert proc.returncode == 1 and len(lines) == 1, proc.stderr[-2000:]
            assert f"Redis at 127.0.0.1:{server.port}/0" in lines[0] and SECRET not in proc.stderr + proc.stdout
    finally:
        server.stop()
    assert len(server.openings) >= 3 and all(o.startswith(b"\x16\x03") for o in server.openings), server.openings


# a refused password: one sentence, exit 1, no secret ------------------------------------------------------------


def test_crawl_refused_by_redis_says_so_in_one_sentence_and_fetches_nothing(
        crawl: Any, sites: dict[str, SiteServer], redis_server: RedisServer) -> None:  # noqa: F811
    wrong = f"redis://:{SECRET}@127.0.0.1:{redis_server.port}/0"
    result = crawl("docs", url=sites["crawl_site"].url + "docs/", settings={"REDIS_URL": wrong, "LOG_LEVEL": "DEBUG"})
    assert result.returncode == 1, result.log[-3000:]
    last = result.log.strip().splitlines()[-1]
    assert re.fullmatch(rf"skillgraph: Redis at 127\.0\.0\.1:{redis_server.port}/0 refused the credentials \(.+\); "
                        r"put the password it expects in REDIS_URL: .+ for an ACL user", last), last
    assert "Traceback" not in result.log and SECRET not in result.log
    # closed before the engine started: Scrapy's stats dump in the log is the record (no engine_stopped, no stats file)
    assert f"'{REFUSED_STAT}': 1" in result.log and "'finish_reason': 'redis_refused'" in result.log
    assert "downloader/request_count" not in result.log, "closed before its first request"
    assert not redis_server.client().keys("*"), "nothing written to Redis"


def test_store_worker_and_replay_refused_by_redis_say_so_in_one_sentence(redis_server: RedisServer,  # noqa: F811
                                                                         tmp_path: Path) -> None:
    no_password = f"redis://127.0.0.1:{redis_server.port}/0"
    wrong = f"redis://:{SECRET}@127.0.0.1:{redis_server.port}/0"
    store = f"SKILLGRAPH_STORE_URL=sqlite:///{tmp_path}/s.sqlite3"
    runs = {"worker --burst": ["worker", "--burst", "-s", HASHING, "-s", store, "-s", f"REDIS_URL={no_password}"],
            "worker": ["worker", "-s", HASHING, "-s", store, "-s", f"REDIS_URL={wrong}"],  # would wait for an outage
            "replay": ["replay", "-s", f"SKILLGRAPH_ITEMS_DIR={tmp_path}", "-s", f"REDIS_URL={wrong}"]}
    for name, args in runs.items():
        proc = run_scrapy([*args, "-s", "LOG_LEVEL=DEBUG"], timeout=60)
        lines = said(proc.stderr, f"scrapy {args[0]}:")
        assert proc.returncode == 1 and len(lines) == 1, (name, proc.stderr[-2000:])
        assert f"Redis at 127.0.0.1:{redis_server.port}/0 refused the credentials" in lines[0], (name, lines)
        assert SECRET not in proc.stderr + proc.stdout, name  # at DEBUG: the traceback too (DESIGN.md allows it there)


def test_refusal_tells_a_refused_password_from_an_outage(redis_server: RedisServer) -> None:  # noqa: F811
    for url in (f"redis://127.0.0.1:{redis_server.port}/0", f"redis://:{SECRET}@127.0.0.1:{redis_server.port}/0"):
        with pytest.raises(redis.RedisError) as info:
            redis.Redis.from_url(url).ping()
        assert refusal(info.value) == "credentials", info.value
        answer = asyncio.run(wait_for_redis(url, 30.0))  # refused at once, not waited for
        assert isinstance(answer, RedisRefused) and SECRET not in answer
    redis_server.client().execute_command("ACL", "SETUSER", "nobody", "on", f">{SECRET}", "~*", "-@all")
    answer = asyncio.run(wait_for_redis(f"redis://nobody:{SECRET}@127.0.0.1:{redis_server.port}/0", 30.0))
    assert isinstance(answer, RedisRefused) and "refused a command to the ACL user" in answer, answer
    assert SECRET not in answer
    assert refusal(redis.ConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused.")) is None


# the documented worker ACL ---------------------------------------------------------------------------------------


def test_the_documented_worker_acl_runs_a_distributed_crawl_and_a_store_worker(
        crawl: Any, sites: dict[str, SiteServer], redis_server: RedisServer, tmp_path: Path) -> None:  # noqa: F811
    url = add_worker_user(redis_server)
    password = url.split("@")[0].rsplit(":", 1)[1]
    admin = redis_server.client()
    result = crawl("docs", url=sites["crawl_site"].url + "docs/", settings={
        "REDIS_URL": url, "LOG_LEVEL": "DEBUG", "SKILLGRAPH_RECENCY_HOURS": 0})
    assert result.returncode == 0, result.log[-3000:]
    stats = result.stats
    assert stats["skillgraph/graph/committed"] == 1 and stats["scheduler/enqueued/redis"] >= 7, "the shared frontier"
    queued = admin.llen("skillgraph:queue")
    assert queued == stats["skillgraph/dual_write/pushed"] == len(result.sources["pages"]) >= 7
    proc = run_scrapy(["worker", "--burst", "-s", f"REDIS_URL={url}", "-s", HASHING, "-s", "LOG_LEVEL=DEBUG",
                       "-s", f"SKILLGRAPH_STORE_URL=sqlite:///{tmp_path}/store.sqlite3"], timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert admin.llen("skillgraph:queue") == 0 == admin.llen("skillgraph:processing"), "every document stored"
    assert admin.execute_command("ACL", "LOG") == [], "no command of the crawl or the worker was refused"
    for output in (result.log, proc.stderr, proc.stdout):
        assert password not in output and redis_server.password not in output
    worker = redis.Redis.from_url(url)
    for command in (("CONFIG", "GET", "requirepass"), ("FLUSHALL",), ("KEYS", "*"), ("ACL", "LIST"),
                    ("GET", "other-app:key"), ("SHUTDOWN",)):
        with pytest.raises(redis.exceptions.NoPermissionError):
            worker.execute_command(*command)
