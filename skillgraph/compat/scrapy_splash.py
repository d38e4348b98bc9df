"""scrapy-splash internals: the private hooks of its middlewares, and the name it imports from Scrapy.

Importing this module first provides ``scrapy.utils.url.canonicalize_url``
(from w3lib) when Scrapy no longer does: ``scrapy_splash.dupefilter`` and
``.request`` import it from there, so scrapy-splash cannot be imported
without it. Import scrapy-splash only after this module (``middleware`` below
is its middleware module).

Checked against scrapy-splash 0.11.1 (:data:`skillgraph.compat.CHECKED_VERSIONS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import scrapy.utils.url
import w3lib.url

if not hasattr(scrapy.utils.url, "canonicalize_url"):  # before scrapy_splash is imported
    scrapy.utils.url.canonicalize_url = w3lib.url.canonicalize_url  # type: ignore[attr-defined]

from scrapy_splash import middleware

if TYPE_CHECKING:
    from scrapy import Request, Spider

__all__ = ["SplashMiddlewareHooks", "dedup_splash_args", "middleware"]


class SplashMiddlewareHooks(middleware.SplashMiddleware):
    """scrapy-splash's ``SplashMiddleware``, its private ``_get_slot_key`` hook under a public name.

    ``process_request`` puts a Splash request in the download slot of its
    target URL with ``meta["download_slot"] = self._get_slot_key(request)``;
    a subclass overrides :meth:`slot_key`. scrapy-splash's own answer calls
    ``Downloader._get_slot_key(request, spider)``, which Scrapy no longer has.
    Checked against scrapy-splash 0.11.1.
    """

    def _get_slot_key(self, request_or_response: Any) -> str:
        return self.slot_key(request_or_response)

    def slot_key(self, request_or_response: Any) -> str:
        """The download slot of a Splash request (``_get_slot_key``). Checked against scrapy-splash 0.11.1."""
        key: str = super()._get_slot_key(request_or_response)
        return key


def dedup_splash_args(dedup: Any, request: Request, spider: Spider) -> Request:
    """``SplashDeduplicateArgsMiddleware._process_request(request, spider)`` (private).

    Replaces the ``cache_args`` values of a Splash request with fingerprints
    and keeps the values once, in ``spider.state``; the middleware's own
    ``process_spider_output`` (a plain generator, refused by Scrapy for
    asynchronous spider output) is the only public caller, so skillgraph's
    asynchronous variant calls this. Checked against scrapy-splash 0.11.1.
    """
    processed: Request = dedup._process_request(request, spider)
    return processed
