"""UrlLedger: every page URL a build learns of, and its outcome (DESIGN.md, "Every URL accounted for").

A URL ends as a page, a ``skipped`` entry with a reason, or — when a bound or
the timeout stopped the build before it — unreached (``truncated.unreached``).
Links outside the scope are only counted (``skipped_counts["out-of-scope"]``).
The Build (:class:`skillgraph.build.Build`) is a ledger; it frees a page's place
in the budget when the page settles (:meth:`UrlLedger._settle`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skillgraph.urls import page_key

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

#: ``skipped`` reasons (DESIGN.md); ``out-of-scope`` links are only counted.
SKIP_REASONS = ("http", "network", "robots", "ssrf", "off-site", "depth", "duplicate", "blocked", "low-quality")


@dataclass(slots=True)
class Entry:
    """One URL of the ledger."""

    url: str
    via: str  # start, sitemap, index, link, previous
    depth: int = 0
    outcome: str | None = None  # "page", "skipped", or None while unreached
    reason: str | None = None
    status: int | None = None
    detail: str | None = None

    def skipped_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"url": self.url, "reason": self.reason, "status": self.status}
        if self.detail:
            entry["detail"] = self.detail
        return entry


class UrlLedger:
    """The URLs of one build and their outcomes."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.ledger: dict[str, Entry] = {}
        self.out_of_scope = 0  # counted only (sitemap URLs outside the scope)
        self._outside: set[str] = set()  # links outside the scope, each counted once

    def _settle(self, key: str) -> None:
        """The page of ``key`` has an outcome (the Build frees its place in the page budget)."""

    def learn(self, url: str, via: str, depth: int = 0) -> bool:
        """Record a page URL the build learned of; True when it is new and must be requested.

        A URL skipped for depth is learned again when a shallower link names it.
        """
        key = page_key(url)
        entry = self.ledger.get(key)
        if entry is not None:
            if entry.reason == "depth" and depth < (entry.depth or 0):
                entry.outcome = entry.reason = entry.detail = None
                entry.depth = depth
                return True
            return False
        self.ledger[key] = Entry(key, via, depth)
        return True

    def knows(self, url: str) -> bool:
        return page_key(url) in self.ledger

    def skip(self, url: str, reason: str, status: int | None = None, detail: str | None = None) -> None:
        """The page of ``url`` will not be in the graph, for ``reason`` (DESIGN.md's list)."""
        key = page_key(url)
        entry = self.ledger.setdefault(key, Entry(key, "link"))
        if entry.outcome is not None:
            return  # the first outcome stands: a later tier or error does not undo it
        entry.outcome, entry.reason, entry.status, entry.detail = "skipped", reason, status, detail
        self.crawler.stats.inc_value(f"skillgraph/build/skipped/{reason}")
        self._settle(key)

    def count_out_of_scope(self, n: int = 1) -> None:
        self.out_of_scope += n
        self.crawler.stats.inc_value("skillgraph/build/skipped/out-of-scope", n)

    def outside(self, url: str) -> int:
        """Note a link outside the scope; 1 the first time it is seen, else 0."""
        if url in self._outside:
            return 0
        self._outside.add(url)
        self.crawler.stats.inc_value("skillgraph/build/skipped/out-of-scope")
        return 1

    def outside_links(self) -> set[str]:
        """The links outside the scope noted so far (a fleet worker hands them to the assembly)."""
        return set(self._outside)

    def unreached(self) -> list[str]:
        """URLs learned but neither written nor skipped, in the order they were learned."""
        return [e.url for e in self.ledger.values() if e.outcome is None]

    def skipped(self) -> list[Entry]:
        return [e for e in self.ledger.values() if e.outcome == "skipped"]

    def skipped_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for entry in self.skipped():
            counts[str(entry.reason)] = counts.get(str(entry.reason), 0) + 1
        if self.out_of_scope or self._outside:
            counts["out-of-scope"] = self.out_of_scope + len(self._outside)
        return counts
