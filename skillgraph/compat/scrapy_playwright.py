"""scrapy-playwright internals: the download handler's start and browser-download hooks.

Checked against scrapy-playwright 0.0.48 (:data:`skillgraph.compat.CHECKED_VERSIONS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.http import Request, Response

__all__ = ["PlaywrightHandlerHooks"]


class PlaywrightHandlerHooks(ScrapyPlaywrightDownloadHandler):
    """scrapy-playwright's download handler with its private hooks under public names.

    * ``_maybe_launch_in_thread()``: connected to ``engine_started`` by the
      handler's ``__init__`` (on Scrapy ≥ 2.14; older Scrapy connects
      ``_engine_started``), it starts the Playwright driver; a subclass
      overrides :meth:`on_engine_started`.
    * ``_launch()``: starts the driver and the startup contexts, :meth:`launch`.
    * ``_download_request(request, spider=None)``: what ``download_request``
      calls for a ``meta["playwright"]`` request; a subclass overrides
      :meth:`browser_download`.

    The render tier starts the driver on the first browser request instead of
    at engine start (:mod:`skillgraph.render.handler`). Checked against
    scrapy-playwright 0.0.48.
    """

    async def _maybe_launch_in_thread(self) -> None:
        await self.on_engine_started()

    async def _download_request(self, request: Request, spider: Spider | None = None) -> Response:
        return await self.browser_download(request, spider)

    async def on_engine_started(self) -> None:
        """Run on ``engine_started`` (``_maybe_launch_in_thread``): launches Playwright.

        Checked against scrapy-playwright 0.0.48.
        """
        await super()._maybe_launch_in_thread()

    async def launch(self) -> None:
        """Start the Playwright driver and the startup contexts (``_launch``).

        Checked against scrapy-playwright 0.0.48.
        """
        await self._launch()

    async def browser_download(self, request: Request, spider: Spider | None = None) -> Response:
        """Download ``request`` in the browser (``_download_request``). Checked against scrapy-playwright 0.0.48."""
        return await super()._download_request(request, spider)
