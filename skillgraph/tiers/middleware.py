"""TierErrorMiddleware: non-HTML block answers are recorded, never lost.

``HTTPERROR_ALLOWED_CODES`` lets 403/429/503 page answers through so that block
pages reach the ladder. An HTML one does (``parse_page`` -> ``html_document``);
a plain-text one ("Too Many Requests") would be taken by ``parse_page`` for a
markdown document. ``process_response`` examines such an answer with the
quality gates, lists it under ``warnings`` as ``blocked`` and refuses it
(``IgnoreRequest``): a browser or a markdown twin cannot unblock a text error.
(Failed tier requests reach the ladder through their errback, ``tier_failed``.)

Placed at 540, just before RetryMiddleware (550): it sees only what retries could
not fix.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.httpobj import urlparse_cached

from skillgraph.quality import assess
from skillgraph.signals import build_warning

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

BLOCK_STATUSES = frozenset({403, 429, 503})


class TierErrorMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.allowed = set(crawler.settings.getlist("HTTPERROR_ALLOWED_CODES")) & BLOCK_STATUSES
        self.logged: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TierErrorMiddleware:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        if (response.status not in self.allowed or isinstance(response, HtmlResponse)
                or request.callback is NO_CALLBACK or _handles_statuses(request)):
            return response
        text = response.text if isinstance(response, TextResponse) else ""
        headers = {k.decode("latin-1"): b", ".join(v).decode("latin-1") for k, v in response.headers.items()}
        label = assess(text, markdown=text, status=response.status, headers=headers, url=response.url).block
        label = label or f"http-{response.status}"
        url = str(request.meta.get("skillgraph_link") or request.url)
        stats = self.crawler.stats
        stats.inc_value(f"skillgraph/tiers/status/{response.status}")
        stats.inc_value(f"skillgraph/tiers/blocked/{label}")
        host = urlparse_cached(request).netloc
        level = logging.DEBUG if host in self.logged else logging.WARNING
        self.logged.add(host)
        message = f"HTTP {response.status} with a non-HTML body ({label}): not a document"
        logger.log(level, "Page %s: %s (further ones of %s at DEBUG)", url, message, host)
        self.crawler.signals.send_catch_log(build_warning, kind="blocked", url=url, message=message, label=label)
        raise IgnoreRequest(f"blocked ({label}): {url}")


def _handles_statuses(request: Request) -> bool:
    """Requests whose callback examines statuses itself: the ladder's, ``.md`` twins, probes."""
    meta = request.meta
    return bool(meta.get("skillgraph_tier") or meta.get("skillgraph_probe") or meta.get("handle_httpstatus_all")
                or meta.get("handle_httpstatus_list"))
