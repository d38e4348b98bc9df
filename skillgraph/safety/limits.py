"""Counters for the limits Scrapy enforces silently: redirect chains and decompression bombs.

Scrapy already bounds what matters (``DOWNLOAD_TIMEOUT``, ``DOWNLOAD_MAXSIZE``,
also on the decompressed size in ``HttpCompressionMiddleware``, ``REDIRECT_MAX_TIMES``,
``DEPTH_LIMIT``) and counts timeouts and cancelled downloads in
``downloader/exception_type_count/*``. Two of its refusals leave no stat: the
end of a redirect chain (a debug line) and a decompression bomb (a warning).
These two small components add the stat and a warning once per host, and
change nothing else.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.httpobj import urlparse_cached

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

_REDIRECTS = (301, 302, 303, 307, 308)


class RedirectLimitMiddleware:
    """Runs just before ``RedirectMiddleware`` (600): counts the hop it is about to refuse."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.max_times = crawler.settings.getint("REDIRECT_MAX_TIMES")
        self._logged: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        if response.status not in _REDIRECTS or b"Location" not in response.headers:
            return response
        if request.meta.get("dont_redirect"):
            return response
        ttl = request.meta.get("redirect_ttl", self.max_times)
        if ttl and request.meta.get("redirect_times", 0) < self.max_times:
            return response
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("skillgraph/limits/max_redirects")
        host = urlparse_cached(request).netloc
        if host not in self._logged:
            self._logged.add(host)
            logger.warning("Redirect limit (%d) reached at %s: the chain is dropped", self.max_times, request.url)
        return response


class BoundedHttpCompressionMiddleware(HttpCompressionMiddleware):
    """Scrapy's decompression (with its ``DOWNLOAD_MAXSIZE`` bound), plus a stat for a bomb."""

    def process_response(self, request: Request, response: Response) -> Request | Response:  # type: ignore[override]
        try:
            return super().process_response(request, response)
        except IgnoreRequest as exc:
            if "DOWNLOAD_MAXSIZE" in str(exc) and self.stats is not None:
                self.stats.inc_value("skillgraph/limits/decompression_bomb")
            raise
