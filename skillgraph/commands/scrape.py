"""``scrapy scrape URL [URL ...] [-o DIR]``: one page (or a few) to markdown, no graph, no state.

Each URL is fetched by a small :class:`ScrapeSpider` through Scrapy's engine, so
robots.txt, politeness, the SSRF guard, retries and limits apply, then goes
through the project's own page handling: ``SkillgraphSpider.parse_page`` (a
markdown answer as it is, HTML through the tier ladder: ``html`` ->
``negotiated`` -> ``render`` -> ``best-effort``) and the quality gate pipeline.
No profiling (the URL is the page), no link following.

Nothing is written but the output: the pipelines and middlewares that keep
state (page budget, content dedup, dual write, graph writer, recency,
conditional requests, the resume journal, Redis) are switched off in the
spider's settings, which sit above the add-on's. The markdown goes to stdout
(several URLs: each opened by ``---`` / ``url: <URL>`` / ``---`` front matter,
as in a graph's ``llms-full.txt``), or to one ``.md`` per URL in ``-o DIR``
(mode 0644). A page that failed (HTTP error, refused, unreachable, blocked,
no content) is one line on stderr and exit status 1; a usage error is 2. The
spider lives here, not in ``skillgraph.spiders``, so ``scrapy list`` and
scrapyd never offer it.
"""

from __future__ import annotations

import logging
import sys
from argparse import ArgumentParser, Namespace
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from scrapy import Request, signals
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import IgnoreRequest, UsageError
from scrapy.spidermiddlewares.httperror import HttpError

from skillgraph.commands.detect import allowlist_entry, url_error
from skillgraph.commands.settings_check import exit_on_bad_settings
from skillgraph.files import write_atomic
from skillgraph.graph.names import unique_file_name
from skillgraph.items import DocumentItem
from skillgraph.signals import build_warning
from skillgraph.spiders.base import SkillgraphSpider
from skillgraph.urls import file_stem_for, page_key, scope_of

logger = logging.getLogger(__name__)

#: Components that write state or build a graph: off for a scrape (spider priority, above the add-on's).
STATEFUL_OFF: dict[str, Any] = {
    "ITEM_PIPELINES": {
        "skillgraph.pipelines.page_budget.PageBudgetPipeline": None,
        "skillgraph.pipelines.dedup.ContentDedupPipeline": None,
        "skillgraph.pipelines.dual_write.DualWritePipeline": None,
        "skillgraph.pipelines.graph.GraphWriterPipeline": None,
    },
    "DOWNLOADER_MIDDLEWARES": {
        "skillgraph.middlewares.recency.RecencyMiddleware": None,
        "skillgraph.middlewares.conditional.ConditionalMiddleware": None,
        "skillgraph.middlewares.budget.PageBudgetMiddleware": None,
    },
    "SPIDER_MIDDLEWARES": {"skillgraph.middlewares.resume.ResumeJournal": None},
    "EXTENSIONS": {"skillgraph.extensions.stats_file.StatsFile": None},
    "SKILLGRAPH_DEDUP_ENABLED": False,
    "SKILLGRAPH_QUEUE_ENABLED": False,
    "SKILLGRAPH_CONDITIONAL_ENABLED": False,
    "SKILLGRAPH_RECENCY_HOURS": 0,
    "SKILLGRAPH_MAX_PAGES": 0,
    "SKILLGRAPH_DISTRIBUTED_ENABLED": False,
    "SKILLGRAPH_PROGRESS_ENABLED": False,
    "SKILLGRAPH_SUMMARY_FORMAT": "none",
    "SKILLGRAPH_STATS_FILE": None,
    "JOBDIR": None,
}


class ScrapeSpider(SkillgraphSpider):
    """Fetches the given URLs as pages; the command collects their documents and failures."""

    name = "skillgraph_scrape"
    custom_settings = STATEFUL_OFF

    def __init__(self, urls: list[str], **kwargs: Any) -> None:
        super().__init__(graph="scrape", **kwargs)
        self.urls = urls
        self.site_url = urls[0]
        self.failures: dict[str, str] = {}  # page URL -> why it failed (request errors)

    async def start(self) -> AsyncIterator[Any]:
        for url in self.urls:
            yield Request(url, callback=self.parse_page, errback=self.failed, dont_filter=True,
                          meta={"skillgraph_link": url})

    def document(self, url: str, title: str, markdown: str, tier: str, fetched_at: str,
                 sha256: str = "") -> DocumentItem:
        item = super().document(url, title, markdown, tier, fetched_at, sha256)
        item.source = url
        return item

    def failed(self, failure: Any) -> None:
        request = failure.request
        url = str(request.meta.get("skillgraph_link") or request.url)
        self.failures.setdefault(page_key(url), why_failed(failure.value, url))


def why_failed(exc: BaseException, url: str) -> str:
    """One sentence: what went wrong with ``url`` and what to do about it."""
    if isinstance(exc, HttpError):
        return f"HTTP {exc.response.status}: the server did not return the page (check the URL)"
    message = str(exc) or type(exc).__name__
    if isinstance(exc, IgnoreRequest):
        if message.startswith("SSRF guard"):
            reason = message.split(":", 1)[1].strip()
            return (f"refused by the SSRF guard ({reason}); if the site is yours, allow it with "
                    f"-s SKILLGRAPH_SSRF_ALLOWLIST={allowlist_entry(url)}")
        if "robots.txt" in message:
            return "forbidden by the site's robots.txt (-s ROBOTSTXT_OBEY=False only on a site that is yours)"
        return f"refused: {message}"
    return f"unreachable ({type(exc).__name__}: {message}): check the URL and that the server is up"


class Command(ScrapyCommand):
    requires_project = True

    def syntax(self) -> str:
        return "URL [URL ...] [-o DIR]"

    def short_desc(self) -> str:
        return "Scrape one page (or a few) through the tier ladder and quality gates; markdown out, no graph"

    def add_options(self, parser: ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-o", "--output", metavar="DIR", default=None,
                            help="write one .md per URL into DIR (created if missing) instead of stdout")

    def process_options(self, args: list[str], opts: Namespace) -> None:
        super().process_options(args, opts)
        if not opts.loglevel:  # markdown on stdout, one line per failure on stderr: no log unless -L asks
            assert self.settings is not None
            self.settings.set("LOG_LEVEL", "CRITICAL", priority="cmdline")

    def run(self, args: list[str], opts: Namespace) -> None:
        if not args:
            raise UsageError("give at least one URL")
        for url in args:
            if why := url_error(url):
                raise UsageError(f"{url}: {why}", print_help=False)
        assert self.settings is not None and self.crawler_process is not None
        exit_on_bad_settings(self.settings)
        urls = list(dict.fromkeys(args))
        crawler = self.crawler_process.create_crawler(ScrapeSpider)
        documents: dict[str, DocumentItem] = {}
        warnings: dict[str, str] = {}
        dropped: dict[str, str] = {}

        def on_warning(kind: str, url: str, message: str, **_: Any) -> None:
            warnings.setdefault(page_key(url), f"{kind}: {message}")

        def on_scraped(item: Any) -> None:
            if isinstance(item, DocumentItem):
                documents.setdefault(page_key(item.url), item)

        def on_dropped(item: Any, exception: BaseException) -> None:
            url = page_key(str(getattr(item, "url", "")))
            dropped.setdefault(url, f"{type(exception).__name__}: {exception}")

        crawler.signals.connect(on_warning, signal=build_warning)
        crawler.signals.connect(on_scraped, signal=signals.item_scraped)
        crawler.signals.connect(on_dropped, signal=signals.item_dropped)
        self.crawler_process.crawl(crawler, urls=urls)
        self.crawler_process.start()
        failures: dict[str, str] = getattr(crawler.spider, "failures", {})
        self.report(urls, documents, {**warnings, **dropped, **failures}, opts.output)

    def report(self, urls: list[str], documents: dict[str, DocumentItem], failures: dict[str, str],
               output: str | None) -> None:
        out_dir = Path(output) if output else None
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
        taken: set[str] = set()
        for url in urls:
            key = page_key(url)
            item = documents.get(key)
            if item is None:
                why = failures.get(key) or "no content: the answer was not a document (-L INFO shows why)"
                print(f"error: {url}: {why}", file=sys.stderr)
                self.exitcode = 1
                continue
            if out_dir is None:
                if len(urls) > 1:
                    sys.stdout.write(f"---\nurl: {item.url}\n---\n")
                sys.stdout.write(item.markdown if item.markdown.endswith("\n") else item.markdown + "\n")
                continue
            target = out_dir / _file_name(url, taken)
            write_atomic(target, item.markdown)
            print(target)
        sys.stdout.flush()


def _file_name(url: str, taken: set[str]) -> str:
    return unique_file_name(file_stem_for(url, scope_of(url)), taken)
