"""The baseline for bench/crawl.py: plain Scrapy fetching and link-following the same pages.

No skillgraph component, no extraction: a LinkExtractor crawl of the scope with
the same concurrency, robots.txt on. Prints one JSON line: pages and seconds.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from scrapy import Spider
from scrapy.crawler import CrawlerProcess
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor


class PlainSpider(Spider):
    name = "plain"

    def __init__(self, url: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [url]
        self.scope = url.rsplit("/", 1)[0] + "/"
        self.links = LinkExtractor(allow=[f"^{self.scope}"], deny_extensions=None)
        self.pages = 0

    def parse(self, response: Any) -> Any:
        if not isinstance(response, HtmlResponse):
            return
        self.pages += 1
        for link in self.links.extract_links(response):
            if link.url.endswith((".html", "/")):
                yield response.follow(link.url, callback=self.parse)


def main() -> None:
    url, concurrency = sys.argv[1], int(sys.argv[2])
    process = CrawlerProcess({
        "LOG_LEVEL": "WARNING", "ROBOTSTXT_OBEY": True, "DOWNLOAD_DELAY": 0, "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False, "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency, "COOKIES_ENABLED": False,
    })
    crawler = process.create_crawler(PlainSpider)
    started = time.perf_counter()
    process.crawl(crawler, url=url)
    process.start()
    elapsed = crawler.stats.get_value("elapsed_time_seconds") or (time.perf_counter() - started)
    print(json.dumps({"pages": crawler.spider.pages, "seconds": elapsed}))


if __name__ == "__main__":
    main()
