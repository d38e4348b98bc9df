"""RenderCheck: fail the crawl at start when the render backend cannot work.

scrapy-playwright launches the browser on the first render; a missing
executable would then fail every render request one by one, and the ladder
would quietly degrade every CSR page to ``best-effort``. Checking once, at
crawl start, turns that into one clear error. Switch rendering off
(``SKILLGRAPH_RENDER_ENABLED = False``) to crawl without a browser.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from skillgraph.render.config import RenderConfig

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class RenderUnavailableError(RuntimeError):
    """Rendering is on but its browser or service is missing."""


class RenderCheck:
    def __init__(self, crawler: Crawler) -> None:
        config = RenderConfig.from_settings(crawler.settings)
        if not config.enabled:
            raise NotConfigured("SKILLGRAPH_RENDER_ENABLED is off")
        if config.backend == "splash":
            if not config.splash_url:
                raise RenderUnavailableError("SKILLGRAPH_RENDER_BACKEND is 'splash' but SKILLGRAPH_SPLASH_URL is empty")
        elif not (crawler.settings.get("PLAYWRIGHT_CDP_URL") or crawler.settings.get("PLAYWRIGHT_CONNECT_URL")):
            launch = crawler.settings.getdict("PLAYWRIGHT_LAUNCH_OPTIONS")
            browser = str(launch.get("executable_path") or config.browser)
            if not (os.path.isfile(browser) and os.access(browser, os.X_OK)):
                raise RenderUnavailableError(
                    f"render browser {browser!r} (SKILLGRAPH_RENDER_BROWSER) is not an executable file: install "
                    "Chromium (apt-get install chromium), point SKILLGRAPH_RENDER_BROWSER at one, or set "
                    "SKILLGRAPH_RENDER_ENABLED=False"
                )
        crawler.stats.set_value("skillgraph/render/backend", config.backend)
        logger.info("Render tier: %s backend, %.0f s per page", config.backend, config.timeout)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderCheck:
        return cls(crawler)
