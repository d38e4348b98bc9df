"""The base of every skillgraph spider: run the site's profile, emit documents.

A domain spider is a declaration (name, start URL, domain tag, scope and
strategy hints); this class holds all fetch logic, so spiders stay small and
every site gets the same strategy ladder, bounds and provenance.

Extraction runs in the callbacks, on the reactor thread, by measurement: it
costs about 8 ms of CPU per Python docs page (bench/extract_eval.py) and the
whole build crawls at 1.07x plain Scrapy's rate (bench/crawl.py). A thread
pool would add hand-offs, not throughput, for pure-Python work under the GIL.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urljoin, urlsplit, urlunsplit

from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.response import get_base_url

from skillgraph.build import Build
from skillgraph.distributed.detection import SharedDetection
from skillgraph.items import DocumentItem
from skillgraph.llms import coalesce, looks_like_html, markdown_twin, split_sections
from skillgraph.profiler import SiteProfile, SiteProfiler, utc_now
from skillgraph.tiers import TierLadder
from skillgraph.urls import in_scope, page_key, scope_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)
_MARKDOWN_TYPES = ("text/markdown", "text/x-markdown", "text/plain")


def rebase(url: str, base_url: str | None) -> str:
    """Point ``url`` at a mirror: ``base_url``'s origin, and its path when it has one."""
    if not base_url:
        return url
    base = urlsplit(base_url)
    if base.path not in ("", "/"):
        return base_url
    parts = urlsplit(url)
    return urlunsplit((base.scheme, base.netloc, parts.path, parts.query, ""))


class SkillgraphSpider(Spider):
    """Declare ``name``, ``start_url`` and ``domain``; optionally ``scope`` and ``strategy``."""

    start_url: ClassVar[str] = ""
    domain: ClassVar[str] = ""
    scope: ClassVar[str | None] = None
    strategy: ClassVar[str | None] = None  # force one of profiler.STRATEGIES

    # set in from_crawler, from settings read once
    profiler: SiteProfiler
    max_sections: int
    file_bytes: int
    include_optional: bool
    depth_limit: int
    build: Build

    def __init__(
        self,
        *args: Any,
        base_url: str | None = None,
        graph: str | None = None,
        scope: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.site_url = rebase(self.start_url, base_url)
        declared_scope = scope or type(self).scope
        self.site_scope = rebase(declared_scope, base_url) if declared_scope else None
        self.graph_name = graph or self.name
        self.profile: SiteProfile | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SkillgraphSpider:
        spider: SkillgraphSpider = super().from_crawler(crawler, *args, **kwargs)
        spider.profiler = SiteProfiler.from_crawler(crawler)
        spider.max_sections = crawler.settings.getint("SKILLGRAPH_LLMS_MAX_SECTIONS", 400)
        spider.file_bytes = crawler.settings.getint("SKILLGRAPH_LLMS_FILE_BYTES", 49152)
        spider.include_optional = crawler.settings.getbool("SKILLGRAPH_LLMS_INCLUDE_OPTIONAL", True)
        spider.depth_limit = crawler.settings.getint("DEPTH_LIMIT", 0)
        spider.build = Build.of(crawler)
        return spider

    @property
    def site_domain(self) -> str:
        return self.domain or (urlsplit(self.site_url).hostname or "")

    async def start(self) -> AsyncIterator[Any]:
        shared = SharedDetection.for_spider(self)  # distributed mode only; see docs/distributed.md
        if shared is not None and (profile := await shared.follow()) is not None:
            self.profile = profile  # another worker detected and seeded the shared frontier
            return
        self.profile = await self.detect()
        for output in self.strategy_output(self.profile):
            yield output
        if shared is not None:
            await shared.publish(self.profile)  # after the seeds: a follower must not find the frontier empty

    async def detect(self) -> SiteProfile:
        """Run the SiteProfiler; a spider with its own enumeration (MediaWiki) overrides this."""
        return await self.profiler.profile(self.site_url, scope=self.site_scope, strategy=self.strategy)

    def shared_state(self) -> dict[str, Any]:
        """What another worker needs, besides the profile, to parse this spider's requests (JSON-safe)."""
        return {}

    def adopt_shared_state(self, state: dict[str, Any]) -> None:
        """Take the detecting worker's :meth:`shared_state` (this worker follows its profile)."""

    def strategy_output(self, profile: SiteProfile) -> Iterator[Any]:
        """The first requests (or, for a corpus, the items) of the chosen strategy.

        Off-site llms.txt links and out-of-scope sitemap URLs are accounted for
        first. A crawl also starts from what a truncated previous build left
        unreached, so the next run of the same command finishes it.
        """
        for url in profile.offsite:
            self.build.learn(url, "index")
            self.build.skip(url, "off-site")
        if profile.sitemap_skipped:
            self.build.count_out_of_scope(profile.sitemap_skipped)
        if profile.strategy == "llms-full":
            yield from self.corpus_items(profile)
        elif profile.strategy == "llms-index":
            yield from self.index_requests(profile)
        elif profile.strategy == "sitemap":
            for url in profile.page_urls:
                if self.in_site(url) and self.build.learn(url, "sitemap"):
                    yield self.page_request(url)
        else:
            if self.build.learn(profile.url, "start"):
                yield self.page_request(profile.url, follow=True)
            for url in self.build.previous.unreached:
                if in_scope(url, profile.scope) and self.in_site(url) and self.build.learn(url, "previous"):
                    yield self.page_request(url, follow=True)

    def in_site(self, url: str) -> bool:
        """Beyond the scope, may this page be part of the graph? (SectionsSpider narrows it.)"""
        return True

    def page_request(self, url: str, follow: bool = False, depth: int | None = None, **kwargs: Any) -> Request:
        """A page request; its failures reach :meth:`page_failed`, so every URL ends accounted for."""
        request = Request(url, callback=self.parse_page, errback=self.page_failed, **kwargs)
        if follow:
            request.cb_kwargs["follow"] = True
        if depth is not None:
            request.meta["depth"] = depth
        return request

    def page_failed(self, failure: Any) -> None:
        """Record why a page request produced no response (DESIGN.md's ``skipped`` reasons)."""
        from skillgraph.middlewares.budget import BudgetReached
        from skillgraph.middlewares.recency import PageUnchanged

        request = failure.request
        link = str(request.meta.get("skillgraph_link") or request.url)
        if failure.check(PageUnchanged, BudgetReached):
            return  # carried over from the live graph / left unreached by the page bound
        if failure.check(HttpError):
            self.build.skip(link, "http", status=failure.value.response.status)
        elif failure.check(IgnoreRequest):
            message = str(failure.value)
            if "robots.txt" in message:
                reason = "robots"
            elif message.startswith("SSRF guard"):
                reason = "ssrf"
            elif message.startswith("blocked"):
                reason = "blocked"
            else:
                reason = "network"
            self.build.skip(link, reason, detail=message[:200])
        else:
            self.build.skip(link, "network", detail=f"{type(failure.value).__name__}: {failure.value}"[:200])

    # llms-full -------------------------------------------------------------

    def corpus_items(self, profile: SiteProfile) -> Iterator[DocumentItem]:
        assert profile.corpus is not None
        sections = coalesce(split_sections(profile.corpus), self.max_sections, self.file_bytes)
        fetched_at = utc_now()
        base = profile.source.split("#", 1)[0]
        for section in sections:
            own_url = getattr(section, "url", None)  # the section's front matter names its page
            url = urljoin(base, own_url) if own_url else f"{base}#{section.slug}"
            yield self.document(url, section.title, section.text, "corpus", fetched_at)

    # llms-index ------------------------------------------------------------

    def index_requests(self, profile: SiteProfile) -> Iterator[Request]:
        assert profile.index is not None
        for link in profile.index.links:
            if link.optional and not self.include_optional:
                continue
            if not self.build.learn(link.url, "index"):
                continue
            twin = markdown_twin(link.url)
            meta = {"skillgraph_link": link.url, "skillgraph_title": link.name}
            if twin:
                yield Request(twin, callback=self.parse_twin, errback=self.twin_failed,
                              meta={**meta, "handle_httpstatus_all": True})
            else:
                yield self.page_request(link.url, meta=meta)

    def parse_twin(self, response: Response) -> Iterator[Any]:
        """Use the ``.md`` twin when it is real markdown; otherwise fetch the page itself."""
        if response.status == 200 and self.is_markdown(response):
            yield from self.parse_page(response)
            return
        self.crawler.stats.inc_value("skillgraph/llms/twin_missing")
        yield self._original(response.request)

    def twin_failed(self, failure: Any) -> Iterator[Request]:
        from skillgraph.middlewares.budget import BudgetReached
        from skillgraph.middlewares.recency import PageUnchanged

        if failure.check(PageUnchanged, BudgetReached):  # carried over (issue 5), or past the page bound
            return
        self.crawler.stats.inc_value("skillgraph/llms/twin_error")
        yield self._original(failure.request)

    def _original(self, request: Request | None) -> Request:
        assert request is not None
        meta = {k: v for k, v in request.meta.items() if k.startswith("skillgraph_")}
        return self.page_request(request.meta["skillgraph_link"], meta=meta)

    # pages ------------------------------------------------------------------

    @staticmethod
    def is_markdown(response: Response) -> bool:
        ctype = (response.headers.get(b"Content-Type") or b"").decode("latin-1").lower()
        body_head = response.body[:256].decode("utf-8", "replace")
        if looks_like_html(body_head, ctype):
            return False
        path = urlsplit(response.url).path.lower()
        return ctype.startswith(_MARKDOWN_TYPES) or path.endswith((".md", ".markdown", ".mdx"))

    def parse_page(self, response: Response, follow: bool = False) -> Iterator[Any]:
        link = response.meta.get("skillgraph_link", response.url)
        ok = 200 <= response.status < 300  # 403/429/503 reach here to be examined as block pages
        if follow and ok and isinstance(response, HtmlResponse):
            yield from self.follow_links(response)
        if ok and self.is_markdown(response):
            text = response.text if isinstance(response, TextResponse) else response.body.decode("utf-8", "replace")
            title = self.markdown_title(text) or response.meta.get("skillgraph_title", "")
            yield self.document(link, title, text, "markdown", utc_now())
            return
        if not isinstance(response, HtmlResponse):
            self.crawler.stats.inc_value("skillgraph/page/skipped_not_document")
            ctype = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
            status = response.status if not ok else None
            reason = "http" if status else "low-quality"
            self.build.skip(link, reason, status=status, detail=f"not a document ({ctype or 'no Content-Type'})")
            return
        yield from self.html_document(response, link)

    def html_document(self, response: HtmlResponse, link: str) -> Iterator[Any]:
        """Extract an HTML page into a document, degrading tier by tier when the quality gates fail.

        Also the callback of the ladder's own requests (``negotiated``, ``render``), so
        they stay serialisable: see ``skillgraph.tiers`` and docs/rendering.md.
        """
        yield from TierLadder.of(self).handle(response, link)

    def follow_links(self, response: HtmlResponse) -> Iterator[Request]:
        """Follow in-scope links to pages.

        Not ``LinkExtractor``: on API reference pages with hundreds of links it
        cost five times the HTML parse (canonicalising every URL). Here links
        are read from the tree already parsed, joined, stripped of fragments
        and filtered by a string prefix; the dupefilter still canonicalises
        the few that are new.
        """
        # A resumed JOBDIR job may answer queued requests before the profile is known again.
        scope = self.profile.scope if self.profile is not None else (self.site_scope or scope_of(self.site_url))
        base = get_base_url(response)
        build = self.build
        depth = int(response.meta.get("depth", 0)) + 1
        out_of_scope = 0
        for href in response.selector.root.xpath("//a/@href"):
            href = str(href).strip()
            if not href or href.startswith(("#", "mailto:", "javascript:", "tel:", "data:")):
                continue
            url = page_key(urljoin(base, href))
            if not url.startswith(scope) and not in_scope(url, scope):
                out_of_scope += build.outside(url)
                continue
            last = urlsplit(url).path.rsplit("/", 1)[-1]
            if "." in last and last.rsplit(".", 1)[1].lower() in _NOT_PAGES:
                continue
            if not self.in_site(url):
                out_of_scope += build.outside(url)
                continue
            if not build.learn(url, "link", depth):
                continue
            if self.depth_limit and depth > self.depth_limit:
                build.skip(url, "depth", detail=f"{depth} links from the start page (DEPTH_LIMIT={self.depth_limit})")
                continue
            yield self.page_request(url, follow=True)
        if out_of_scope:
            self.crawler.stats.inc_value("skillgraph/crawl/out_of_scope", out_of_scope)

    @staticmethod
    def markdown_title(text: str) -> str:
        match = _H1.search(text[:4000])
        return match.group(1).strip() if match else ""

    def document(self, url: str, title: str, markdown: str, tier: str, fetched_at: str) -> DocumentItem:
        assert self.profile is not None
        return DocumentItem(
            url=url,
            title=title,
            markdown=markdown,
            fetched_at=fetched_at,
            source=self.profile.source,
            domain=self.site_domain,
            strategy=self.profile.strategy,
            tier=tier,
        )


def _not_pages() -> frozenset[str]:
    from scrapy.linkextractors import IGNORED_EXTENSIONS

    return frozenset([*IGNORED_EXTENSIONS, "txt", "py", "c", "h", "json", "xml", "gz", "bz2", "whl", "rst"])


_NOT_PAGES = _not_pages()
