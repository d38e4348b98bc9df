"""Scrapy internals: the engine's slot, the scraper's and the downloader's slots, the HTTP/1.1 handler's agent.

Checked against Scrapy 2.19.0 (:data:`skillgraph.compat.CHECKED_VERSIONS`).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

import scrapy.utils.deprecate as _deprecate


class _InspectWithoutSource:
    """Scrapy's ``inspect`` while its TLS modules load: ``stack()`` from the frames alone.

    ``scrapy.core.downloader.contextfactory`` and ``tls`` each build deprecated
    aliases with ``create_deprecated_class``, which calls ``inspect.stack()``
    only to name the module that called it (``stack()[1]``). ``inspect.stack()``
    reads the source line of every frame of the import chain and, for each
    frozen importlib frame, searches ``sys.modules``: 3 calls cost ~0.2 s of
    every crawl's start-up (``python -X importtime``: 0.27 s of the crawl
    process's 1.1 s of imports). The frames are the same; only their source
    lines (``code_context``, which Scrapy does not read) are left out. Every
    other name is ``inspect``'s own. Checked against Scrapy 2.19.0.
    """

    def __getattr__(self, name: str) -> Any:
        return getattr(inspect, name)

    @staticmethod
    def stack(context: int = 1) -> list[inspect.FrameInfo]:
        frames: list[inspect.FrameInfo] = []
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            code = frame.f_code
            frames.append(inspect.FrameInfo(frame, code.co_filename, frame.f_lineno, code.co_name, None, None))
            frame = frame.f_back
        return frames


@contextmanager
def _cheap_deprecation_stacks() -> Iterator[None]:
    """``scrapy.utils.deprecate`` sees :class:`_InspectWithoutSource` for the duration (only that module)."""
    real = getattr(_deprecate, "inspect", None)
    if real is not inspect:  # another Scrapy's module: left as it is (only the start-up cost is at stake)
        yield
        return
    _deprecate.inspect = _InspectWithoutSource()  # type: ignore[assignment]
    try:
        yield
    finally:
        _deprecate.inspect = real


with _cheap_deprecation_stacks():  # the first import of the HTTP/1.1 handler brings contextfactory and tls
    from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler, _ScrapyAgent

from scrapy.core.downloader import Slot as DownloadSlot  # noqa: E402
from scrapy.core.scraper import Slot as ScraperSlot  # noqa: E402
from scrapy.utils._download_handlers import wrap_twisted_exceptions as _wrap_twisted_exceptions  # noqa: E402

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.core.downloader import Downloader
    from scrapy.core.engine import ExecutionEngine
    from scrapy.http import Response
    from twisted.internet.defer import Deferred
    from twisted.web.client import Agent, HTTPConnectionPool
    from twisted.web.iweb import IPolicyForHTTPS

__all__ = [
    "DownloadSlot",
    "HTTP11DownloadHandler",
    "ScraperSlot",
    "ScrapyAgent",
    "bytes_waiting",
    "count_responses_as_at_least",
    "download_slots",
    "per_slot_settings",
    "requests_in_progress",
    "responses_waiting",
    "scraper_slot",
    "scrapy_agent_options",
    "set_slot_delay",
    "set_slot_last_seen",
    "slot_backlog",
    "slot_delay",
    "slot_last_seen",
    "slot_of",
    "take_slot_queue",
    "wake_engine",
    "wrap_twisted_exceptions",
]

# The engine -------------------------------------------------------------------------------


def requests_in_progress(engine: ExecutionEngine | None) -> set[Request]:
    """The requests the engine is not done with: ``ExecutionEngine._slot.inprogress`` (private).

    A request stays in that set from its download through its callback and
    the item pipelines of what the callback returned; no signal marks that
    last step, so the distributed scheduler reads it to acknowledge the
    requests it popped from the shared frontier. Without an engine slot the
    downloader's public ``active`` set (which ends before the callback) is
    the answer, without an engine an empty set. Checked against Scrapy 2.19.0.
    """
    slot = getattr(engine, "_slot", None)
    busy: set[Request] | None = getattr(slot, "inprogress", None)
    if busy is None:
        busy = engine.downloader.active if engine is not None else set()
    return busy


def wake_engine(engine: ExecutionEngine | None) -> None:
    """Ask the engine for requests now: ``ExecutionEngine._slot.nextcall.schedule()`` (private).

    The engine pulls requests from its scheduler when something happens, and
    otherwise every 5 s (its slot heartbeat). A distributed worker waiting on
    other workers schedules that pull itself once the shared frontier may
    hold requests again. Does nothing without an engine slot. Checked against
    Scrapy 2.19.0.
    """
    nextcall = getattr(getattr(engine, "_slot", None), "nextcall", None)
    if nextcall is not None:
        nextcall.schedule()


# The scraper's slot (``scrapy.core.scraper.Slot`` is undocumented) -------------------------


def scraper_slot(engine: ExecutionEngine | None) -> ScraperSlot | None:
    """The scraper's slot: ``ExecutionEngine.scraper.slot`` (undocumented), made when the spider opens.

    None before that, or without an engine. Checked against Scrapy 2.19.0.
    """
    return getattr(getattr(engine, "scraper", None), "slot", None)


def count_responses_as_at_least(slot: ScraperSlot, size: int) -> int:
    """Each response the scraper's slot takes counts as at least ``size`` bytes toward its bound in bytes.

    The bound is ``SCRAPER_SLOT_MAX_ACTIVE_SIZE``; the minimum is ``Slot.MIN_RESPONSE_SIZE``
    (1024, undocumented), set here on the instance and never below Scrapy's own:
    ``add_response_request`` and ``finish_response`` read it through ``self``, so a response
    is counted out as it was counted in as long as it is set before the first response.
    Returns the minimum set. Checked against Scrapy 2.19.0.
    """
    slot.MIN_RESPONSE_SIZE = max(size, ScraperSlot.MIN_RESPONSE_SIZE)
    return slot.MIN_RESPONSE_SIZE


def bytes_waiting(slot: ScraperSlot) -> int:
    """What the responses the scraper's slot holds count toward its bound (``active_size``, undocumented).

    Checked against Scrapy 2.19.0.
    """
    return slot.active_size


def responses_waiting(slot: ScraperSlot) -> int:
    """Responses the scraper's slot holds: queued for their callback or in it (``queue``, ``active``).

    Both undocumented. Checked against Scrapy 2.19.0.
    """
    return len(slot.queue) + len(slot.active)


# The downloader's slots (``scrapy.core.downloader.Slot`` is undocumented) ------------------


def download_slots(downloader: Downloader | None) -> dict[str, DownloadSlot]:
    """Slot key -> slot: ``Downloader.slots`` (undocumented); empty without a downloader.

    Politeness changes the delay of a host's live slot; the distributed
    scheduler looks for requests waiting in any slot's queue. Checked against
    Scrapy 2.19.0.
    """
    slots: dict[str, DownloadSlot] = getattr(downloader, "slots", None) or {}
    return slots


def slot_of(downloader: Downloader | None, key: str) -> DownloadSlot | None:
    """The live slot of ``key`` (``Downloader.slots[key]``, undocumented), None if it has none (yet).

    Checked against Scrapy 2.19.0.
    """
    return download_slots(downloader).get(key)


def per_slot_settings(downloader: Downloader) -> dict[str, dict[str, Any]]:
    """``Downloader.per_slot_settings`` (undocumented): slot key -> settings of slots created later.

    The downloader copies ``DOWNLOAD_SLOTS`` there and builds every new slot
    (idle slots are collected and rebuilt) from it: a robots.txt
    ``Crawl-delay`` written there outlives the slot alive now. Checked
    against Scrapy 2.19.0.
    """
    return downloader.per_slot_settings


def slot_backlog(slot: DownloadSlot) -> int:
    """Requests waiting in the slot's queue, not yet downloading: ``len(Slot.queue)`` (undocumented).

    Checked against Scrapy 2.19.0.
    """
    return len(slot.queue)


def take_slot_queue(slot: DownloadSlot) -> list[tuple[Request, Deferred[Response]]]:
    """Empty the slot's queue (``Slot.queue``, undocumented): the requests waiting for their delay.

    Each waits on its deferred; the caller fires it (an errback ends the
    request). At the crawl timeout the engine would otherwise send them one
    delay apart before it can close: 16 queued requests behind a 1 s delay held
    a timed-out crawl 20 s. Checked against Scrapy 2.19.0.
    """
    taken = list(slot.queue)
    slot.queue.clear()
    return taken


def slot_delay(slot: DownloadSlot) -> float:
    """``Slot.delay`` (undocumented): seconds between two downloads of the slot, before jitter.

    Checked against Scrapy 2.19.0.
    """
    return slot.delay


def set_slot_delay(slot: DownloadSlot, delay: float, jitter: float | None = None) -> None:
    """Set ``Slot.delay`` and, when given, ``Slot.jitter`` (undocumented; jitter 0: exactly ``delay``).

    Scrapy has no public way to change the delay of one host at run time;
    politeness applies a robots.txt ``Crawl-delay`` and a ``Retry-After``
    back-off with it. Checked against Scrapy 2.19.0.
    """
    slot.delay = delay
    if jitter is not None:
        slot.jitter = jitter


def slot_last_seen(slot: DownloadSlot) -> float:
    """``Slot.lastseen`` (undocumented): ``time.monotonic()`` of the slot's last download start.

    Checked against Scrapy 2.19.0.
    """
    return slot.lastseen


def set_slot_last_seen(slot: DownloadSlot, when: float) -> None:
    """Set ``Slot.lastseen``: the slot's next download waits for its delay counted from ``when``.

    Politeness sets it to now with a ``Retry-After`` delay, so the whole slot
    holds back for that long. Checked against Scrapy 2.19.0.
    """
    slot.lastseen = when


# The HTTP/1.1 download handler ------------------------------------------------------------


@contextmanager
def wrap_twisted_exceptions() -> Iterator[None]:
    """Twisted's download errors as Scrapy's: ``scrapy.utils._download_handlers.wrap_twisted_exceptions``.

    The private module's context manager, as ``HTTP11DownloadHandler.download_request``
    uses it; the SOCKS handler downloads with its own agent and raises the
    same exceptions. Checked against Scrapy 2.19.0.
    """
    with _wrap_twisted_exceptions():
        yield


def scrapy_agent_options(handler: HTTP11DownloadHandler) -> dict[str, Any]:
    """Keyword arguments of :class:`ScrapyAgent` from the handler's private configuration.

    ``HTTP11DownloadHandler._contextFactory``, ``_bind_address``, ``_pool``,
    ``_crawler`` and ``_default_maxsize``, ``_default_warnsize``,
    ``_fail_on_dataloss``, ``_tls_verbose_logging`` (from
    ``BaseHttpDownloadHandler``): a SOCKS download shares the handler's TLS
    policy, connection pool and size limits. Checked against Scrapy 2.19.0.
    """
    return {
        "contextFactory": handler._contextFactory,
        "bindAddress": handler._bind_address,
        "pool": handler._pool,
        "maxsize": handler._default_maxsize,
        "warnsize": handler._default_warnsize,
        "fail_on_dataloss": handler._fail_on_dataloss,
        "crawler": handler._crawler,
        "tls_verbose_logging": handler._tls_verbose_logging,
    }


class ScrapyAgent(_ScrapyAgent):
    """Scrapy's private per-request agent ``http11._ScrapyAgent``, its private hook under a public name.

    It downloads one request (timeouts, size limits, the response object)
    through the Twisted ``Agent`` its ``_get_agent(request, timeout)`` picks;
    a subclass overrides :meth:`twisted_agent` instead, with the agent's
    private ``_bindAddress``, ``_contextFactory`` and ``_pool`` as
    :attr:`bind_address`, :attr:`context_factory` and :attr:`pool`. The SOCKS
    handler keeps all of it and connects through the proxy. Checked against
    Scrapy 2.19.0.
    """

    def _get_agent(self, request: Request, timeout: float) -> Agent:
        return self.twisted_agent(request, timeout)

    def twisted_agent(self, request: Request, timeout: float) -> Agent:
        """The Twisted ``Agent`` that sends ``request`` (``_ScrapyAgent._get_agent``). Checked against Scrapy 2.19.0."""
        return super()._get_agent(request, timeout)

    @property
    def bind_address(self) -> str | tuple[str, int] | None:
        """``DOWNLOAD_BIND_ADDRESS`` (``_ScrapyAgent._bindAddress``). Checked against Scrapy 2.19.0."""
        return self._bindAddress

    @property
    def context_factory(self) -> IPolicyForHTTPS:
        """The handler's TLS policy (``_ScrapyAgent._contextFactory``). Checked against Scrapy 2.19.0."""
        return self._contextFactory

    @property
    def pool(self) -> HTTPConnectionPool | None:
        """The handler's connection pool (``_ScrapyAgent._pool``). Checked against Scrapy 2.19.0."""
        return self._pool
