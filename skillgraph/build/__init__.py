"""One crawl's build: every URL it learns and how each ends (:mod:`.ledger`), what it admits and how it ends,
and what outlives it for the next build (:mod:`.state`: scrape times, content hashes; :mod:`.queues`: the frontier).

:class:`Build` is the one owner of a crawl's build state (one per crawler, ``Build.of(crawler)``).

A graph build must account for every URL it learns of (DESIGN.md, "Every URL accounted for"), decide once whether a
document will be written, and say honestly how it ended. Spread over spider attributes, stats and two readers of the
previous ``sources.json``, those answers disagreed; so they live here:

* the **profile** (set by ``profile_detected``);
* the **ledger** (:class:`skillgraph.build.ledger.UrlLedger`): every page URL learned
  (from where, at which depth) and its outcome: a page, a ``skipped`` entry with
  a reason, or still unreached;
* the **admission rule** (:meth:`admit`): new, the same URL again, or the same content under another URL — carried-over
  pages included — used by the page budget and the graph writer alike;
* the **page budget** of bounded strategies, counted on admissions plus pages in flight, so no page is fetched past
  the bound (:meth:`wait_for_budget`); in distributed mode, the fleet's (:mod:`skillgraph.distributed.admission`);
* **warnings** (``build_warning``), **truncation** and the **outcome**
  (``build_committed`` / ``build_failed`` once the graph writer decides);
* the **previous build** (:class:`skillgraph.graph.previous.PreviousBuild`).

Components talk to the Build, never to each other's stats or spider attributes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.utils.job import job_dir

from skillgraph.build.ledger import Entry, UrlLedger
from skillgraph.graph.previous import PreviousBuild
from skillgraph.signals import build_truncated, build_warning, page_not_modified, profile_detected
from skillgraph.urls import page_key

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler

    from skillgraph.strategy.profiler import SiteProfile

logger = logging.getLogger(__name__)

BOUNDED_STRATEGIES = ("sitemap", "crawl")
#: Warning kinds that mean the page was not written, and the ``skipped`` reason they give.
_WARNING_SKIPS = {"blocked": "blocked", "low-quality": "low-quality", "no-content": "low-quality"}


class Build(UrlLedger):
    """One crawl's build; create with :meth:`of`."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        self.max_pages = max(settings.getint("SKILLGRAPH_MAX_PAGES", 400), 0)
        self.resumable = bool(job_dir(settings))  # JOBDIR: the scheduler and dupefilter outlive the run
        self.profile: SiteProfile | None = None
        self.default_name: str | None = None  # the spider's name, when the strategy middleware runs it
        self.followed = False  # the profile is another distributed worker's
        self.expanded = False  # the live graph's pages were revisited (skillgraph.middlewares.recency.expand)
        self.warnings: list[dict[str, Any]] = []
        self.truncated: dict[str, Any] | None = None
        self.interrupted: int | None = None  # the signal number that stopped the crawl
        self.deadline: float | None = None  # monotonic time no download may outlive (CrawlTimeout)
        self.outcome: str | None = None  # "committed" | "failed" | "empty-share" | "handed-over" (fleet workers)
        self.failure: str | None = None
        self.graph_path: str | None = None
        self.failed_path: str | None = None  # where a failed build's reason was recorded (``<name>.failed.json``)
        self.admitted: dict[str, str] = {}  # admission: URL -> sha256 and (by_hash) sha256 -> first URL
        self.by_hash: dict[str, str] = {}
        self.aliases: dict[str, str] = {}  # URL not written -> the URL written with the same content
        self.in_flight: set[str] = set()
        self.fleet_spent = 0  # pages admitted by every worker of a distributed build (distributed/admission.py)
        self.on_settle: Callable[[str], None] | None = None  # a page in flight settled (frees its fleet place)
        self._warned: dict[str, set[str]] = {}  # warning kind -> hosts already logged at WARNING
        self._budget_changed: asyncio.Event | None = None
        self._previous: PreviousBuild | None = None
        crawler.signals.connect(self._on_profile, signal=profile_detected)
        crawler.signals.connect(self._on_warning, signal=build_warning)
        crawler.signals.connect(self._on_truncated, signal=build_truncated)
        crawler.signals.connect(self._on_request_dropped, signal=signals.request_dropped)

    @classmethod
    def of(cls, crawler: Crawler) -> Build:
        build = _BUILDS.get(crawler)
        if build is None:
            build = _BUILDS[crawler] = cls(crawler)
        return build

    # identity -------------------------------------------------------------------

    @property
    def name(self) -> str | None:
        """The graph's name, or None for a crawl that builds no graph (``scrapy detect``)."""
        spider = self.crawler.spider
        return (getattr(spider, "graph_name", None) or self.default_name) if spider is not None else None

    @property
    def previous(self) -> PreviousBuild:
        """The live graph this build replaces (read once)."""
        if self._previous is None:
            self._previous = PreviousBuild.load(self.crawler, self.name)
        return self._previous

    @property
    def bounded(self) -> bool:
        return self.max_pages > 0 and self.profile is not None and self.profile.strategy in BOUNDED_STRATEGIES

    def _on_profile(self, profile: SiteProfile, followed: bool = False) -> None:
        self.profile, self.followed = profile, followed

    # admission -------------------------------------------------------------------

    def admit(self, url: str, sha256: str, corpus: bool = False, spend: bool = True) -> str:
        """Will the document of ``url`` with ``sha256`` be written?

        ``"new"`` (admitted now), ``"same-url"`` (already admitted), ``"same-content"`` (the same
        markdown under an admitted URL: one file; llms-full sections are exempt, a corpus may repeat
        itself), or ``"over-budget"`` (a bounded build is full). ``spend`` False admits without counting.
        """
        key = page_key(url) if not corpus else url
        if key in self.admitted:
            return "same-url"
        if not corpus and sha256 in self.by_hash:
            self.aliases[key] = self.by_hash[sha256]
            self.skip(key, "duplicate", detail=f"same content as {self.by_hash[sha256]}")
            return "same-content"
        if spend and self.bounded and self.spent >= self.max_pages:
            self._settle(key)
            return "over-budget"
        self.admitted[key] = sha256
        self.by_hash.setdefault(sha256, key)
        entry = self.ledger.setdefault(key, Entry(key, "link"))
        entry.outcome, entry.reason, entry.status, entry.detail = "page", None, None, None
        self._settle(key)
        return "new"

    @property
    def spent(self) -> int:
        return max(len(self.admitted), self.fleet_spent)

    # the page budget -------------------------------------------------------------

    def _settle(self, key: str) -> None:
        if key in self.in_flight:
            self.in_flight.discard(key)
            if self.on_settle is not None:
                self.on_settle(key)
            if self._budget_changed is not None:
                self._budget_changed.set()

    def budget_full(self) -> bool:
        return self.bounded and self.spent >= self.max_pages

    async def wait_for_budget(self, url: str, patience: float) -> bool:
        """Hold a page request until the budget has room for it; False when the bound is reached.

        Room is the bound less the pages admitted and the pages in flight (a page in flight may still
        fail and leave its place to another). ``patience`` bounds each wait for an in-flight page to
        settle, so a page whose outcome never arrives cannot stall the crawl.
        """
        key = page_key(url)
        if not self.bounded or key in self.in_flight:
            return True
        while self.spent + len(self.in_flight) >= self.max_pages:
            if self.spent >= self.max_pages:
                return False
            if self._budget_changed is None:
                self._budget_changed = asyncio.Event()
            self._budget_changed.clear()
            try:
                await asyncio.wait_for(self._budget_changed.wait(), patience)
            except TimeoutError:
                logger.debug("Pages in flight did not settle in %.0fs; letting %s through", patience, url)
                break
        self.in_flight.add(key)
        return True

    def settle_without_document(self, url: str, reason: str = "low-quality", detail: str | None = None) -> None:
        """A fetched page's callback ended without a document or a next tier: say why, free its place."""
        key = page_key(url)
        entry = self.ledger.get(key)
        if entry is None or entry.outcome is None:
            self.skip(key, reason, detail=detail)
        self._settle(key)

    # warnings, truncation, outcome -----------------------------------------------

    def _on_warning(self, kind: str, url: str | None, message: str, label: str | None = None) -> None:
        entry: dict[str, Any] = {"kind": kind, "url": url, "message": message}
        if label:
            entry["label"] = label
        self.warnings.append(entry)
        self.crawler.stats.inc_value(f"skillgraph/build/warnings/{kind}")
        if url and kind in _WARNING_SKIPS:
            self.skip(url, _WARNING_SKIPS[kind], detail=label or message[:200])

    def warn(self, kind: str, url: str | None, message: str, label: str | None = None) -> None:
        """Log a warning once per kind and host (DEBUG after), count it, and list it in ``sources.json``."""
        host = urlsplit(url).netloc if url else ""
        seen = self._warned.setdefault(kind, set())
        level = logging.DEBUG if host in seen else logging.WARNING
        seen.add(host)
        logger.log(level, "%s%s: %s", f"{url}: " if url else "", kind, message)
        self.crawler.signals.send_catch_log(build_warning, kind=kind, url=url, message=message, label=label)

    def _on_truncated(self, reason: str, limit: int) -> None:
        if self.truncated is None:
            self.truncated = {"limit": limit, "reason": reason, "skipped": 0}
            logger.warning("Build of %s truncated: %s reached (%s)", self.name, reason, limit)
            self._on_warning("truncated", None, f"{reason} reached ({limit}); the graph is incomplete")

    def _on_request_dropped(self, request: Any) -> None:
        """The scheduler's dupefilter refused a page request.

        A page of the live graph was fetched before (a resumed JOBDIR job remembers it): it is carried
        over. Otherwise, without JOBDIR, the URL is another URL's request under a second spelling: a
        duplicate. A resumed job may still hold the request in its queue, so it is left open there; so
        is a page in flight here (a distributed worker fetches pages another worker's links queued).
        """
        if request.meta.get("skillgraph_probe") or request.meta.get("skillgraph_tier"):
            return
        key = page_key(str(request.meta.get("skillgraph_link") or request.url))
        entry = self.ledger.get(key)
        if entry is None or entry.outcome is not None or key in self.in_flight:
            return
        if key in self.previous.pages:
            self.crawler.signals.send_catch_log(page_not_modified, url=key)
        elif not self.resumable:
            self.skip(key, "duplicate", detail="the same request as another URL (dupefilter)")

    def interrupt(self, signum: int) -> None:
        """SIGINT/SIGTERM: the crawl stops cleanly and commits what it has as ``interrupted``."""
        if self.interrupted is None:
            self.interrupted = signum

    def truncation(self) -> dict[str, Any] | None:
        """``sources.json`` ``truncated``: the bound that stopped the build and what it left unreached."""
        truncated = self.truncated
        if truncated is None and self.interrupted is not None:
            truncated = {"limit": None, "reason": "interrupted", "skipped": 0}
        if truncated is None:
            return None
        unreached = self.unreached()
        return {**truncated, "skipped": len(unreached), "unreached": unreached}

    def failure_sentence(self) -> str:
        """One line: why the build was not committed, and what to do."""
        name = self.name or "?"
        profile = self.profile
        start = profile.url if profile is not None else None
        entry = self.ledger.get(start.split("#", 1)[0]) if start else None
        if entry is not None and entry.outcome == "skipped":
            parts = urlsplit(entry.url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
            if entry.reason == "ssrf":
                return (f"{entry.url} was refused by the SSRF guard ({entry.detail}); if this host is yours, "
                        f"allow it with -s SKILLGRAPH_SSRF_ALLOWLIST={parts.hostname}:{port}")
            if entry.reason == "http":
                return f"the start page {entry.url} answered HTTP {entry.status}: check the URL; graph {name} not built"
            if entry.reason == "network":
                return f"could not reach {parts.netloc} ({entry.detail}): check the URL and the network"
            if entry.reason == "robots":
                return f"robots.txt of {parts.netloc} forbids {entry.url}; nothing was fetched"
        why = self.failure or "the crawl ended before the graph was written"
        record = f", see {self.failed_path}" if self.failed_path else ""
        return f"graph {name} was not built: {why}; the previous graph (if any) is kept{record}"


_BUILDS: WeakKeyDictionary[Crawler, Build] = WeakKeyDictionary()
