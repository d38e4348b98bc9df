"""ProgressLine: what a running build is doing, every few seconds (docs/build.md).

A documentation crawl runs for minutes; Scrapy's own once-a-minute "Crawled N
pages" has no total and says nothing of the bounds. So every
``SKILLGRAPH_PROGRESS_INTERVAL`` seconds one line says how far the build is:
pages written of the URLs known, requests queued, pages per tier, warnings,
the rate, and which bound (``SKILLGRAPH_MAX_PAGES`` or
``SKILLGRAPH_CRAWL_TIMEOUT``) is nearest, so a user knows whether the build
will finish or stop at a bound.

Where it goes depends on who reads it: on a terminal, one line on stderr that
rewrites itself (it is shown whatever the log level; cleared before a log
record is written to the same terminal, so log lines never start in its
middle, and at the end, so the summary stands alone); otherwise (a pipe, a
file, scrapyd) an INFO log line, so logs stay line-oriented and free of
control characters.

It reads the :class:`~skillgraph.build.Build` (the one owner of the build's
state) plus public stats: pages *written* are the graph writer's own count
(``skillgraph/graph/pages``, the length of ``sources.json`` ``pages``), per tier
``skillgraph/graph/tier/<tier>``, requests queued are Scrapy's
``scheduler/enqueued`` less ``scheduler/dequeued`` (the engine's scheduler is
only reachable through a private slot). The end-of-build summary is
:mod:`skillgraph.extensions.summary`.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from skillgraph.build import Build

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

TIER_STAT = "skillgraph/graph/tier/"
#: Tiers in DESIGN.md's order (cheapest source first); others (a future tier) follow by name.
TIER_ORDER = ("corpus", "markdown", "html", "negotiated", "render", "best-effort")


def _stat(crawler: Crawler, name: str) -> int:
    assert crawler.stats is not None
    return int(crawler.stats.get_value(name, 0) or 0)


def pages_written(crawler: Crawler) -> int:
    """Pages in the build so far (written or carried over), as ``sources.json`` will list them."""
    return _stat(crawler, "skillgraph/graph/pages")


def tier_counts(crawler: Crawler) -> dict[str, int]:
    """Pages in the build per tier (``sources.json`` ``pages[].tier``), in DESIGN.md's tier order."""
    assert crawler.stats is not None
    counts = {key[len(TIER_STAT):]: int(value or 0) for key, value in crawler.stats.get_stats().items()
              if key.startswith(TIER_STAT)}
    rank = {tier: i for i, tier in enumerate(TIER_ORDER)}
    return dict(sorted(counts.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))


def show_tiers(counts: dict[str, int]) -> str:
    return ", ".join(f"{tier} {n}" for tier, n in counts.items()) or "none yet"


def nearest_bound(pages: int, max_pages: int | None, elapsed: float, timeout: float) -> str:
    """The bound the build is closest to, as a fraction used: pages of ``max_pages`` or seconds of the timeout."""
    bounds: list[tuple[float, str]] = []
    if max_pages:
        bounds.append((pages / max_pages, f"{pages}/{max_pages} pages"))
    if timeout > 0:
        bounds.append((elapsed / timeout, f"{elapsed:.0f}/{timeout:g} s"))
    if not bounds:
        return "no bound"
    used, text = max(bounds)
    return f"{text} ({min(used, 1.0):.0%})"


class ProgressLine:
    """One progress line every ``SKILLGRAPH_PROGRESS_INTERVAL`` seconds while the spider runs."""

    def __init__(self, crawler: Crawler, stream: TextIO | None = None) -> None:
        if not crawler.settings.getbool("SKILLGRAPH_PROGRESS_ENABLED", True):
            raise NotConfigured  # switched off on purpose: no message, so Scrapy does not warn
        self.interval = crawler.settings.getfloat("SKILLGRAPH_PROGRESS_INTERVAL", 5.0)
        if self.interval <= 0:
            raise NotConfigured(f"SKILLGRAPH_PROGRESS_INTERVAL is {self.interval:g}, not > 0")
        self.timeout = max(crawler.settings.getfloat("SKILLGRAPH_CRAWL_TIMEOUT", 240), 0.0)
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = _is_terminal(self.stream)
        self.shown = False  # a terminal line is on screen (cleared at the end)
        self.crawler = crawler
        self.build = Build.of(crawler)
        self.started = time.monotonic()
        self.loop: Any = None  # AsyncioLoopingCall or twisted's LoopingCall, by reactor
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProgressLine:
        return cls(crawler)

    def spider_opened(self) -> None:
        self.started = time.monotonic()
        if self.terminal:
            for handler in _handlers_on(self.stream):
                handler.addFilter(self.clear_filter)
        self.loop = create_looping_call(self.log_progress)
        self.loop.start(self.interval, now=False)

    def spider_closed(self) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        self.loop = None
        self.clear()
        for handler in _handlers_on(self.stream):
            handler.removeFilter(self.clear_filter)

    def clear(self) -> None:
        """Take the terminal line away (before a log record, and at the end)."""
        if self.shown:
            self.shown = False
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def clear_filter(self, record: logging.LogRecord) -> bool:
        """A log handler's filter on the same terminal: the line goes before the record is written."""
        self.clear()
        return True

    def line(self) -> str:
        """The progress of the build now (without the "Progress of NAME: " lead)."""
        crawler, build = self.crawler, self.build
        elapsed = time.monotonic() - self.started
        pages = pages_written(crawler)
        skipped = sum(1 for entry in build.ledger.values() if entry.outcome == "skipped")
        queued = max(_stat(crawler, "scheduler/enqueued") - _stat(crawler, "scheduler/dequeued"), 0)
        rate = pages * 60 / elapsed if elapsed > 0 else 0.0
        bound = nearest_bound(pages, build.max_pages if build.bounded else None, elapsed, self.timeout)
        return (f"{pages} pages written of {len(build.ledger)} URLs known, {queued} requests queued, "
                f"{skipped} skipped; tiers: {show_tiers(tier_counts(crawler))}; {len(build.warnings)} warnings; "
                f"{_stat(crawler, 'response_received_count')} responses, {elapsed:.0f}s elapsed, "
                f"{rate:.1f} pages/min; nearest bound: {bound}")

    def log_progress(self) -> None:
        name = self.build.name
        if name is None:  # a crawl that builds no graph (``scrapy detect``, the batch's detection): no progress
            return
        text = f"Progress of {name}: {self.line()}"
        if not self.terminal:
            logger.info("%s", text)
            return
        width = _columns(self.stream) - 1  # a wrapped line could not be rewritten in place
        if len(text) > width > 20:
            text = text[: width - 1] + "…"
        self.stream.write(f"\r{text}\x1b[K")
        self.stream.flush()
        self.shown = True


def _columns(stream: TextIO) -> int:
    """The terminal's width: of the stream itself (stdout may be a pipe), else $COLUMNS or 80."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return shutil.get_terminal_size().columns


def _handlers_on(stream: TextIO) -> list[logging.Handler]:
    """The root logger's handlers that write to ``stream`` (Scrapy's own writes to stderr)."""
    return [h for h in logging.getLogger().handlers if getattr(h, "stream", None) is stream]


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False
