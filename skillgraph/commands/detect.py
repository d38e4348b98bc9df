"""``scrapy detect URL [URL ...]``: print each site's strategy as one JSON line.

Detection runs the same SiteProfiler as the crawl, inside a real crawler, so
its probes obey robots.txt, politeness and the SSRF guard. Sites are probed
concurrently (one probe at a time per site).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

from scrapy import Spider
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from skillgraph.profiler import SiteProfile, SiteProfiler


class DetectSpider(Spider):
    """Profiles its URLs and yields nothing; results are kept in ``profiles``."""

    name = "skillgraph_detect"

    def __init__(self, urls: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = urls
        self.profiles: dict[str, SiteProfile] = {}

    async def start(self) -> AsyncIterator[Any]:
        profiler = SiteProfiler.from_crawler(self.crawler)

        async def one(url: str) -> None:
            self.profiles[url] = await profiler.profile(url)

        await asyncio.gather(*(one(url) for url in self.urls))
        return
        yield  # pragma: no cover - makes this an async generator


class Command(ScrapyCommand):
    requires_project = True

    def process_options(self, args: list[str], opts: Any) -> None:
        super().process_options(args, opts)
        if not opts.loglevel:  # JSON on stdout, only problems on stderr
            assert self.settings is not None
            self.settings.set("LOG_LEVEL", "WARNING", priority="cmdline")

    def syntax(self) -> str:
        return "URL [URL ...]"

    def short_desc(self) -> str:
        return "Detect each site's strategy (llms-full, llms-index, sitemap, crawl)"

    def run(self, args: list[str], opts: Any) -> None:
        if not args:
            raise UsageError("give at least one URL")
        assert self.crawler_process is not None
        crawler = self.crawler_process.create_crawler(DetectSpider)
        self.crawler_process.crawl(crawler, urls=args)
        self.crawler_process.start()
        spider = crawler.spider
        profiles: dict[str, SiteProfile] = getattr(spider, "profiles", {})
        for url in args:
            profile = profiles.get(url)
            if profile is None:
                print(json.dumps({"url": url, "strategy": None, "error": "detection did not finish"}))
                self.exitcode = 1
                continue
            data = profile.to_json()
            print(json.dumps({k: data[k] for k in ("url", "strategy", "scope", "source", "probes")}))
        sys.stdout.flush()
