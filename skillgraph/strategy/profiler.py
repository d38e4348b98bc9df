"""SiteProfiler: choose how to build a site's graph, cheapest source first.

Order (DESIGN.md, "Precise definitions"): scope by scope, nearest first,
``llms-full.txt`` then ``llms.txt``; then ``/.well-known/llms.txt`` and a
``Link: <...>; rel="llms-txt"`` header on the start URL; then ``sitemap.xml``
at the scope and the root and robots.txt ``Sitemap:`` lines; else ``crawl``.
This module holds that ladder; each step (what it fetches, what it accepts)
and the result types are in :mod:`skillgraph.strategy.probes`, re-exported here.

Every probe is a real Scrapy request through ``engine.download_async`` (the
``RobotsTxtMiddleware`` pattern), so robots.txt, politeness, the SSRF guard,
proxies, retries, size limits and stats apply to probes exactly as to pages.
Probes run one at a time: they all hit the same host.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK

from skillgraph.signals import profile_detected
from skillgraph.strategy.probes import UNREACHABLE_AFTER, Probe, ProbeRun, SiteProfile, utc_now
from skillgraph.urls import parent_scopes, root_of, scope_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["STRATEGIES", "UNREACHABLE_AFTER", "Probe", "SiteProfile", "SiteProfiler", "utc_now"]

logger = logging.getLogger(__name__)

STRATEGIES = ("llms-full", "llms-index", "sitemap", "crawl")


class SiteProfiler:
    """Runs the probes for one start URL; build with :meth:`from_crawler`."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.full_min_chars = settings.getint("SKILLGRAPH_LLMS_FULL_MIN_CHARS", 2000)
        self.max_sitemaps = settings.getint("SKILLGRAPH_SITEMAP_MAX_FILES", 200)
        self.max_sitemap_urls = settings.getint("SKILLGRAPH_SITEMAP_MAX_URLS", 100_000)
        self.max_size = settings.getint("DOWNLOAD_MAXSIZE", 10 * 1024 * 1024) or 50 * 1024 * 1024
        self.allowed_domains = tuple(d.lower().strip(".") for d in settings.getlist("SKILLGRAPH_ALLOWED_DOMAINS"))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SiteProfiler:
        return cls(crawler)

    async def profile(self, url: str, scope: str | None = None, strategy: str | None = None) -> SiteProfile:
        """Detect the strategy for ``url``; ``strategy`` forces one (a spider's hint)."""
        scope = scope or scope_of(url)
        profile = await _ladder(ProbeRun(self, url, scope), strategy)
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value(f"skillgraph/profiler/strategy/{profile.strategy}")
        stats.inc_value("skillgraph/profiler/probes", len(profile.probes))
        logger.info("Profiled %s: strategy %s from %s", url, profile.strategy, profile.source)
        await self.crawler.signals.send_catch_log_async(profile_detected, profile=profile)
        return profile

    async def fetch(self, url: str, **kwargs: Any) -> Response:
        request = Request(url, callback=NO_CALLBACK, dont_filter=True, meta={"skillgraph_probe": True}, **kwargs)
        assert self.crawler.engine is not None
        return await self.crawler.engine.download_async(request)


async def _ladder(run: ProbeRun, forced: str | None) -> SiteProfile:
    """The first step that settles on a profile, in the module docstring's order; ``forced`` skips the others."""
    if forced == "crawl":
        return run.done("crawl", run.url)
    if forced in (None, "llms-full", "llms-index"):
        for scope in parent_scopes(run.scope):
            if forced in (None, "llms-full") and (profile := await run.llms_full(scope + "llms-full.txt")):
                return profile
            if forced in (None, "llms-index") and (profile := await run.llms_index(scope + "llms.txt")):
                return profile
        if forced in (None, "llms-index"):
            if profile := await run.llms_index(root_of(run.url) + ".well-known/llms.txt"):
                return profile
            if profile := await run.link_header():
                return profile
    if forced in (None, "sitemap") and (profile := await run.sitemaps()):
        return profile
    return run.done("crawl", run.url)
