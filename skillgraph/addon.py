"""The skillgraph add-on: registers every component at a fixed priority.

Like scrapy-zyte-api's ``Addon``: ``settings.py`` stays short, priorities live
in one place, and a user project can enable skillgraph with one ``ADDONS``
line. Defaults set here use the ``addon`` priority, so project settings and
``-s`` options still win.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillgraph import __version__

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

#: Every SKILLGRAPH_* default (docs/settings.md lists and explains them).
DEFAULTS: dict[str, object] = {
    "SKILLGRAPH_GRAPHS_DIR": "graphs",
    "SKILLGRAPH_ITEMS_DIR": "items",
    "SKILLGRAPH_STORE_URL": "sqlite:///store.sqlite3",
    "SKILLGRAPH_MAX_PAGES": 400,
    "SKILLGRAPH_CRAWL_TIMEOUT": 240,
    "SKILLGRAPH_RECENCY_HOURS": 24,
    "SKILLGRAPH_SSRF_ENABLED": True,
    "SKILLGRAPH_SSRF_ALLOWLIST": [],
    "SKILLGRAPH_LLMS_FULL_MIN_CHARS": 2000,
    "SKILLGRAPH_LLMS_MAX_SECTIONS": 400,
    "SKILLGRAPH_LLMS_FILE_BYTES": 49152,
    "SKILLGRAPH_LLMS_INCLUDE_OPTIONAL": True,
    "SKILLGRAPH_SITEMAP_MAX_FILES": 200,
    "SKILLGRAPH_SITEMAP_MAX_URLS": 100_000,
    "SKILLGRAPH_CONTACT_URL": "https://github.com/skillgraph/skillgraph",
    "SKILLGRAPH_STATS_FILE": None,
}

#: Scrapy settings whose defaults skillgraph makes polite and safe.
POLITE: dict[str, object] = {
    "ROBOTSTXT_OBEY": True,
    "DOWNLOAD_DELAY": 1.0,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 4,
    "DOWNLOAD_TIMEOUT": 30,
    "DOWNLOAD_MAXSIZE": 10 * 1024 * 1024,
    "DOWNLOAD_WARNSIZE": 5 * 1024 * 1024,
    "REDIRECT_MAX_TIMES": 10,
    "DEPTH_LIMIT": 20,
    "TELNETCONSOLE_ENABLED": False,
    # Scrapy 2.19's remote-control extension serves code execution over HTTP: off.
    "REMOTE_CONTROL_ENABLED": False,
    "COOKIES_ENABLED": False,
}

DOWNLOADER_MIDDLEWARES: dict[str, int] = {}

ITEM_PIPELINES: dict[str, int] = {
    "skillgraph.pipelines.page_budget.PageBudgetPipeline": 600,
    "skillgraph.pipelines.graph.GraphWriterPipeline": 900,
}

EXTENSIONS: dict[str, int] = {
    "skillgraph.extensions.crawl_timeout.CrawlTimeout": 500,
    "skillgraph.extensions.stats_file.StatsFile": 900,
}


def user_agent(contact_url: str) -> str:
    return f"skillgraph/{__version__} (+{contact_url}; documentation indexer)"


class Addon:
    def update_settings(self, settings: BaseSettings) -> None:
        for name, value in {**DEFAULTS, **POLITE}.items():
            settings.set(name, value, "addon")
        settings.set("USER_AGENT", user_agent(str(settings.get("SKILLGRAPH_CONTACT_URL"))), "addon")
        for setting, components in (
            ("DOWNLOADER_MIDDLEWARES", DOWNLOADER_MIDDLEWARES),
            ("ITEM_PIPELINES", ITEM_PIPELINES),
            ("EXTENSIONS", EXTENSIONS),
        ):
            for path, priority in components.items():
                settings[setting].set(path, priority, "addon")
