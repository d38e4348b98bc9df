"""PageErrors: a page whose evaluation raised ends in the build's ledger, never lost in a log line.

Scrapy logs an exception raised by a spider callback and drops the response:
the page's URL was learned, neither written nor skipped, and the build went on
to commit as if it never existed (vim's ``pi_netrw.html`` was lost that way to
an ``href`` no URL parser accepts). Whatever the bug, this middleware records
the page as ``skipped`` with reason ``low-quality`` (no usable document came of
it; DESIGN.md's list) and the exception in ``detail``, counts it
(``skillgraph/page/evaluation_errors``) and warns once a page; Scrapy still logs
the traceback. Only the page callbacks are watched: a strategy probe or a
sitemap has its own fallbacks.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from skillgraph.build import Build

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

#: The spider callbacks that turn a page's response into a document (skillgraph.page.callbacks).
PAGE_CALLBACKS = frozenset({"parse_page", "html_document", "parse_twin"})
DETAIL_CHARS = 200


class PageErrors:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageErrors:
        return cls(crawler)

    def process_spider_exception(self, response: Response, exception: BaseException, spider: Any = None) -> None:
        request = response.request
        if request is None or getattr(request.callback, "__name__", "") not in PAGE_CALLBACKS:
            return None
        link = str(request.cb_kwargs.get("link") or request.meta.get("skillgraph_link") or request.url)
        why = f"{type(exception).__name__}: {exception}"
        Build.of(self.crawler).skip(link, "low-quality",
                                    detail=f"the page could not be evaluated ({why})"[:DETAIL_CHARS])
        self.crawler.stats.inc_value("skillgraph/page/evaluation_errors")
        logger.warning("Page %s could not be evaluated (%s): skipped as low-quality; the traceback follows",
                       link, why[:DETAIL_CHARS])
        return None  # Scrapy logs the traceback as a spider error
