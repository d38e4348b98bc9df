"""The fetch limit for bench/crawl.py: plain Scrapy fetching a list of URLs and nothing else.

Reads the URLs (one per line) the build wrote, requests them all with the same
concurrency and no delay, and only counts the responses: no parsing, no link
following, no pipeline. Prints one JSON line: pages and seconds.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scrapy import Request, Spider
from scrapy.crawler import CrawlerProcess


class FetchSpider(Spider):
    name = "fetch"

    def __init__(self, urls: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = urls
        self.pages = 0

    async def start(self) -> Any:
        for url in self.urls:
            yield Request(url, callback=self.parse, dont_filter=True)

    def parse(self, response: Any) -> Iterator[Any]:
        self.pages += 1
        return iter(())


def main() -> None:
    urls = Path(sys.argv[1]).read_text().split()
    concurrency = int(sys.argv[2])
    process = CrawlerProcess({
        "LOG_LEVEL": "WARNING", "ROBOTSTXT_OBEY": True, "DOWNLOAD_DELAY": 0, "TELNETCONSOLE_ENABLED": False,
        "CONCURRENT_REQUESTS": concurrency, "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency, "COOKIES_ENABLED": False,
    })
    crawler = process.create_crawler(FetchSpider)
    process.crawl(crawler, urls=urls)
    process.start()
    print(json.dumps({"pages": crawler.spider.pages, "seconds": crawler.stats.get_value("elapsed_time_seconds")}))


if __name__ == "__main__":
    main()
