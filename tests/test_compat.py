"""skillgraph.compat against the installed Scrapy, Twisted and plugins (issue 12): an upgrade fails here, loudly.

Every wrapper of ``skillgraph/compat/`` is exercised against the real library,
and the private attribute, class or hook it wraps is checked for existence and
signature. Checks that need a Twisted reactor (a live engine and downloader,
Scrapy's HTTP/1.1 agent, a Twisted ``Agent``, scrapy-playwright's handler) run
in a fresh interpreter with Scrapy's default asyncio reactor installed, as
``scrapy crawl`` runs, so that this pytest process keeps no reactor.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import pkgutil
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine
from importlib.metadata import version
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from scrapy import Request, Spider

import skillgraph
from skillgraph import compat
from skillgraph.compat import CHECKED_VERSIONS, installed_versions, unchecked_versions
from skillgraph.compat import scrapy as compat_scrapy
from skillgraph.compat import scrapy_playwright as compat_playwright
from skillgraph.compat import scrapy_redis as compat_redis
from skillgraph.compat import scrapy_splash as compat_splash
from skillgraph.compat import twisted as compat_twisted

ROOT = Path(__file__).resolve().parent.parent
#: compat module -> the distribution (a key of CHECKED_VERSIONS) whose internals it wraps
MODULES: dict[ModuleType, str] = {
    compat_scrapy: "Scrapy",
    compat_twisted: "Twisted",
    compat_redis: "scrapy-redis",
    compat_playwright: "scrapy-playwright",
    compat_splash: "scrapy-splash",
}
THIRD_PARTY = ("scrapy", "scrapy_redis", "scrapy_playwright", "scrapy_splash", "twisted")


def upgrade(module: ModuleType, what: str) -> str:
    """The failure message: which private internal moved, and where skillgraph wraps it."""
    return (f"{what}: the installed library changed an internal that {module.__name__} "
            f"({Path(module.__file__ or '').relative_to(ROOT)}) wraps; re-check that module against the new "
            "source, then update requirements.txt, skillgraph.compat.CHECKED_VERSIONS and its 'Checked against' lines")


def params(function: Any) -> list[str]:
    return list(inspect.signature(function).parameters)


def in_reactor_process(check: str) -> None:
    """Run ``check`` (a function of this module) in a fresh interpreter with Scrapy's asyncio reactor."""
    code = ("from scrapy.utils.reactor import install_reactor\n"
            "install_reactor('twisted.internet.asyncioreactor.AsyncioSelectorReactor')\n"
            f"from tests.test_compat import {check}\n{check}()\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, f"{check} failed under the reactor:\n{proc.stdout[-2000:]}{proc.stderr[-6000:]}"


def run_under_reactor(coro: Coroutine[Any, Any, Any]) -> None:
    """Run ``coro`` on the installed (asyncio) reactor until it ends; re-raise its error."""
    from scrapy.utils.defer import deferred_from_coro
    from twisted.internet import reactor
    from twisted.python.failure import Failure

    outcome: list[Any] = []

    def start() -> None:
        done = deferred_from_coro(coro)
        done.addBoth(outcome.append)
        done.addBoth(lambda _: reactor.stop())  # type: ignore[attr-defined]

    reactor.callWhenRunning(start)  # type: ignore[attr-defined]
    reactor.run(installSignalHandlers=False)  # type: ignore[attr-defined]
    if isinstance(outcome[0], Failure):
        outcome[0].raiseException()


# versions -----------------------------------------------------------------------------------


def pins() -> dict[str, str]:
    found: dict[str, str] = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if match := re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)", line.strip()):
            found[match[1].lower().replace("_", "-")] = match[2]
    return found


def test_installed_versions_are_the_pinned_and_checked_ones() -> None:
    pinned = pins()
    for name, checked in CHECKED_VERSIONS.items():
        assert pinned.get(name.lower()) == checked, (
            f"requirements.txt pins {name}=={pinned.get(name.lower())}, but skillgraph/compat/ was checked against "
            f"{checked}: re-check the wrappers of skillgraph/compat/ for {name}, then update CHECKED_VERSIONS")
    mismatched = unchecked_versions()
    assert not mismatched, "\n".join(
        f"{name} {installed} is installed, skillgraph/compat/ was checked against {checked}: run "
        "tests/test_compat.py, re-check the skillgraph/compat/ module of that library against the new source, "
        "then update requirements.txt, CHECKED_VERSIONS and the 'Checked against' lines"
        for name, (checked, installed) in mismatched.items())
    assert installed_versions() == {name: version(name) for name in CHECKED_VERSIONS}


def test_every_wrapper_says_which_version_it_was_checked_against() -> None:
    assert compat.__doc__ and "CHECKED_VERSIONS" in compat.__doc__
    modules = {info.name for info in pkgutil.iter_modules(compat.__path__, "skillgraph.compat.")}
    assert modules == {module.__name__ for module in MODULES}, "a skillgraph/compat/ module without its checks here"
    for module, library in MODULES.items():
        stamp = f"Checked against {library} {CHECKED_VERSIONS[library]}"
        documented: list[tuple[str, Any]] = [(module.__name__, module)]
        for name in module.__all__:
            obj = getattr(module, name)
            if getattr(obj, "__module__", None) != module.__name__:
                continue  # a re-export (DownloadSlot, scrapy-splash's middleware module)
            documented.append((name, obj))
            if inspect.isclass(obj):
                public = {attr: member for attr, member in vars(obj).items() if not attr.startswith("_")}
                documented += [(f"{name}.{attr}", member) for attr, member in public.items()
                               if inspect.isfunction(member) or isinstance(member, property)]
        for name, obj in documented:
            doc = " ".join((inspect.getdoc(obj) or "").split())
            assert stamp in doc, f"{module.__name__}: {name} does not say '{stamp}'"


# Scrapy: the TLS modules' deprecated aliases, loaded without reading source ---------------------


def test_cheap_stack_is_inspect_stack_without_source_lines() -> None:
    def both() -> tuple[list[inspect.FrameInfo], list[inspect.FrameInfo]]:
        return compat_scrapy._InspectWithoutSource.stack(), inspect.stack()

    cheap, real = both()
    assert [(f.frame, f.filename, f.lineno, f.function) for f in cheap] == \
        [(f.frame, f.filename, f.lineno, f.function) for f in real]
    assert all(f.code_context is None and f.index is None for f in cheap)
    assert compat_scrapy._InspectWithoutSource().getmodule is inspect.getmodule  # every other name: inspect's


def test_scrapy_tls_modules_load_without_inspect_stack() -> None:
    """Importing the add-on loads contextfactory and tls; their create_deprecated_class calls read no source.

    A fresh interpreter with ``inspect.stack`` counted: an import reordered so
    that Scrapy's HTTP/1.1 handler loads before :mod:`skillgraph.compat.scrapy`
    costs every crawl ~0.2 s of start-up again, and fails here.
    """
    code = ("import inspect\ncalls = []\nreal = inspect.stack\n"
            "inspect.stack = lambda context=1: calls.append(1) or real(context)[1:]\n"
            "import skillgraph.addon, scrapy.utils.deprecate as d\n"
            "from scrapy.core.downloader import contextfactory, tls\n"
            "assert d.inspect is inspect, 'scrapy.utils.deprecate.inspect not restored'\n"
            "print(len(calls), contextfactory.ScrapyClientContextFactory.__module__,\n"
            "      contextfactory.AcceptableProtocolsContextFactory.__module__,\n"
            "      tls.ScrapyClientTLSOptions.__module__)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-4000:]
    factory = "scrapy.core.downloader.contextfactory"
    assert proc.stdout.split() == ["0", factory, factory, "scrapy.core.downloader.tls"]


def test_a_scrapy_whose_deprecate_module_has_no_inspect_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    import scrapy.utils.deprecate as deprecate

    monkeypatch.delattr(deprecate, "inspect")
    with compat_scrapy._cheap_deprecation_stacks():
        assert not hasattr(deprecate, "inspect")
    assert not hasattr(deprecate, "inspect")


# Scrapy: the engine and the downloader (live, in a real crawl) ----------------------------------


class _EngineProbe(Spider):
    """A crawl of data: URLs whose callbacks read the live engine and downloader through compat."""

    name = "compat_engine"
    seen: dict[str, Any] = {}

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> _EngineProbe:
        from scrapy import signals

        spider: _EngineProbe = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.idle, signal=signals.spider_idle)
        return spider

    async def start(self) -> Any:
        yield Request("data:,first", meta={"download_slot": "probe"}, dont_filter=True)

    def parse(self, response: Any) -> Any:
        engine = self.crawler.engine
        downloader = engine.downloader
        self.seen["engine_slot"] = type(engine._slot)  # the private class itself, to name it when it moves
        self.seen["in_callback"] = response.request in compat_scrapy.requests_in_progress(engine)
        slot = compat_scrapy.slot_of(downloader, "probe")
        self.seen["slot"] = slot
        self.seen["slots"] = compat_scrapy.download_slots(downloader) is downloader.slots
        self.seen["last_seen"] = (compat_scrapy.slot_last_seen(slot), time.monotonic())
        self.seen["backlog"] = compat_scrapy.slot_backlog(slot)
        compat_scrapy.set_slot_delay(slot, 0.4, jitter=0.0)
        self.seen["delay"] = (compat_scrapy.slot_delay(slot), slot.jitter, slot.download_delay())
        now = time.monotonic()
        self.seen["held_at"] = now
        compat_scrapy.set_slot_last_seen(slot, now + 0.3)  # the next download waits 0.3 + 0.4 s from now
        compat_scrapy.per_slot_settings(downloader)["fresh"] = {"delay": 0.25, "jitter": 0.0}
        yield Request("data:,second", callback=self.parse_second, meta={"download_slot": "probe"}, dont_filter=True)
        yield Request("data:,fresh", callback=self.parse_fresh, meta={"download_slot": "fresh"}, dont_filter=True)
        yield {"url": response.url}

    def parse_second(self, response: Any) -> None:
        self.seen["second_after"] = time.monotonic() - self.seen["held_at"]

    def parse_fresh(self, response: Any) -> None:
        slot = compat_scrapy.slot_of(self.crawler.engine.downloader, "fresh")
        self.seen["fresh"] = (compat_scrapy.slot_delay(slot), slot.jitter)

    def parse_woken(self, response: Any) -> None:
        self.seen["woken_after"] = time.monotonic() - self.seen["woken_at"]

    def idle(self) -> None:
        """Like the distributed scheduler: stay open, then wake the engine for a request it was not told of."""
        from scrapy.exceptions import DontCloseSpider
        from scrapy.utils.asyncio import call_later

        if "woken_at" in self.seen:
            return
        self.seen["woken_at"] = None
        call_later(0.2, self.wake)
        raise DontCloseSpider

    def wake(self) -> None:
        engine = self.crawler.engine
        engine.scheduler.enqueue_request(Request("data:,woken", callback=self.parse_woken, dont_filter=True))
        self.seen["woken_at"] = time.monotonic()
        compat_scrapy.wake_engine(engine)


class _ItemProbe:
    """An item pipeline: the request whose callback made the item is still in progress."""

    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Any) -> _ItemProbe:
        return cls(crawler)

    def process_item(self, item: dict[str, Any]) -> dict[str, Any]:
        busy = compat_scrapy.requests_in_progress(self.crawler.engine)
        _EngineProbe.seen["in_pipeline"] = any(request.url == item["url"] for request in busy)
        return item


def live_engine_check() -> None:
    from scrapy.core.downloader import Slot
    from scrapy.utils.defer import maybe_deferred_to_future
    from scrapy.utils.test import get_crawler

    crawler = get_crawler(_EngineProbe, {"ITEM_PIPELINES": {_ItemProbe: 100}, "LOG_LEVEL": "WARNING",
                                         "DOWNLOAD_DELAY": 0})
    run_under_reactor(maybe_deferred_to_future(crawler.crawl()))
    seen, m = _EngineProbe.seen, compat_scrapy
    assert seen["engine_slot"].__module__ == "scrapy.core.engine", upgrade(m, "ExecutionEngine._slot moved")
    assert seen["in_callback"], upgrade(m, "ExecutionEngine._slot.inprogress lacks the request of a running callback")
    assert seen["in_pipeline"], upgrade(m, "ExecutionEngine._slot.inprogress ends before the item pipelines")
    assert m.requests_in_progress(crawler.engine) == set() and m.requests_in_progress(None) == set()
    assert seen["woken_after"] < 1.0, upgrade(
        m, f"ExecutionEngine._slot.nextcall.schedule() did not wake the engine ({seen['woken_after']:.1f} s)")
    m.wake_engine(None)
    assert seen["slots"] and isinstance(seen["slot"], Slot) and m.DownloadSlot is Slot, upgrade(m, "Downloader.slots")
    last_seen, now = seen["last_seen"]
    assert 0 < last_seen <= now, upgrade(m, "Slot.lastseen is no longer the monotonic time of the last download")
    assert seen["backlog"] == 0, upgrade(m, "Slot.queue")
    assert seen["delay"] == (0.4, 0.0, 0.4), upgrade(m, "Slot.delay / Slot.jitter")
    assert seen["second_after"] >= 0.65, upgrade(
        m, f"the downloader no longer waits Slot.delay from Slot.lastseen ({seen['second_after']:.2f} s)")
    assert seen["fresh"] == (0.25, 0.0), upgrade(m, "Downloader.per_slot_settings no longer makes new slots")
    assert m.download_slots(None) == {} and m.slot_of(None, "probe") is None


def test_engine_and_downloader_internals_in_a_live_crawl() -> None:
    in_reactor_process("live_engine_check")


def test_engine_and_slot_classes_have_the_wrapped_attributes() -> None:
    from scrapy.core import engine
    from scrapy.core.downloader import Downloader, Slot
    from scrapy.utils.reactor import CallLaterOnce

    m = compat_scrapy
    assert params(engine._Slot) == ["close_if_idle", "nextcall", "scheduler"], upgrade(m, "scrapy.core.engine._Slot")
    source = inspect.getsource(engine._Slot.__init__)
    assert "self.inprogress: set[Request]" in source and "self.nextcall" in source, upgrade(m, "_Slot attributes")
    assert "self._slot" in inspect.getsource(engine.ExecutionEngine.__init__), upgrade(m, "ExecutionEngine._slot")
    assert params(CallLaterOnce.schedule) == ["self", "delay"], upgrade(m, "CallLaterOnce.schedule")
    assert {"delay", "jitter", "lastseen", "queue"} <= {f.name for f in dataclasses.fields(Slot)}, upgrade(m, "Slot")
    init = inspect.getsource(Downloader.__init__)
    assert "self.slots: dict[str, Slot]" in init and "self.per_slot_settings" in init, upgrade(m, "Downloader")


def test_scraper_slot_counts_each_response_as_the_minimum_set_on_it() -> None:
    """The scraper's slot read through the wrappers, on Scrapy's own ``Slot`` (a live crawl finds the
    engine's: tests/test_response_backlog.py)."""
    from scrapy.core.scraper import Scraper, Slot
    from scrapy.http import Response

    m = compat_scrapy
    assert m.ScraperSlot is Slot and m.scraper_slot(None) is None
    assert "self.slot = Slot(" in inspect.getsource(Scraper.open_spider_async), upgrade(m, "Scraper.slot")
    for method in (Slot.add_response_request, Slot.finish_response):
        assert "self.MIN_RESPONSE_SIZE" in inspect.getsource(method), upgrade(m, f"Slot.{method.__name__}")
    slot = Slot(1000)
    assert m.count_responses_as_at_least(slot, 10) == Slot.MIN_RESPONSE_SIZE, "never below Scrapy's own"
    assert m.count_responses_as_at_least(slot, 4096) == 4096 and Slot.MIN_RESPONSE_SIZE == 1024
    request = Request("https://example.org/")
    response = Response(request.url, body=b"small", request=request)
    slot.add_response_request(response, request)
    assert m.responses_waiting(slot) == 1 and m.bytes_waiting(slot) == 4096 and slot.needs_backout()
    slot.next_response_request_deferred()
    assert m.responses_waiting(slot) == 1, "in its callback, still waiting"
    slot.finish_response(response, request)
    assert m.responses_waiting(slot) == 0 and m.bytes_waiting(slot) == 0, "counted out as counted in"


def test_take_slot_queue_empties_the_queue_the_downloader_reads() -> None:
    from scrapy.core.downloader import Downloader, Slot
    from twisted.internet.defer import Deferred

    m = compat_scrapy
    slot = Slot(2, 1.0, 0.0)
    waiting = [(Request(f"https://example.org/{n}"), Deferred()) for n in range(3)]
    slot.queue.extend(waiting)
    assert m.slot_backlog(slot) == 3
    assert m.take_slot_queue(slot) == waiting and m.slot_backlog(slot) == 0 and not slot.queue
    source = inspect.getsource(Downloader._process_queue)
    assert "slot.queue.popleft()" in source, upgrade(m, "Downloader._process_queue no longer pops Slot.queue")
    assert "slot.queue.append((request, d))" in inspect.getsource(Downloader._enqueue_request), upgrade(
        m, "Downloader._enqueue_request no longer queues (request, deferred) pairs")


# Scrapy: the HTTP/1.1 handler's agent; Twisted: the pool key ------------------------------------


def live_http11_check() -> None:
    from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler, _ScrapyAgent
    from scrapy.exceptions import DownloadConnectionRefusedError
    from scrapy.utils.defer import maybe_deferred_to_future
    from scrapy.utils.test import get_crawler
    from twisted.internet import reactor
    from twisted.web.client import Agent, HTTPConnectionPool, readBody
    from twisted.web.iweb import IPolicyForHTTPS

    from tests.servers import Rule, SiteServer, free_port

    m = compat_scrapy
    server = SiteServer(Path(tempfile.mkdtemp()), default=Rule(status=200, body=b"compat"))
    crawler = get_crawler(Spider, {"DOWNLOAD_MAXSIZE": 12345, "DOWNLOAD_WARNSIZE": 2345})
    handler = HTTP11DownloadHandler.from_crawler(crawler)
    options = m.scrapy_agent_options(handler)
    keywords = [p.name for p in inspect.signature(_ScrapyAgent.__init__).parameters.values()
                if p.kind == p.KEYWORD_ONLY]
    assert sorted(options) == sorted(k for k in keywords if k != "connectTimeout"), upgrade(m, "_ScrapyAgent()")
    assert IPolicyForHTTPS.providedBy(options["contextFactory"]), upgrade(m, "HTTP11DownloadHandler._contextFactory")
    assert isinstance(options["pool"], HTTPConnectionPool), upgrade(m, "HTTP11DownloadHandler._pool")
    assert options["crawler"] is crawler and options["bindAddress"] is None, upgrade(m, "_crawler / _bind_address")
    assert (options["maxsize"], options["warnsize"]) == (12345, 2345), upgrade(m, "_default_maxsize / _warnsize")
    assert options["fail_on_dataloss"] is True and options["tls_verbose_logging"] is False, upgrade(m, "handler flags")

    class Recording(m.ScrapyAgent):
        picked: list[Agent] = []

        def twisted_agent(self, request: Request, timeout: float) -> Agent:
            agent = super().twisted_agent(request, timeout)
            self.picked.append(agent)
            return agent

    class MarkedAgent(compat_twisted.PoolKeyAgent):
        def pool_key(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
            return (*key, "compat-marker")

    class RecordingPool(HTTPConnectionPool):
        keys: list[Any] = []

        def getConnection(self, key: Any, endpoint: Any) -> Any:  # noqa: N802
            self.keys.append(key)
            return super().getConnection(key, endpoint)

    async def scenario() -> None:
        agent = Recording(**options)
        assert (agent.pool, agent.context_factory, agent.bind_address) == (
            options["pool"], options["contextFactory"], None), upgrade(m, "_ScrapyAgent._pool/_contextFactory")
        with m.wrap_twisted_exceptions():
            response = await maybe_deferred_to_future(agent.download_request(Request(server.url + "page")))
        assert (response.status, response.body) == (200, b"compat")
        assert len(Recording.picked) == 1 and isinstance(Recording.picked[0], Agent), upgrade(m, "_get_agent")
        refused = Request(f"http://127.0.0.1:{free_port()}/")
        try:
            with m.wrap_twisted_exceptions():
                await maybe_deferred_to_future(m.ScrapyAgent(**options).download_request(refused))
        except DownloadConnectionRefusedError:
            pass
        else:
            raise AssertionError(upgrade(m, "wrap_twisted_exceptions no longer raises Scrapy's exceptions"))
        pool = RecordingPool(reactor, persistent=False)
        marked = MarkedAgent(reactor, pool=pool)
        answer = await maybe_deferred_to_future(marked.request(b"GET", server.url.encode()))
        await maybe_deferred_to_future(readBody(answer))
        assert pool.keys == [(b"http", b"127.0.0.1", server.port, "compat-marker")], upgrade(
            compat_twisted, f"Agent._requestWithEndpoint no longer passes the pool key ({pool.keys})")
        await handler.close()

    try:
        run_under_reactor(scenario())
    finally:
        server.stop()


def test_http11_agent_and_twisted_pool_key_on_a_real_download() -> None:
    in_reactor_process("live_http11_check")


def test_twisted_agent_request_with_endpoint_signature() -> None:
    from scrapy.core.downloader.handlers.http11 import _ScrapyAgent
    from twisted.web.client import Agent

    assert params(Agent._requestWithEndpoint) == [
        "self", "key", "endpoint", "method", "parsedURI", "headers", "bodyProducer", "requestPath"], upgrade(
        compat_twisted, "Agent._requestWithEndpoint")
    assert params(_ScrapyAgent._get_agent) == ["self", "request", "timeout"], upgrade(
        compat_scrapy, "_ScrapyAgent._get_agent")


# scrapy-playwright ---------------------------------------------------------------------------------


def test_playwright_handler_private_hooks() -> None:
    from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler as Base

    m = compat_playwright
    for name, expected in (("_maybe_launch_in_thread", ["self"]), ("_launch", ["self"]),
                           ("_download_request", ["self", "request", "spider"])):
        hook = getattr(Base, name, None)
        assert inspect.iscoroutinefunction(hook), upgrade(m, f"ScrapyPlaywrightDownloadHandler.{name} is gone or sync")
        assert params(hook) == expected, upgrade(m, f"ScrapyPlaywrightDownloadHandler.{name}{inspect.signature(hook)}")
    assert inspect.signature(Base._download_request).parameters["spider"].default is None
    source = inspect.getsource(Base.__init__) + inspect.getsource(Base.download_request)
    assert "self._maybe_launch_in_thread, signals.engine_started" in source, upgrade(m, "engine_started receiver")
    assert "self._download_request(request)" in source, upgrade(m, "download_request no longer calls _download_request")


def live_playwright_check() -> None:
    from scrapy import signals
    from scrapy.http import HtmlResponse
    from scrapy.utils.test import get_crawler

    from skillgraph.render.handler import LazyPlaywrightDownloadHandler

    m = compat_playwright

    class Probe(m.PlaywrightHandlerHooks):
        started = 0
        downloaded: list[tuple[Request, Any]] = []

        async def on_engine_started(self) -> None:
            self.started += 1

        async def browser_download(self, request: Request, spider: Spider | None = None) -> Any:
            self.downloaded.append((request, spider))
            return HtmlResponse(request.url, body=b"<p>compat</p>", request=request)

    probe_crawler, lazy_crawler = get_crawler(Spider), get_crawler(Spider)
    probe = Probe.from_crawler(probe_crawler)
    lazy = LazyPlaywrightDownloadHandler.from_crawler(lazy_crawler)

    async def scenario() -> None:
        await probe_crawler.signals.send_catch_log_async(signals.engine_started)
        assert probe.started == 1, upgrade(m, "engine_started no longer reaches _maybe_launch_in_thread")
        request = Request("http://127.0.0.1:1/page", meta={"playwright": True})
        response = await probe.download_request(request)
        assert probe.downloaded == [(request, None)] and response.body == b"<p>compat</p>", upgrade(
            m, "download_request no longer goes through _download_request for a playwright request")
        await lazy_crawler.signals.send_catch_log_async(signals.engine_started)
        assert getattr(lazy, "browser_provider", None) is None, "the lazy handler started Playwright at engine start"
        await probe.close()
        await lazy.close()

    run_under_reactor(scenario())


def test_playwright_hooks_on_a_real_handler() -> None:
    in_reactor_process("live_playwright_check")


# scrapy-redis --------------------------------------------------------------------------------------


class _RedisSpider(Spider):
    name = "compat_redis"

    def parse_page(self, response: Any) -> None:
        pass


def test_scrapy_redis_queue_encoding_round_trip() -> None:
    from scrapy_redis.queue import Base

    from skillgraph.distributed import serializer

    m = compat_redis
    assert params(Base._encode_request) == ["self", "request"], upgrade(m, "Base._encode_request")
    assert params(Base._decode_request) == ["self", "encoded_request"], upgrade(m, "Base._decode_request")
    spider = _RedisSpider()
    queue = Base(None, spider, "%(spider)s:requests", serializer=serializer)
    request = Request("http://docs.example/a", callback=spider.parse_page, meta={"depth": 2}, headers={"X-A": "1"},
                      body=b"b\xff", priority=3)
    data = m.encode_request(queue, request)
    assert isinstance(data, str) and '"callback":"parse_page"' in data, upgrade(m, "Base._encode_request")
    back = m.decode_request(queue, data)
    assert (back.url, back.callback, back.meta["depth"], back.priority, back.body, back.headers[b"X-A"]) == (
        request.url, spider.parse_page, 2, 3, b"b\xff", b"1"), upgrade(m, "Base._decode_request")
    with pytest.raises(TypeError):
        m.encode_request(queue, Request("http://docs.example/b", meta={"object": object()}))


# scrapy-splash -------------------------------------------------------------------------------------


def test_scrapy_splash_middleware_hooks() -> None:
    from scrapy.utils.test import get_crawler
    from scrapy_splash import SplashRequest

    m = compat_splash
    assert params(m.middleware.SplashMiddleware._get_slot_key) == ["self", "request_or_response"], upgrade(
        m, "SplashMiddleware._get_slot_key")
    assert "self._get_slot_key(request)" in inspect.getsource(m.middleware.SplashMiddleware), upgrade(
        m, "SplashMiddleware no longer asks _get_slot_key for the download slot")
    dedup_class = m.middleware.SplashDeduplicateArgsMiddleware
    assert params(dedup_class._process_request) == ["self", "request", "spider"], upgrade(m, "_process_request")

    class Probe(m.SplashMiddlewareHooks):
        def slot_key(self, request_or_response: Any) -> str:
            return "compat-slot"

    crawler = get_crawler(Spider, {"SPLASH_URL": "http://127.0.0.1:1"})
    spider = crawler.spider = Spider("compat_splash")
    middleware = Probe.from_crawler(crawler)
    middleware.spider_opened(spider)
    splashed = middleware.process_request(SplashRequest("http://docs.example/a", endpoint="render.html"), spider)
    assert splashed.meta["download_slot"] == "compat-slot", upgrade(m, "SplashMiddleware._get_slot_key")

    dedup = dedup_class()
    spider.state = {dedup.local_values_key: {}}
    script = "function main(splash) return splash:html() end"
    request = SplashRequest("http://docs.example/b", endpoint="execute", args={"lua_source": script},
                            cache_args=["lua_source"])
    fingerprint = m.dedup_splash_args(dedup, request, spider).meta["splash"]["args"]["lua_source"]
    assert fingerprint.startswith("LOCAL+") and spider.state[dedup.local_values_key] == {fingerprint: script}, upgrade(
        m, "SplashDeduplicateArgsMiddleware._process_request")


# the rule: private internals only in skillgraph/compat/ ---------------------------------------------


def _modules() -> list[tuple[str, Path]]:
    found = []
    for info in pkgutil.walk_packages(skillgraph.__path__, "skillgraph."):
        if info.name == "skillgraph.compat" or info.name.startswith("skillgraph.compat."):
            continue
        spec = importlib.util.find_spec(info.name)
        assert spec is not None and spec.origin is not None
        found.append((info.name, Path(spec.origin)))
    return found


def _private(name: object) -> bool:
    return isinstance(name, str) and name.startswith("_") and not name.startswith("__")


def _private_imports_and_getattrs(tree: ast.Module) -> list[tuple[int, str]]:
    """``from scrapy.x import _y``, ``from scrapy._x import y`` and ``getattr(obj, "_x")``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            names = [a.name for a in node.names if _private(a.name)]
            if parts[0] in THIRD_PARTY and (names or any(_private(p) for p in parts)):
                found.append((node.lineno, f"from {node.module} import {', '.join(names) or '...'}"))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) > 1
              and isinstance(node.args[1], ast.Constant) and _private(node.args[1].value)
              and not str(node.args[1].value).startswith("_skillgraph")):  # skillgraph's own marks on a spider
            found.append((node.lineno, ast.unparse(node)))
    return found


def _private_members(module: ModuleType, tree: ast.Module) -> list[str]:
    """Private members of a third-party base a skillgraph class reads, calls or overrides."""
    found = []
    for cls_node in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        cls = getattr(module, cls_node.name, None)
        if not inspect.isclass(cls):
            continue
        bases = [b for b in cls.__mro__[1:] if b.__module__.split(".")[0] in THIRD_PARTY]
        used = {n.attr for n in ast.walk(cls_node) if isinstance(n, ast.Attribute) and _private(n.attr)}
        used |= {n.name for n in cls_node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                 and _private(n.name)}
        for attr in sorted(used - {"_abc_impl"}):
            base = next((b for b in bases if attr in vars(b)
                         or re.search(rf"self\.{re.escape(attr)}\b", inspect.getsource(b))), None)
            if base is not None:
                found.append(f"{cls_node.name} uses {base.__module__}.{base.__qualname__}.{attr}")
    return found


def test_no_private_internals_of_scrapy_twisted_or_plugins_outside_compat() -> None:
    """Private names imported, ``getattr``-ed, or used by a subclass, anywhere in skillgraph but compat.

    Undocumented attributes without an underscore (``Slot.delay``) cannot be
    told apart here: review keeps those in compat too.
    """
    found: list[str] = []
    for name, path in _modules():
        tree = ast.parse(path.read_text())
        where = path.relative_to(ROOT)
        found += [f"{where}:{line}: {what}" for line, what in _private_imports_and_getattrs(tree)]
        found += [f"{where}: {what}" for what in _private_members(importlib.import_module(name), tree)]
    assert not found, "private internals outside skillgraph/compat/ (wrap them there):\n" + "\n".join(found)
