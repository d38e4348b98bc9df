"""BuildSummary: how the build ended, on stdout, whatever the log level (docs/build.md).

A build's result is spread over ``sources.json``, ``failed.json`` and the
stats, and Scrapy's closing log is 30 lines that ``-L WARNING`` hides. So one
summary goes to stdout, apart from the log, so a user sees it and a caller can
read it without parsing log lines: where the graph is (or why there is none),
pages by tier, skips by reason, truncation, warnings, time
(``SKILLGRAPH_SUMMARY_FORMAT``: human ``text`` or one ``json`` line).

The summary is written on ``engine_stopped``, not ``spider_closed``: extensions
are built before the engine's item pipelines, so their ``spider_closed``
handlers run first, before the graph writer has decided the outcome.
``engine_stopped`` comes once every ``spider_closed`` handler has finished.
"""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from skillgraph.build import Build
from skillgraph.extensions.progress import pages_written, show_tiers, tier_counts

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

FORMATS = ("text", "json")
OUT_OF_SCOPE = "out-of-scope"  # counted, never a ``skipped`` entry: shown apart from the skips


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
            "tiers": tier_counts(self.crawler),
            "skipped": build.skipped_counts(),
            "truncated": truncation,
            "warnings": len(build.warnings),
            "elapsed_s": round(time.monotonic() - self.started, 2),
        }


def render_text(build: Build, summary: dict[str, Any]) -> str:
    """A few human lines: where the graph is (or why it is not), pages by tier, skips by reason, truncation."""
    name, outcome = summary["graph"], summary["outcome"]
    if outcome == "committed":
        head = [f"graph {name}: committed to {summary['path']}"]
    elif outcome == "empty-share":
        head = [f"graph {name}: this worker's share was empty (no page written, nothing committed)"]
    elif outcome == "handed-over":
        head = [f"graph {name}: this worker's pages were handed to the fleet's build; the last worker out "
                f"(or `scrapy assemble {name}`) commits the graph"]
    else:
        head = [f"graph {name}: not committed", f"  {build.failure_sentence()}"]
    counts: dict[str, int] = dict(summary["skipped"])
    outside = counts.pop(OUT_OF_SCOPE, 0)
    reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    skipped = f"skipped {sum(counts.values())}" + (f" ({reasons})" if reasons else "")
    tiers = f" ({show_tiers(summary['tiers'])})" if summary["tiers"] else ""
    lines = [*head, f"  pages {summary['pages']}{tiers}, {skipped}" + (f", out of scope {outside}" if outside else "")]
    truncated = summary["truncated"]
    if truncated is not None:
        limit = f" (limit {truncated['limit']})" if truncated.get("limit") is not None else ""
        lines.append(f"  truncated by {truncated['reason']}{limit}: {truncated['skipped']} URLs unreached, "
                     "left for the next run")
    elif outcome == "committed":
        lines.append("  not truncated")
    lines.append(f"  warnings {summary['warnings']}, elapsed {summary['elapsed_s']:.1f}s")
    return "\n".join(lines)
