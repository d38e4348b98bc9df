"""scrapy-splash 0.11.1 on Scrapy 2.19: the smallest layer that makes its middlewares run.

scrapy-splash is unmaintained against recent Scrapy; three things break:

1. ``scrapy_splash.dupefilter`` and ``.request`` import ``canonicalize_url``
   from ``scrapy.utils.url``, which Scrapy dropped (it lives in w3lib). The
   name is provided there, from w3lib, before scrapy-splash is imported (by
   :mod:`skillgraph.compat.scrapy_splash`, imported first).
2. ``SplashDeduplicateArgsMiddleware.process_spider_output`` is a plain
   generator: Scrapy 2.19 refuses a spider middleware that cannot take
   asynchronous spider output (``start()`` and async callbacks produce it).
   The subclass below is a "universal" middleware: a sync and an async
   (``process_spider_output_async``) variant, plus an async ``process_start``
   in place of the removed ``process_start_requests`` hook.
3. ``SplashMiddleware._get_slot_key`` calls the private
   ``Downloader._get_slot_key(request, spider)``, gone from Scrapy 2.19;
   the public ``Downloader.get_slot_key(request)`` replaces it (through the
   ``slot_key`` hook of :class:`skillgraph.compat.scrapy_splash.SplashMiddlewareHooks`).

The subclasses also drop the deprecated ``spider`` argument of middleware
methods (``self.crawler.spider`` instead). Everything else — the request
rewriting into a Splash HTTP API call, response classes, cookies, argument
dedup — is scrapy-splash's own code, unchanged. Select it with
``SKILLGRAPH_RENDER_BACKEND = "splash"`` and ``SKILLGRAPH_SPLASH_URL``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from scrapy import Request

from skillgraph.compat.scrapy_splash import SplashMiddlewareHooks, dedup_splash_args  # (1): before scrapy_splash
from skillgraph.compat.scrapy_splash import middleware as _splash

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

LOCAL_VALUES_KEY = _splash.SplashDeduplicateArgsMiddleware.local_values_key


def _spider_state(spider: Spider) -> dict[str, Any]:
    if not hasattr(spider, "state"):
        spider.state = {}  # type: ignore[attr-defined]
    state: dict[str, Any] = spider.state  # type: ignore[attr-defined]
    state.setdefault(LOCAL_VALUES_KEY, {})
    return state


class SplashCookiesMiddleware(_splash.SplashCookiesMiddleware):
    crawler: Crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SplashCookiesMiddleware:
        mw = cls(debug=crawler.settings.getbool("SPLASH_COOKIES_DEBUG"))
        mw.crawler = crawler
        return mw

    def process_request(self, request: Request) -> Any:
        return super().process_request(request, self.crawler.spider)

    def process_response(self, request: Request, response: Response) -> Any:
        return super().process_response(request, response, self.crawler.spider)


class SplashMiddleware(SplashMiddlewareHooks):
    def spider_opened(self, spider: Spider) -> None:
        super().spider_opened(spider)
        _spider_state(spider)  # normally made by the removed process_start_requests hook

    def process_request(self, request: Request) -> Any:
        return super().process_request(request, self.crawler.spider)

    def process_response(self, request: Request, response: Response) -> Any:
        return super().process_response(request, response, self.crawler.spider)

    def slot_key(self, request_or_response: Any) -> str:  # (3)
        request = getattr(request_or_response, "request", None) or request_or_response
        return str(self.crawler.engine.downloader.get_slot_key(request))


class SplashDeduplicateArgsMiddleware(_splash.SplashDeduplicateArgsMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SplashDeduplicateArgsMiddleware:
        return cls(crawler)

    def _dedup(self, element: Any) -> Any:
        if isinstance(element, Request):
            spider = self.crawler.spider
            assert spider is not None
            _spider_state(spider)
            return dedup_splash_args(self, element, spider)
        return element

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        for element in result:
            yield self._dedup(element)

    async def process_spider_output_async(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for element in result:  # (2)
            yield self._dedup(element)

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for element in start:
            yield self._dedup(element)
