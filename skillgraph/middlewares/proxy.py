"""Proxies: ``SKILLGRAPH_PROXY_URL`` for every request, and fail-open when the proxy is down.

Scrapy's ``HttpProxyMiddleware`` (750) already reads ``meta["proxy"]`` and the
``*_proxy`` environment variables and moves URL credentials into a header; the
SOCKS-capable handler (:mod:`skillgraph.handlers.socks`) carries ``socks5://`` and
``socks5h://`` proxies. This middleware, just before it (740), adds the two things
neither does:

* ``SKILLGRAPH_PROXY_URL`` (``http://``, ``https://``, ``socks5://``, ``socks5h://``)
  as the proxy of every request that has no ``proxy`` meta key (``meta["proxy"] = None``
  opts a request out);
* when the proxy cannot be reached (connection refused, unresolvable, no route),
  the request is retried at once without it: a warning once per proxy and
  ``skillgraph/proxy/fallback`` (fail-open, the seed's choice). With
  ``SKILLGRAPH_PROXY_FAIL_OPEN = False`` the error propagates (and is counted as
  ``skillgraph/proxy/unreachable``). A proxy that answers but refuses the tunnel
  is not "unreachable": that error propagates either way.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.exceptions import CannotResolveHostError, DownloadConnectionRefusedError
from twisted.internet.error import ConnectError

from skillgraph.handlers.socks import SocksError

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")
_UNREACHABLE = (DownloadConnectionRefusedError, CannotResolveHostError, ConnectError)


def redact(proxy: str) -> str:
    """The proxy URL without its credentials, for logs."""
    parts = urlsplit(proxy)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}:{parts.port}" if parts.port else f"{parts.scheme}://{host}"


class ProxyMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.proxy_url: str | None = settings.get("SKILLGRAPH_PROXY_URL") or None
        if self.proxy_url and urlsplit(self.proxy_url).scheme not in PROXY_SCHEMES:
            raise ValueError(f"SKILLGRAPH_PROXY_URL must be one of {PROXY_SCHEMES}: {redact(self.proxy_url)}")
        self.fail_open = settings.getbool("SKILLGRAPH_PROXY_FAIL_OPEN", True)
        self._warned: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        if self.proxy_url and "proxy" not in request.meta:
            request.meta["proxy"] = self.proxy_url

    def process_exception(self, request: Request, exception: Exception) -> Request | None:
        proxy = request.meta.get("proxy")
        if not proxy or not isinstance(exception, _UNREACHABLE) or isinstance(exception, SocksError):
            return None
        stats = self.crawler.stats
        assert stats is not None
        name = redact(proxy)
        if not self.fail_open:
            stats.inc_value("skillgraph/proxy/unreachable")
            return None
        stats.inc_value("skillgraph/proxy/fallback")
        if name not in self._warned:
            self._warned.add(name)
            logger.warning("Proxy %s unreachable (%s): falling back to a direct connection", name,
                           exception.__class__.__name__)
        direct = request.replace(dont_filter=True)
        direct.meta["proxy"] = None
        direct.meta["skillgraph_proxy_fallback"] = name
        direct.headers.pop(b"Proxy-Authorization", None)
        return direct
