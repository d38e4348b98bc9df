"""StrategyMiddleware: a spider's start URL becomes the site's strategy (a spider middleware).

"Each domain is a spider, and a strategy middleware probes llms.txt, sitemap
or render": the spider declares a start URL; this middleware's
``process_start`` takes each start request that has no callback, runs the
SiteProfiler on its URL (or the spider's own ``detect(profiler)``, as the
MediaWiki spider enumerates through its API) and yields what the chosen
strategy starts with:

* ``llms-full``: the corpus split into sections, as documents (no request);
* ``llms-index``: one request per listed page (its ``.md`` twin first);
* ``sitemap``: one page request per listed URL, in the sitemap's order;
* ``crawl``: the start page, links followed; plus what a truncated previous
  build left unreached, so the next run of the same command finishes it.

Every URL goes through the Build's ledger first (off-site llms.txt links and
out-of-scope sitemap URLs are accounted for as skipped). In distributed mode
one worker detects and the others follow its shared profile
(:class:`skillgraph.distributed.detection.SharedDetection`).

Any spider gets the whole ladder: ``SkillgraphSpider`` enables this middleware
in ``update_settings``; a plain ``scrapy.Spider`` lists it in its
``custom_settings`` (``SPIDER_MIDDLEWARES``) and its ``start_urls`` become
strategies, with the page callbacks of :mod:`skillgraph.page.callbacks` bound onto it.
A spider may override ``strategy_output(profile)`` (and call
:func:`strategy_output` for the default); start requests with a callback pass
through untouched.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin
from weakref import WeakKeyDictionary

from scrapy import Request

from skillgraph.build import Build
from skillgraph.distributed.detection import SharedDetection
from skillgraph.page.callbacks import bind_page_callbacks
from skillgraph.strategy.llms import coalesce, markdown_twin, split_sections
from skillgraph.strategy.profiler import SiteProfile, SiteProfiler, utc_now
from skillgraph.urls import in_scope

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

PRIORITY = 800  # close to the spider: the resume journal (50) sees the strategy's output
PATH = "skillgraph.middlewares.strategy.StrategyMiddleware"
_DETECTED: WeakKeyDictionary[Crawler, asyncio.Event] = WeakKeyDictionary()


async def detection_done(crawler: Crawler) -> None:
    """Wait until the strategy middleware knows the site's profile (at once when it does not run).

    Requests resumed from ``JOBDIR`` are downloaded while the start URL is still
    being profiled; their pages must not be named or budgeted before the scope
    and the strategy are known.
    """
    event = _DETECTED.get(crawler)
    if event is not None:
        await event.wait()


class StrategyMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.build = Build.of(crawler)
        self.profiler = SiteProfiler.from_crawler(crawler)
        self.detected = _DETECTED[crawler] = asyncio.Event()
        spider = crawler.spider
        if spider is not None:
            self.build.default_name = spider.name

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StrategyMiddleware:
        return cls(crawler)

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        try:
            async for output in start:
                if isinstance(output, Request) and output.callback is None:
                    async for seeded in self.run_strategy(output):
                        yield seeded
                else:
                    yield output
        finally:
            self.detected.set()  # a spider without a start URL to profile: nothing to wait for

    async def run_strategy(self, start: Request) -> AsyncIterator[Any]:
        spider = self.crawler.spider
        assert spider is not None
        bind_page_callbacks(spider)
        shared = SharedDetection.for_spider(spider)  # distributed mode only; see docs/distributed.md
        try:
            if shared is not None and await shared.follow() is not None:
                return  # another worker detected and seeded the shared frontier
            profile = await self.detect(spider, start)
        finally:
            self.detected.set()
        own = getattr(spider, "strategy_output", None)
        for output in (own(profile) if own is not None else strategy_output(spider, profile)):
            yield output
        if shared is not None:
            await shared.publish(profile)  # after the seeds: a follower must not find the frontier empty

    async def detect(self, spider: Spider, start: Request) -> SiteProfile:
        own = getattr(spider, "detect", None)
        if own is not None:
            profile: SiteProfile = await own(self.profiler)
            return profile
        return await self.profiler.profile(start.url, scope=start.meta.get("skillgraph_scope"),
                                           strategy=start.meta.get("skillgraph_strategy"))


def strategy_output(spider: Any, profile: SiteProfile) -> Iterator[Any]:
    """The first requests (or, for a corpus, the items) of the chosen strategy."""
    build = Build.of(spider.crawler)
    for url in profile.offsite:
        build.learn(url, "index")
        build.skip(url, "off-site")
    if profile.sitemap_skipped:
        build.count_out_of_scope(profile.sitemap_skipped)
    if profile.strategy == "llms-full":
        yield from corpus_items(spider, profile)
    elif profile.strategy == "llms-index":
        yield from index_requests(spider, profile)
    elif profile.strategy == "sitemap":
        for url in profile.page_urls:
            if spider.in_site(url) and build.learn(url, "sitemap"):
                yield spider.page_request(url)
    else:
        if build.learn(profile.url, "start"):
            yield spider.page_request(profile.url, follow=True)
        for url in build.previous.unreached:
            if in_scope(url, profile.scope) and spider.in_site(url) and build.learn(url, "previous"):
                yield spider.page_request(url, follow=True)


def corpus_items(spider: Any, profile: SiteProfile) -> Iterator[Any]:
    """An llms-full corpus, split into sections (each its own page when its front matter names one)."""
    assert profile.corpus is not None
    settings = spider.crawler.settings
    sections = coalesce(split_sections(profile.corpus), settings.getint("SKILLGRAPH_LLMS_MAX_SECTIONS", 400),
                        settings.getint("SKILLGRAPH_LLMS_FILE_BYTES", 49152))
    fetched_at = utc_now()
    base = profile.source.split("#", 1)[0]
    for section in sections:
        own_url = section.url
        url = urljoin(base, own_url) if own_url else f"{base}#{section.slug}"
        yield spider.document(url, section.title, section.text, "corpus", fetched_at)


def index_requests(spider: Any, profile: SiteProfile) -> Iterator[Request]:
    """One request per llms.txt link: the ``.md`` twin first, the page itself when there is none."""
    assert profile.index is not None
    build = Build.of(spider.crawler)
    optional = spider.crawler.settings.getbool("SKILLGRAPH_LLMS_INCLUDE_OPTIONAL", True)
    for link in profile.index.links:
        if (link.optional and not optional) or not build.learn(link.url, "index"):
            continue
        twin = markdown_twin(link.url)
        meta = {"skillgraph_link": link.url, "skillgraph_title": link.name}
        if twin:
            yield Request(twin, callback=spider.parse_twin, errback=spider.twin_failed,
                          meta={**meta, "handle_httpstatus_all": True})
        else:
            yield spider.page_request(link.url, meta=meta)
