"""TierLadder: per-page degradation ``html`` -> ``negotiated`` -> ``render`` -> ``best-effort``.

Each tier's result is assessed by the quality gates (:func:`skillgraph.quality.assess`);
the first that passes becomes the document, with its ``tier`` and ``quality``.
Otherwise the same URL is requested again for the next tier (``dont_filter``,
``meta["skillgraph_tier"]``), through Scrapy's engine like any fetch:

* ``negotiated``: ``Accept: text/markdown``, used only when the answer is markdown that keeps
  the HTML's code fenced; a host answering it with HTML (200) is not asked again.
* ``render``: the configured browser backend (``skillgraph.render``). A client-side
  shell still tries ``negotiated`` first (one HTTP request beats a browser) unless its
  host answered a negotiation with HTML; a page a browser would show the same is not (:meth:`Shell.skip_render`).
* otherwise the best usable result so far (highest score, not a block page) is
  written as ``best-effort`` with a ``build_warning``; a page blocked at every
  tier is never written: ``build_warning(kind="blocked", label=...)`` lists it.

A ladder request's callback is the spider's ``html_document``, its errback (a render
timeout, a refused connection) ``tier_failed``: spider methods (:mod:`skillgraph.page.callbacks`),
so requests stay serialisable for JOBDIR and scrapy-redis; state travels in meta.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Iterator
from itertools import chain
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.http import Response, TextResponse

from skillgraph.build import Build
from skillgraph.page.pool import PagePool, PageResult
from skillgraph.quality import DEFAULT_THRESHOLD
from skillgraph.render import RenderConfig, Shell, render_meta
from skillgraph.signals import build_warning
from skillgraph.strategy.profiler import utc_now
from skillgraph.tiers.attempt import Attempt, better, next_tier_meta
from skillgraph.tiers.evaluate import PageNotes, is_markdown_answer, negotiated_attempt
from skillgraph.urls import scope_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import HtmlResponse

    from skillgraph.items import DocumentItem

logger = logging.getLogger(__name__)

NEGOTIATE_ACCEPT = "text/markdown, text/x-markdown;q=0.9"
NEXT_TIERS = {"html": ("negotiated", "render"), "negotiated": ("render",), "render": ()}


class PageSpider(Protocol):
    """What the ladder needs of a spider (the page callbacks of :mod:`skillgraph.page.callbacks`)."""

    crawler: Crawler

    def html_document(self, response: HtmlResponse, link: str) -> AsyncIterator[Any]: ...
    def tier_failed(self, failure: Any) -> Iterator[Any]: ...
    def follow_links(self, response: Response, links: list[str], outside: list[str]) -> Iterator[Request]: ...
    def markdown_title(self, text: str) -> str: ...
    def document(self, url: str, title: str, markdown: str, tier: str, fetched_at: str,
                 sha256: str = "") -> DocumentItem: ...


class TierLadder:
    def __init__(self, spider: PageSpider) -> None:
        self.spider = spider
        self.crawler = spider.crawler
        self.stats = spider.crawler.stats
        settings = spider.crawler.settings
        self.threshold = settings.getfloat("SKILLGRAPH_QUALITY_THRESHOLD", DEFAULT_THRESHOLD)
        self.negotiate = settings.getbool("SKILLGRAPH_TIERS_NEGOTIATE", True)
        self.render = RenderConfig.from_settings(settings)
        self.negotiates: dict[str, bool] = {}  # host -> answered a negotiation with markdown
        self.warned_hosts: set[tuple[str, str]] = set()

    @classmethod
    def of(cls, spider: PageSpider) -> TierLadder:
        ladder: TierLadder | None = getattr(spider, "_skillgraph_tier_ladder", None)
        if ladder is None:
            ladder = cls(spider)
            spider._skillgraph_tier_ladder = ladder  # type: ignore[attr-defined]
        return ladder

    # one response -------------------------------------------------------------

    async def handle(self, response: Response, link: str, follow: bool = False) -> Iterator[Any]:
        """What one response of the ladder yields: links to follow, the document or the next tier's request.

        HTML and rendered pages are evaluated once, in the page pool (:mod:`skillgraph.page.pool`), in the
        order they arrived; outputs are made as Scrapy takes them (100,000 links: never 100,000 requests).
        """
        meta = response.meta
        stage = meta.get("skillgraph_tier") or "html"
        if "skillgraph_depth" in meta:  # the page's own depth, for the links of a rendered page
            meta["depth"] = meta["skillgraph_depth"]
        if response.status != 200:
            self.stats.inc_value(f"skillgraph/tiers/status/{response.status}")
        if stage == "negotiated":
            code_blocks = int(meta.get("skillgraph_code_blocks", 0))
            return self.settle(response, link, stage, self.negotiated(response, code_blocks), None, code_blocks)
        follow = follow or bool(stage == "render" and meta.get("skillgraph_follow"))
        result = await self.evaluate(response, stage, follow)
        links: Iterable[Any] = ()
        if follow and (stage == "html" or result.attempt.usable):  # a rendered page's links exist only now
            links = self.spider.follow_links(response, result.links, result.outside)
        if result.shell.is_shell:
            self.stats.inc_value("skillgraph/tiers/shell_detected")
        shell = result.shell if stage == "html" else None
        code_blocks = result.code_blocks if stage == "html" else int(meta.get("skillgraph_code_blocks", 0))
        return chain(links, self.settle(response, link, stage, result.attempt, shell, code_blocks, result.sha256,
                                        result.notes))

    async def evaluate(self, response: Response, stage: str, follow: bool) -> PageResult:
        build = Build.of(self.crawler)
        scope = build.profile.scope if build.profile is not None else scope_of(response.url)
        links = scope if follow and 200 <= response.status < 300 else None
        return await PagePool.of(self.crawler).evaluate(response, stage, self.threshold, links)

    def settle(self, response: Response, link: str, stage: str, attempt: Attempt, shell: Shell | None,
               code_blocks: int, sha256: str = "", notes: PageNotes | None = None) -> Iterator[Any]:
        """The document when the tier passed, else the next tier (or the end of the ladder)."""
        meta = response.meta
        self.stats.inc_value(f"skillgraph/tiers/{stage}/{'passed' if attempt.passed else 'failed'}")
        if attempt.passed:
            yield self.document(link, attempt, stage, [*meta.get("skillgraph_attempts", ())], sha256=sha256,
                                notes=notes)
            return
        skip = shell.skip_render(bool(attempt.block)) if shell else str(meta.get("skillgraph_render_skip") or "")
        yield from self.move_on(response.request, meta, link, attempt, stage, shell is not None and shell.is_shell,
                                skip, code_blocks)

    def failed(self, failure: Any) -> Iterator[Any]:
        """A ladder request that produced no response: recorded as the tier's failure, then moving on."""
        request = failure.request
        meta = request.meta
        stage = meta.get("skillgraph_tier") or "html"
        reason = f"{type(failure.value).__name__}: {failure.value}".strip()[:300]
        self.stats.inc_value(f"skillgraph/tiers/{stage}/error")
        logger.info("Tier %s of %s failed (%s); the ladder moves on", stage, request.url, reason)
        link = str(meta.get("skillgraph_link") or request.cb_kwargs.get("link") or request.url)
        attempt = Attempt.failed(stage, request.url, f"{stage} request failed: {reason}")
        skip, code_blocks = str(meta.get("skillgraph_render_skip") or ""), int(meta.get("skillgraph_code_blocks", 0))
        yield from self.move_on(request, meta, link, attempt, stage, False, skip, code_blocks)

    def move_on(self, request: Request | None, meta: dict[str, Any], link: str, attempt: Attempt, stage: str,
                shell: bool, render_skip: str, code_blocks: int) -> Iterator[Any]:
        """The next tier's request, or the end of the ladder (best effort, blocked, no content)."""
        attempts: list[dict[str, Any]] = [*meta.get("skillgraph_attempts", ()), attempt.summary()]
        best = better(Attempt.from_meta(meta.get("skillgraph_best")), attempt)
        following = self.next_request(request, meta, link, stage, shell, render_skip, code_blocks, attempts, best)
        if following is not None:
            yield following
        else:
            yield from self.finish(link, attempts, best)

    # tiers ----------------------------------------------------------------------

    def negotiated(self, response: Response, code_blocks: int) -> Attempt:
        text = response.text if isinstance(response, TextResponse) else ""
        title = self.spider.markdown_title(text) or response.meta.get("skillgraph_title", "")
        attempt = negotiated_attempt(response, self.threshold, code_blocks, title)
        if response.status == 200:  # remember whether the host negotiates at all
            host = urlsplit(response.url).netloc
            if is_markdown_answer(response):
                self.negotiates[host] = True
            else:
                self.negotiates.setdefault(host, False)
        if attempt.why.startswith("code fences lost"):
            self.stats.inc_value("skillgraph/tiers/negotiated/code_fences_lost")
        return attempt

    # moving on -------------------------------------------------------------------

    def next_request(self, origin: Request | None, meta: dict[str, Any], link: str, stage: str, shell: bool,
                     render_skip: str, code_blocks: int, attempts: list[dict[str, Any]],
                     best: Attempt | None) -> Request | None:
        assert origin is not None
        url = origin.url
        host = urlsplit(url).netloc
        for tier in NEXT_TIERS.get(stage, ()):
            if tier == "negotiated":
                known = self.negotiates.get(host)
                # Cheap first, shells included: one HTTP request beats a browser. A host that
                # answered a negotiation with HTML is not asked again (its shells go to render).
                if not self.negotiate or known is False:
                    self.stats.inc_value("skillgraph/tiers/negotiated/skipped")
                    continue
                extra: dict[str, Any] = {}
                headers = {"Accept": NEGOTIATE_ACCEPT}
            else:
                if not self.render.enabled:
                    continue
                if render_skip:  # a browser would show the very same page
                    self.stats.inc_value("skillgraph/tiers/render/skipped")
                    skipped = Attempt.failed("render", url, f"skipped: {render_skip}")
                    attempts.append(skipped.summary())
                    continue
                extra, headers = render_meta(self.render), {}
            follows = stage == "html" and bool(origin.cb_kwargs.get("follow"))
            tier_meta = {**next_tier_meta(meta, tier, follows, attempts, best, code_blocks, render_skip), **extra}
            self.stats.inc_value(f"skillgraph/tiers/{tier}/requested")
            priority = origin.priority + 10  # finish started pages first
            callback: Any = self.spider.html_document
            errback: Any = self.spider.tier_failed
            return Request(url, callback=callback, errback=errback, cb_kwargs={"link": link},
                           headers=headers, meta=tier_meta, dont_filter=True, priority=priority)
        return None

    def finish(self, link: str, attempts: list[dict[str, Any]], best: Attempt | None) -> Iterator[Any]:
        tried = "; ".join(f"{a['tier']}: {a['why']}" for a in attempts)
        host = urlsplit(link).netloc
        if best is not None:
            self.stats.inc_value("skillgraph/tiers/best_effort")
            message = f"every tier failed, best result ({best.tier}, score {best.score:.2f}) kept: {tried}"
            self.warn("best-effort", link, message, host)
            yield self.document(link, best, "best-effort", attempts, warned=True)
            return
        blocked = [a["block"] for a in attempts if a["block"]]
        if blocked:
            label = blocked[0]
            self.stats.inc_value(f"skillgraph/tiers/blocked/{label}")
            self.warn("blocked", link, f"blocked at every tier ({label}): {tried}", host, label)
        else:
            self.stats.inc_value("skillgraph/tiers/no_content")
            self.warn("no-content", link, f"no tier produced content: {tried}", host)

    def warn(self, kind: str, url: str, message: str, host: str, label: str | None = None) -> None:
        level = logging.DEBUG if (kind, host) in self.warned_hosts else logging.WARNING
        self.warned_hosts.add((kind, host))
        logger.log(level, "Page %s: %s (further %s pages of %s are logged at DEBUG)", url, message, kind, host)
        self.crawler.signals.send_catch_log(build_warning, kind=kind, url=url, message=message, label=label)

    def document(self, link: str, attempt: Attempt, tier: str, attempts: list[dict[str, Any]],
                 warned: bool = False, sha256: str = "", notes: PageNotes | None = None) -> DocumentItem:
        if attempt.reextracted:
            self.stats.inc_value("skillgraph/tiers/reextracted")
            self.warn("re-extracted", link, f"structure self-check: {attempt.reextracted}", urlsplit(link).netloc)
        item = self.spider.document(link, attempt.title, attempt.markdown, tier, utc_now(), sha256=sha256)
        item.quality = attempt.score
        item.meta.update({
            "response_status": attempt.status,
            "response_headers": attempt.headers,
            "assessment": attempt.assessment,  # assessed once: the quality pipeline reuses it
            "tier_attempts": attempts,
            "tier_warned": warned,
        })
        if notes is not None and sha256:  # read from this very markdown by the page workers, for the commit
            if notes.link_offsets:
                item.meta["link_offsets"] = notes.link_offsets
            if notes.description is not None and attempt.title:
                item.meta["description"] = notes.description
        self.stats.inc_value(f"skillgraph/tiers/document/{tier}")
        return item
