"""MediaWikiSpider: a wiki's content pages through its Action API, each once.

A link crawl of a wiki meets every page under many URLs (history, diffs,
``index.php?title=``, redirects, talk and special pages) and misses orphans.
The API lists exactly the content pages: ``list=allpages`` (namespace 0,
redirects filtered out, ``aplimit=max``) followed through ``apcontinue`` until
the answer has no continuation, then ``action=parse`` per title gives the
rendered HTML, extracted to markdown like any ``html`` page.

Profile: ``detect()`` asks ``meta=siteinfo`` first (one probe through the
engine, like every profiler probe). A wiki that answers is built with the
``crawl`` strategy whose ``source`` is the ``api.php`` URL, so the page bound
and the crawl timeout apply as to any web crawl; a site whose API does not
answer falls back to the ordinary strategy ladder. Requests only ever come
from the enumeration: no link on a page is followed. In distributed mode one
worker asks siteinfo and starts the enumeration; the others adopt its
profile and siteinfo (:meth:`shared_state`) and take batches and pages from
the shared frontier.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import asdict
from html import escape
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.http import Response
from scrapy.spidermiddlewares.httperror import HttpError
from w3lib.html import remove_tags, replace_entities

from skillgraph.build import Build
from skillgraph.extract import extract_html
from skillgraph.page.outcomes import PageUnchanged
from skillgraph.signals import profile_detected
from skillgraph.spiders.base import SkillgraphSpider, rebase
from skillgraph.strategy.mediawiki import (
    ALLPAGES,
    PARSE,
    SITEINFO,
    ApiError,
    SiteInfo,
    api_url,
    article_url,
    check_error,
    listed_titles,
    next_continue,
    parsed_page,
    site_info,
)
from skillgraph.strategy.profiler import Probe, SiteProfile, SiteProfiler, utc_now
from skillgraph.urls import root_of, scope_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class MediaWikiSpider(SkillgraphSpider):
    """Declare ``api`` too (the wiki's ``api.php`` URL); ``start_url`` is the main page."""

    api: ClassVar[str] = ""
    strategy = "crawl"  # what `scrapy batch` schedules it as: a bounded web crawl

    def __init__(self, *args: Any, base_url: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, base_url=base_url, **kwargs)
        api = rebase(self.api, base_url) if self.api else root_of(self.site_url) + "api.php"
        if base_url and urlsplit(base_url).path not in ("", "/"):
            api = base_url.rstrip("/") + "/api.php"  # a mirror at a sub-path: api.php beside it
        self.api_endpoint = api
        self.wiki: SiteInfo | None = None
        self.listed = 0  # titles enumerated so far
        self.aplimit = "max"

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> MediaWikiSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, MediaWikiSpider)
        # "max" (500, or 5000 for bots) unless a test or a fragile wiki asks for smaller batches.
        spider.aplimit = crawler.settings.get("SKILLGRAPH_MEDIAWIKI_APLIMIT") or "max"
        return spider

    async def detect(self, profiler: SiteProfiler) -> SiteProfile:
        """The strategy middleware's detection, replaced: the wiki's API enumerates its pages."""
        url = api_url(self.api_endpoint, SITEINFO)
        probes: list[Probe] = []
        try:
            response = await profiler.fetch(url)
        except Exception as exc:
            probes.append(Probe(url, None, f"error: {exc or type(exc).__name__}"[:200]))
        else:
            self.wiki = self._read_siteinfo(url, response, probes)
        scope = self.wiki.scope if self.wiki else scope_of(self.site_url)
        profile = SiteProfile(self.site_url, "crawl", scope, self.api_endpoint, utc_now(), probes)
        self.crawler.stats.inc_value("skillgraph/profiler/strategy/crawl")
        self.crawler.stats.inc_value("skillgraph/profiler/probes", len(probes))
        await self.crawler.signals.send_catch_log_async(profile_detected, profile=profile)
        if self.wiki is None:
            self.crawler.stats.inc_value("skillgraph/mediawiki/api_missing")
            logger.error("No MediaWiki API at %s: nothing to enumerate", self.api_endpoint)
            self._warn(self.api_endpoint, f"no MediaWiki API answered at {self.api_endpoint}", "api_missing")
        else:
            logger.info("Profiled %s: MediaWiki API %s (%s)", self.site_url, self.api_endpoint, self.wiki.generator)
        return profile

    def _read_siteinfo(self, url: str, response: Response, probes: list[Probe]) -> SiteInfo | None:
        if response.status != 200:
            probes.append(Probe(url, response.status, f"rejected: HTTP {response.status}"))
            return None
        try:
            info = site_info(json.loads(response.body), self.api_endpoint)
        except ValueError:
            info = None
        if info is None:
            probes.append(Probe(url, response.status, "rejected: not a siteinfo answer"))
            return None
        probes.append(Probe(url, response.status, f"accepted: {info.generator}"))
        return info

    def shared_state(self) -> dict[str, Any]:
        """Distributed followers parse allpages batches too: they need the wiki's article path."""
        return {"wiki": asdict(self.wiki)} if self.wiki is not None else {}

    def adopt_shared_state(self, state: dict[str, Any]) -> None:
        if isinstance(state.get("wiki"), dict):
            self.wiki = SiteInfo(**state["wiki"])

    def strategy_output(self, profile: SiteProfile) -> Iterator[Any]:
        if self.wiki is not None:  # no API: no requests (links are never followed)
            yield self.allpages_request({})

    def allpages_request(self, cont: dict[str, str]) -> Request:
        params = {**ALLPAGES, "aplimit": str(self.aplimit), **cont}
        # Enumeration first (a batch of titles before the pages of the previous one), and always fresh.
        return Request(api_url(self.api_endpoint, params), callback=self.parse_allpages, dont_filter=True, priority=10,
                       meta={"dont_recency": True, "dont_revalidate": True})

    def parse_allpages(self, response: Response) -> Iterator[Request]:
        try:
            data = check_error(json.loads(response.body))
        except ValueError as exc:
            self._api_failed(response.url, f"allpages: {exc}", exc)
            return
        assert self.wiki is not None
        titles = listed_titles(data)
        self.crawler.stats.inc_value("skillgraph/mediawiki/allpages_batches")
        self.crawler.stats.inc_value("skillgraph/mediawiki/titles", len(titles))
        for title in titles:
            url = article_url(self.wiki.article_base, title, self.wiki.first_letter)
            if not Build.of(self.crawler).learn(url, "index"):
                self.crawler.stats.inc_value("skillgraph/mediawiki/duplicate_title")
                continue
            # skillgraph_link: recency dedup and carry-over know the page by its article URL.
            yield Request(api_url(self.api_endpoint, {**PARSE, "page": title}), callback=self.parse_article,
                          errback=self.article_failed, cb_kwargs={"title": title, "url": url},
                          meta={"skillgraph_link": url})
        self.listed += len(titles)
        cont = next_continue(data)
        if cont:
            yield self.allpages_request(cont)
        else:
            logger.info("MediaWiki %s: %d content titles", self.api_endpoint, self.listed)

    def parse_article(self, response: Response, title: str, url: str) -> Iterator[Any]:
        try:
            page = parsed_page(json.loads(response.body))
        except ValueError as exc:
            self._api_failed(url, f"parse {title!r}: {exc}", exc)
            return
        shown = replace_entities(remove_tags(page.display_title)).strip() or title
        extraction = extract_html(self.wrap(shown, page.html), url)
        yield self.document(url, extraction.title or shown, extraction.markdown, "html", utc_now())

    def article_failed(self, failure: Any) -> None:
        if failure.check(PageUnchanged):  # recent or 304: carried over from the live graph
            return
        url = failure.request.cb_kwargs.get("url", failure.request.url)
        status = failure.value.response.status if failure.check(HttpError) else None
        Build.of(self.crawler).skip(url, "http" if status else "network", status=status,
                        detail=f"{type(failure.value).__name__}: {failure.value}"[:200])
        self._api_failed(url, f"{type(failure.value).__name__}: {failure.value}"[:300], failure.value)

    def _api_failed(self, url: str, why: str, exc: BaseException) -> None:
        self.crawler.stats.inc_value("skillgraph/mediawiki/api_error")
        logger.warning("MediaWiki API error for %s: %s", url, why)
        self._warn(url, why, exc.code if isinstance(exc, ApiError) else type(exc).__name__)

    def _warn(self, url: str, message: str, label: str) -> None:
        Build.of(self.crawler).warn("mediawiki", url, message, label)

    @staticmethod
    def wrap(title: str, html: str) -> str:
        """The parse output inside the skin's landmarks, so the extractor sees a MediaWiki page."""
        return ('<!DOCTYPE html><html><head><meta charset="utf-8"><meta name="generator" content="MediaWiki">'
                f'<title>{escape(title)}</title></head><body><div id="content"><h1 id="firstHeading">'
                f'{escape(title)}</h1><div id="bodyContent"><div id="mw-content-text">{html}</div></div></div>'
                "</body></html>")

