"""RenderCheck: at crawl start, say once whether the render tier can work.

scrapy-playwright launches the browser on the first render; a missing
executable would then fail every render request one by one, and the ladder
would quietly degrade every CSR page to ``best-effort``. Checking once, at
crawl start, turns that into one clear line:

* rendering asked for explicitly (``SKILLGRAPH_RENDER_ENABLED=True`` in
  ``settings.py``, ``-s`` or spider settings) and no browser: the crawl fails
  at start with :class:`RenderUnavailableError`;
* rendering on by default only and no browser: :func:`skillgraph.render.configure`
  already switched the tier off; this extension logs one warning and sets the
  stat ``skillgraph/render/unavailable``, and the crawl goes on without it (the
  pages that need a browser end as ``best-effort``, each with its warning).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from skillgraph.render.config import RenderConfig, missing_browser, render_explicit

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

HINT = ("install Chromium (apt-get install chromium), point SKILLGRAPH_RENDER_BROWSER at one, "
        "or set SKILLGRAPH_RENDER_ENABLED=False")


class RenderUnavailableError(RuntimeError):
    """Rendering was asked for but its browser or service is missing."""


class RenderCheck:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        config = RenderConfig.from_settings(settings)
        if not config.enabled:
            if not render_explicit(settings) and (browser := missing_browser(settings, config)):
                crawler.stats.set_value("skillgraph/render/unavailable", 1)
                logger.warning("Render tier off: no browser at %r (SKILLGRAPH_RENDER_BROWSER); pages that need one "
                               "are kept as best effort. To render, install Chromium (apt-get install chromium) or "
                               "point SKILLGRAPH_RENDER_BROWSER at one; -s SKILLGRAPH_RENDER_ENABLED=False silences "
                               "this", browser)
            raise NotConfigured  # no message: Scrapy would log "Disabled ..." as a second warning
        if config.backend == "splash":
            if not config.splash_url:
                raise RenderUnavailableError("SKILLGRAPH_RENDER_BACKEND is 'splash' but SKILLGRAPH_SPLASH_URL is empty")
        elif browser := missing_browser(settings, config):
            raise RenderUnavailableError(
                f"render browser {browser!r} (SKILLGRAPH_RENDER_BROWSER) is not an executable file: {HINT}")
        crawler.stats.set_value("skillgraph/render/backend", config.backend)
        logger.info("Render tier: %s backend, %.0f s per page", config.backend, config.timeout)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderCheck:
        return cls(crawler)
