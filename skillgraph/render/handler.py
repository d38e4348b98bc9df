"""The Playwright download handler, started on the first render instead of at engine start.

scrapy-playwright starts its Playwright driver (a Node process per handler: one
for ``http``, one for ``https``) on ``engine_started`` and the engine waits for
it: seconds on a busy machine, for every crawl, including the many that never
render a page (an llms-full corpus, a static docs site). This subclass defers
that start to the first request with ``meta["playwright"]``; everything else
(browser launch, contexts, pages, closing) is scrapy-playwright's own code,
reached through the hooks of :class:`skillgraph.compat.scrapy_playwright.PlaywrightHandlerHooks`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from skillgraph.compat.scrapy_playwright import PlaywrightHandlerHooks

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response


class LazyPlaywrightDownloadHandler(PlaywrightHandlerHooks):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._started = False
        self._start_lock = asyncio.Lock()

    async def on_engine_started(self) -> None:
        """Run on ``engine_started`` by the base class: do nothing yet."""

    async def browser_download(self, request: Request, spider: Spider | None = None) -> Response:
        async with self._start_lock:
            if not self._started:
                await self.launch()
                self._started = True
        return await super().browser_download(request, spider)
