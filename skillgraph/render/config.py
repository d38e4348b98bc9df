"""Render settings: which backend, its Scrapy settings, and the meta of a render request.

scrapy-playwright is a download handler for ``http``/``https`` that renders only
requests with ``meta["playwright"] = True`` and hands every other request to
Scrapy's HTTP/1.1 handler; with :mod:`skillgraph.render.handler` starting
Playwright on the first render, enabling it costs nothing until a page needs a
browser. Playwright cannot
download browsers here: Debian's Chromium is launched by path
(``SKILLGRAPH_RENDER_BROWSER``), with the flags that keep it from calling home
(background networking, component updates, sync), which a closed network refuses.

Splash (``SKILLGRAPH_RENDER_BACKEND = "splash"``) goes through scrapy-splash's
middlewares made to run on Scrapy 2.19 by :mod:`skillgraph.render.splash_compat`.

Rendering on by default is not a promise of a browser: when Chromium is missing
and the user did not ask for rendering (``SKILLGRAPH_RENDER_ENABLED`` set only at
the add-on's priority), :func:`configure` switches the tier off and
:class:`~skillgraph.render.check.RenderCheck` says so in one warning line. Asked
for explicitly (``settings.py``, ``-s``, spider settings), a missing browser is an
error at crawl start.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy.settings import SETTINGS_PRIORITIES

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

BACKENDS = ("playwright", "splash")
PLAYWRIGHT_HANDLER = "skillgraph.render.handler.LazyPlaywrightDownloadHandler"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SPLASH_DOWNLOADER_MIDDLEWARES = {
    "skillgraph.render.splash_compat.SplashCookiesMiddleware": 723,
    "skillgraph.render.splash_compat.SplashMiddleware": 725,
    # scrapy-splash needs decompression after its middleware (its README: 810).
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": 810,
}
SPLASH_SPIDER_MIDDLEWARES = {"skillgraph.render.splash_compat.SplashDeduplicateArgsMiddleware": 100}

#: Runs in the page after navigation: resolves once the visible text has grown by ``minChars`` (from what it
#: was at the first look: a shell's "Loading…", a hybrid page's static navigation) and stayed unchanged for
#: ``quietMs``; or, once it holds ``minChars`` at all, has stayed unchanged for ``settleMs`` (a page that
#: had its text from the start, or gained less); or after ``timeoutMs`` in any case (never rejects, so a
#: page that never fills is still returned and assessed).
WAIT_FOR_CONTENT_JS = """async ({minChars, quietMs, settleMs, timeoutMs}) => {
  const start = Date.now();
  const visible = () => document.body ? document.body.innerText.trim().length : 0;
  const base = visible();
  let last = base, since = start;
  while (Date.now() - start < timeoutMs) {
    const n = visible();
    if (n !== last) { last = n; since = Date.now(); }
    else if (n >= minChars && Date.now() - since >= (n - base >= minChars ? quietMs : settleMs)) return n;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return last;
}"""

#: Sub-resources a text extraction never needs: aborted in the browser.
ABORTED_RESOURCE_TYPES = frozenset({"image", "media", "font"})


@dataclass(frozen=True)
class RenderConfig:
    enabled: bool
    backend: str
    timeout: float  #: seconds: navigation bound, and the content wait's
    wait_chars: int  #: visible characters that count as "content arrived"
    browser: str
    splash_url: str

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RenderConfig:
        backend = str(settings.get("SKILLGRAPH_RENDER_BACKEND") or "playwright").lower()
        if backend not in BACKENDS:
            raise ValueError(f"SKILLGRAPH_RENDER_BACKEND must be one of {BACKENDS}, not {backend!r}")
        return cls(
            enabled=settings.getbool("SKILLGRAPH_RENDER_ENABLED", True),
            backend=backend,
            timeout=max(1.0, settings.getfloat("SKILLGRAPH_RENDER_TIMEOUT", 20.0)),
            wait_chars=settings.getint("SKILLGRAPH_RENDER_WAIT_CHARS", 200),
            browser=str(settings.get("SKILLGRAPH_RENDER_BROWSER") or "/usr/bin/chromium"),
            splash_url=str(settings.get("SKILLGRAPH_SPLASH_URL") or ""),
        )


def render_explicit(settings: BaseSettings) -> bool:
    """Did the user ask for rendering (``SKILLGRAPH_RENDER_ENABLED`` set above the add-on's default)?"""
    return (settings.getpriority("SKILLGRAPH_RENDER_ENABLED") or 0) > SETTINGS_PRIORITIES["addon"]


def missing_browser(settings: BaseSettings, config: RenderConfig) -> str | None:
    """The Chromium path Playwright would launch when it is not an executable file, else None.

    None too for Splash and for a remote browser (``PLAYWRIGHT_CDP_URL``/``PLAYWRIGHT_CONNECT_URL``).
    """
    if config.backend != "playwright" or settings.get("PLAYWRIGHT_CDP_URL") or settings.get("PLAYWRIGHT_CONNECT_URL"):
        return None
    launch = settings.getdict("PLAYWRIGHT_LAUNCH_OPTIONS")
    browser = str(launch.get("executable_path") or config.browser)
    return None if os.path.isfile(browser) and os.access(browser, os.X_OK) else browser


def render_off_without_browser(settings: BaseSettings, config: RenderConfig) -> bool:
    """Rendering on by default only, and no browser: the tier is switched off (RenderCheck warns)."""
    return config.enabled and not render_explicit(settings) and missing_browser(settings, config) is not None


def configure(settings: BaseSettings) -> None:
    """Install the render backend's Scrapy settings (add-on priority: users still win)."""
    config = RenderConfig.from_settings(settings)
    if render_off_without_browser(settings, config):
        settings.set("SKILLGRAPH_RENDER_ENABLED", False, "addon")
        return
    if not config.enabled:
        return
    if config.backend == "splash":
        for name, components in (("DOWNLOADER_MIDDLEWARES", SPLASH_DOWNLOADER_MIDDLEWARES),
                                 ("SPIDER_MIDDLEWARES", SPLASH_SPIDER_MIDDLEWARES)):
            for path, priority in components.items():
                settings[name].set(path, priority, "addon")
        settings.set("SPLASH_URL", config.splash_url, "addon")
        return
    for scheme in ("http", "https"):
        settings["DOWNLOAD_HANDLERS"].set(scheme, PLAYWRIGHT_HANDLER, "addon")
    settings.set("PLAYWRIGHT_BROWSER_TYPE", "chromium", "addon")
    settings.set("PLAYWRIGHT_LAUNCH_OPTIONS",
                 {"executable_path": config.browser, "headless": True, "args": CHROMIUM_ARGS}, "addon")
    settings.set("PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT", config.timeout * 1000, "addon")
    # One context, pages closed after every render (playwright_include_page is never
    # set), at most CONCURRENT_REQUESTS_PER_DOMAIN pages open at once.
    settings.set("PLAYWRIGHT_MAX_CONTEXTS", 1, "addon")
    settings.set("PLAYWRIGHT_MAX_PAGES_PER_CONTEXT", settings.getint("SKILLGRAPH_RENDER_MAX_PAGES_OPEN", 4), "addon")
    settings.set("PLAYWRIGHT_ABORT_REQUEST", "skillgraph.render.config.abort_request", "addon")


def abort_request(request: Any) -> bool:
    """PLAYWRIGHT_ABORT_REQUEST: skip images, media and fonts (a text extraction never reads them)."""
    return str(request.resource_type) in ABORTED_RESOURCE_TYPES


def render_meta(config: RenderConfig) -> dict[str, Any]:
    """Request meta that makes the configured backend render the page."""
    if config.backend == "splash":
        return {"splash": {"endpoint": "render.html",
                           "args": {"wait": 0.5, "timeout": config.timeout, "images": 0}}}
    from scrapy_playwright.page import PageMethod

    # Navigation is bounded by the timeout, the content wait by half of it: 1.5 x per page at most.
    wait = {"minChars": config.wait_chars, "quietMs": 200, "settleMs": 1500, "timeoutMs": int(config.timeout * 500)}
    return {
        "playwright": True,
        "playwright_context": "skillgraph-render",
        "playwright_page_goto_kwargs": {"wait_until": "domcontentloaded"},
        "playwright_page_methods": [PageMethod("evaluate", WAIT_FOR_CONTENT_JS, wait)],
    }
