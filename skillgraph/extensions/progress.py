"""ProgressLine and BuildSummary: what a running build is doing, and how it ended (docs/build.md).

A documentation crawl runs for minutes with nothing but per-request log lines,
and its result is spread over ``sources.json``, ``failed.json`` and the stats.
So one log line every ``SKILLGRAPH_PROGRESS_INTERVAL`` seconds says how far
the build is, and one summary on stdout (``SKILLGRAPH_SUMMARY_FORMAT``: human
``text`` or one ``json`` line for scripts) says how it ended, apart from the log
so a caller can read it without parsing log lines.

Both read the :class:`~skillgraph.build.Build` (the one owner of the build's
state) plus public stats: pages *written* are the graph writer's own count
(``skillgraph/graph/pages``, the length of ``sources.json`` ``pages``), requests
queued are Scrapy's ``scheduler/enqueued`` less ``scheduler/dequeued`` (the
engine's scheduler is only reachable through a private slot).

The summary is written on ``engine_stopped``, not ``spider_closed``: extensions
are built before the engine's item pipelines, so their ``spider_closed``
handlers run first, before the graph writer has decided the outcome.
``engine_stopped`` comes once every ``spider_closed`` handler has finished.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from skillgraph.build import Build
from skillgraph.commands.crawl import failure_sentence

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

FORMATS = ("text", "json")
OUT_OF_SCOPE = "out-of-scope"  # counted, never a ``skipped`` entry: shown apart from the skips


def _stat(crawler: Crawler, name: str) -> int:
    assert crawler.stats is not None
    return int(crawler.stats.get_value(name, 0) or 0)


def pages_written(crawler: Crawler) -> int:
    """Pages in the build so far (written or carried over), as ``sources.json`` will list them."""
    return _stat(crawler, "skillgraph/graph/pages")


class ProgressLine:
    """Log one INFO line every ``SKILLGRAPH_PROGRESS_INTERVAL`` seconds while the spider runs."""

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("SKILLGRAPH_PROGRESS_ENABLED", True):
            raise NotConfigured  # switched off on purpose: no message, so Scrapy does not warn
        self.interval = crawler.settings.getfloat("SKILLGRAPH_PROGRESS_INTERVAL", 5.0)
        if self.interval <= 0:
            raise NotConfigured(f"SKILLGRAPH_PROGRESS_INTERVAL is {self.interval:g}, not > 0")
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
        self.loop = create_looping_call(self.log_progress)
        self.loop.start(self.interval, now=False)

    def spider_closed(self) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        self.loop = None

    def log_progress(self) -> None:
        crawler, build = self.crawler, self.build
        elapsed = time.monotonic() - self.started
        pages = pages_written(crawler)
        skipped = sum(1 for entry in build.ledger.values() if entry.outcome == "skipped")
        queued = max(_stat(crawler, "scheduler/enqueued") - _stat(crawler, "scheduler/dequeued"), 0)
        responses = _stat(crawler, "response_received_count")
        name = build.name or getattr(crawler.spider, "name", "?")
        logger.info("Progress of %s: %d pages written, %d skipped, %d requests queued, %d responses, "
                    "%.0fs elapsed, %.1f pages/min", name, pages, skipped, queued, responses, elapsed,
                    pages * 60 / elapsed if elapsed > 0 else 0.0)


class BuildSummary:
    """Print how the build ended on stdout, once the engine has stopped (text or one JSON line)."""

    def __init__(self, crawler: Crawler) -> None:
        fmt = str(crawler.settings.get("SKILLGRAPH_SUMMARY_FORMAT", "text")).strip().lower()
        if fmt == "none":
            raise NotConfigured  # switched off on purpose
        if fmt not in FORMATS:
            raise NotConfigured(f"SKILLGRAPH_SUMMARY_FORMAT is {fmt!r}, not one of text, json, none")
        self.format = fmt
        # A feed exported to stdout (``-O -:jsonl``) owns stdout: the summary goes to stderr, apart from it.
        self.to_stderr = any(str(uri).startswith("stdout:") for uri in crawler.settings.getdict("FEEDS"))
        self.crawler = crawler
        self.build = Build.of(crawler)
        self.started = time.monotonic()
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BuildSummary:
        return cls(crawler)

    def spider_opened(self) -> None:
        self.started = time.monotonic()

    def engine_stopped(self) -> None:
        # No graph (``scrapy detect``, ``scrapy scrape``) or no decision (the spider never opened,
        # a second signal aborted): nothing to summarise; ``scrapy crawl`` says why on stderr.
        if self.build.name is None or self.build.outcome is None:
            return
        summary = self.summary()
        text = json.dumps(summary) if self.format == "json" else render_text(self.build, summary)
        print(text, file=sys.stderr if self.to_stderr else sys.stdout, flush=True)

    def summary(self) -> dict[str, Any]:
        """The JSON summary (docs/build.md): ``truncated`` without its URL list (``sources.json`` has it)."""
        build = self.build
        truncation = build.truncation()
        if truncation is not None:
            truncation = {k: v for k, v in truncation.items() if k != "unreached"}
        return {
            "graph": build.name,
            "outcome": build.outcome,
            "path": build.graph_path,
            "failure": build.failure,
            "pages": pages_written(self.crawler),
            "skipped": build.skipped_counts(),
            "truncated": truncation,
            "warnings": len(build.warnings),
            "elapsed_s": round(time.monotonic() - self.started, 2),
        }


def render_text(build: Build, summary: dict[str, Any]) -> str:
    """A few human lines: where the graph is (or why it is not), skips by reason, truncation, warnings."""
    name, outcome = summary["graph"], summary["outcome"]
    if outcome == "committed":
        head = [f"graph {name}: committed to {summary['path']}"]
    elif outcome == "empty-share":
        head = [f"graph {name}: this worker's share was empty (no page written, nothing committed)"]
    else:
        head = [f"graph {name}: not committed", f"  {failure_sentence(build)}"]
    counts: dict[str, int] = dict(summary["skipped"])
    outside = counts.pop(OUT_OF_SCOPE, 0)
    reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    skipped = f"skipped {sum(counts.values())}" + (f" ({reasons})" if reasons else "")
    lines = [*head, f"  pages {summary['pages']}, {skipped}" + (f", out of scope {outside}" if outside else "")]
    truncated = summary["truncated"]
    if truncated is not None:
        limit = f" (limit {truncated['limit']})" if truncated.get("limit") is not None else ""
        lines.append(f"  truncated by {truncated['reason']}{limit}: {truncated['skipped']} URLs unreached, "
                     "left for the next run")
    lines.append(f"  warnings {summary['warnings']}, elapsed {summary['elapsed_s']:.1f}s")
    return "\n".join(lines)
