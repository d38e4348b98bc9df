"""What detection learns, and the probe steps that learn it.

:class:`Probe` and :class:`SiteProfile` are the result of a detection (the
public shape of ``scrapy detect`` and ``sources.json``). :class:`ProbeRun` is
one detection's probe log and its steps: read ``llms-full.txt`` (accepted past
``SKILLGRAPH_LLMS_FULL_MIN_CHARS``, never HTML), an ``llms.txt`` index (on-site
links only), a ``rel=llms-txt`` Link header, and the sitemaps (index, children
and ``.gz`` expanded, in-scope URLs kept, bounded). The order the steps run in
is the ladder in :mod:`skillgraph.strategy.profiler`.

A host that fails ``UNREACHABLE_AFTER`` probes in a row (network errors after
retries) is not probed again in this run: the crawl will say it is down.
"""

from __future__ import annotations

import logging
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urljoin, urlsplit

from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response, TextResponse

from skillgraph.strategy.llms import LlmsIndex, looks_like_html, parse_llms_txt
from skillgraph.strategy.sitemaps import SitemapError, parse_sitemap, robots_sitemaps
from skillgraph.urls import in_scope, root_of, same_site

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger("skillgraph.strategy.profiler")  # the profiler's log: the steps are its

UNREACHABLE_AFTER = 2  # consecutive network errors (after retries) before the host counts as down
_LINK_LLMS = re.compile(r"<([^>]+)>\s*;[^,]*rel=\"?llms-txt\"?", re.I)


def utc_now() -> str:
    """Now, as every ``detected_at`` and report timestamp spells it (UTC, seconds)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Probe:
    """One request of a detection: status None when nothing answered; outcome ``accepted``,
    ``missing``, ``rejected: why`` or ``error: why`` (the first word is the stat)."""

    url: str
    status: int | None
    outcome: str


@dataclass
class SiteProfile:
    """The chosen strategy, and what was learnt on the way (kept for the spider)."""

    url: str
    strategy: str
    scope: str
    source: str
    detected_at: str
    probes: list[Probe] = field(default_factory=list)
    corpus: str | None = None  # llms-full text
    index: LlmsIndex | None = None  # llms.txt parsed
    page_urls: list[str] = field(default_factory=list)  # in-scope sitemap URLs
    sitemap_skipped: int = 0  # sitemap URLs outside the scope
    offsite: list[str] = field(default_factory=list)  # llms.txt links off the site's domain (never requested)

    def to_json(self) -> dict[str, Any]:
        """The public shape (``scrapy detect`` and ``sources.json`` ``scrape_profile``)."""
        return {
            "url": self.url,
            "strategy": self.strategy,
            "scope": self.scope,
            "source": self.source,
            "detected_at": self.detected_at,
            "probes": [asdict(p) for p in self.probes],
        }


class Prober(Protocol):
    """What a probe step needs of the detection that runs it (:class:`~skillgraph.strategy.profiler.SiteProfiler`)."""

    crawler: Crawler
    full_min_chars: int
    allowed_domains: tuple[str, ...]
    max_sitemaps: int
    max_sitemap_urls: int
    max_size: int

    async def fetch(self, url: str) -> Response: ...


class ProbeRun:
    """One detection: the probe log, and the steps that probe and read each answer.

    Each step returns the :class:`SiteProfile` it settles on, or None (every probe logged in ``probes``);
    the profiler's ladder decides which steps run, in which order.
    """

    def __init__(self, profiler: Prober, url: str, scope: str) -> None:
        self.p = profiler
        self.url = url
        self.scope = scope
        self.probes: list[Probe] = []
        self.network_errors = 0  # consecutive network failures
        self.offsite: list[str] = []  # llms.txt links off the site, from every index read

    def _probe(self, probe: Probe) -> None:
        """Record a probe; a rejection or an error is also logged and counted (the reason is the outcome)."""
        self.probes.append(probe)
        kind = probe.outcome.split(":", 1)[0]
        stats = self.p.crawler.stats
        assert stats is not None
        stats.inc_value(f"skillgraph/profiler/probe/{kind}")
        if kind in ("rejected", "error"):
            logger.info("Probe %s %s", probe.url, probe.outcome)

    def done(self, strategy: str, source: str, **extra: Any) -> SiteProfile:
        return SiteProfile(self.url, strategy, self.scope, source, utc_now(), self.probes, offsite=self.offsite,
                           **extra)

    async def _get(self, url: str) -> Response | None:
        if self.network_errors >= UNREACHABLE_AFTER:
            return None  # the host does not answer: stop probing it, the crawl will say so
        try:
            response = await self.p.fetch(url)
        except Exception as exc:
            reason = str(exc) or type(exc).__name__
            self._probe(Probe(url, None, f"error: {reason[:200]}"))
            if not isinstance(exc, IgnoreRequest):
                self.network_errors += 1
            return None
        self.network_errors = 0
        if urlsplit(response.url).netloc.lower() != urlsplit(url).netloc.lower():
            self._probe(Probe(url, response.status, f"rejected: redirected off-host to {response.url}"))
            return None
        if response.status in (404, 410):
            self._probe(Probe(url, response.status, "missing"))
            return None
        if response.status >= 400:
            self._probe(Probe(url, response.status, f"rejected: HTTP {response.status}"))
            return None
        return response

    def _text(self, response: Response) -> str:
        if isinstance(response, TextResponse):
            return response.text
        return response.body.decode("utf-8", errors="replace")

    async def llms_full(self, url: str) -> SiteProfile | None:
        response = await self._get(url)
        if response is None:
            return None
        text = self._text(response)
        ctype = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        if looks_like_html(text, ctype):
            self._probe(Probe(url, response.status, "rejected: HTML"))
            return None
        if len(text) <= self.p.full_min_chars:
            self._probe(Probe(url, response.status, f"rejected: {len(text)} characters"))
            return None
        self._probe(Probe(url, response.status, "accepted"))
        return self.done("llms-full", response.url, corpus=text)

    async def llms_index(self, url: str) -> SiteProfile | None:
        response = await self._get(url)
        if response is None:
            return None
        return self._read_index(url, response)

    def _read_index(self, url: str, response: Response) -> SiteProfile | None:
        text = self._text(response)
        ctype = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        if looks_like_html(text, ctype):
            self._probe(Probe(url, response.status, "rejected: HTML"))
            return None
        index = parse_llms_txt(text, response.url)
        if not index.links:
            self._probe(Probe(url, response.status, "rejected: no links"))
            return None
        # DESIGN.md: links may point at the site's registrable domain and SKILLGRAPH_ALLOWED_DOMAINS only.
        onsite = [link for link in index.links if same_site(link.url, self.url, self.p.allowed_domains)]
        offsite = [link.url for link in index.links if link not in onsite]
        self.offsite.extend(u for u in offsite if u not in self.offsite)
        if not onsite:
            self._probe(Probe(url, response.status, f"rejected: all {len(offsite)} links are off-site "
                                                     "(see SKILLGRAPH_ALLOWED_DOMAINS)"))
            return None
        index.links = onsite
        self._probe(Probe(url, response.status, "accepted"))
        return self.done("llms-index", response.url, index=index)

    async def link_header(self) -> SiteProfile | None:
        response = await self._get(self.url)
        if response is None:
            return None
        header = b", ".join(response.headers.getlist(b"Link")).decode("latin-1")
        match = _LINK_LLMS.search(header)
        if not match:
            self._probe(Probe(self.url, response.status, "missing: no rel=llms-txt Link header"))
            return None
        self._probe(Probe(self.url, response.status, "accepted: rel=llms-txt Link header"))
        target = urljoin(response.url, match.group(1))
        return await self.llms_index(target)

    async def sitemaps(self) -> SiteProfile | None:
        root = root_of(self.url)
        candidates = [self.scope + "sitemap.xml"]
        if root + "sitemap.xml" not in candidates:
            candidates.append(root + "sitemap.xml")
        robots = await self._get(root + "robots.txt")
        if robots is not None:
            listed = robots_sitemaps(robots.body, robots.url)
            self._probe(Probe(robots.url, robots.status, f"accepted: {len(listed)} Sitemap lines"))
            candidates += [u for u in listed if u not in candidates]
        for url in candidates:
            profile = await self._sitemap(url)
            if profile is not None:
                return profile
        return None

    async def _sitemap(self, url: str) -> SiteProfile | None:
        """Expand one sitemap (index, children, ``.gz``) into the in-scope page URLs."""
        pending, seen, skipped = [url], {url}, 0
        pages: list[str] = []
        fetched = parsed_any = 0
        while pending and fetched < self.p.max_sitemaps and len(pages) < self.p.max_sitemap_urls:
            current = pending.pop(0)
            fetched += 1
            response = await self._get(current)
            if response is None:
                continue
            try:
                parsed = parse_sitemap(response.body, self.p.max_size)
            except SitemapError as exc:
                self._probe(Probe(current, response.status, f"rejected: {exc}"))
                continue
            parsed_any += 1
            if parsed.kind == "sitemapindex":
                children = [u for u in parsed.locs if u not in seen]
                seen.update(children)
                pending.extend(children)
                self._probe(Probe(current, response.status, f"accepted: index of {len(parsed.locs)}"))
                continue
            inside = [u for u in parsed.locs if in_scope(u, self.scope)]
            skipped += len(parsed.locs) - len(inside)
            pages.extend(inside[: self.p.max_sitemap_urls - len(pages)])
            self._probe(Probe(current, response.status, f"accepted: {len(inside)} URLs in scope"))
        if pending:
            logger.warning("Sitemap %s: %d child sitemaps left unread (bound reached)", url, len(pending))
        if not pages:
            if parsed_any:
                self._probe(Probe(url, None, "rejected: no URLs in scope"))
            return None
        unique = list(dict.fromkeys(pages))
        return self.done("sitemap", url, page_urls=unique, sitemap_skipped=skipped)

