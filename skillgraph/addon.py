"""The skillgraph add-on: registers every component at a fixed priority.

Like scrapy-zyte-api's ``Addon``: ``settings.py`` stays short, priorities live
in one place, and a user project can enable skillgraph with one ``ADDONS``
line. Defaults set here use the ``addon`` priority, so project settings and
``-s`` options still win.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillgraph import __version__
from skillgraph.distributed import configure as configure_distributed
from skillgraph.handlers.socks import configure as configure_socks
from skillgraph.render import configure as configure_render

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

#: Every SKILLGRAPH_* default (docs/settings.md lists and explains them).
DEFAULTS: dict[str, object] = {
    "SKILLGRAPH_GRAPHS_DIR": "graphs",
    "SKILLGRAPH_GRAPH_LOCAL_LINKS": True,
    "SKILLGRAPH_ITEMS_DIR": "items",
    "SKILLGRAPH_STORE_URL": "sqlite:///store.sqlite3",
    "SKILLGRAPH_MAX_PAGES": 400,
    "SKILLGRAPH_CRAWL_TIMEOUT": 240,
    "SKILLGRAPH_CRAWL_TIMEOUT_GRACE": 5,
    "SKILLGRAPH_RECENCY_HOURS": 24,
    "SKILLGRAPH_RESPONSE_BACKLOG": 64,  # responses waiting for their page's work, at most (docs/settings.md)
    # every URL accounted for (issue 11; docs/build.md)
    "SKILLGRAPH_ALLOWED_DOMAINS": [],
    "SKILLGRAPH_ALLOW_SHRINK": False,
    # dedup, dual write, incremental recrawl (issue 5; docs/pipelines.md)
    "SKILLGRAPH_DEDUP_ENABLED": True,
    "SKILLGRAPH_QUEUE_ENABLED": True,
    "SKILLGRAPH_CONDITIONAL_ENABLED": True,
    "SKILLGRAPH_STATE_PATH": ".scrapy/skillgraph/state.sqlite3",
    "SKILLGRAPH_REDIS_RETRY_SECONDS": 5.0,
    "SKILLGRAPH_SSRF_ENABLED": True,
    "SKILLGRAPH_SSRF_ALLOWLIST": [],
    # politeness and proxies (issue 7; docs/safety.md)
    "SKILLGRAPH_POLITENESS_ENABLED": True,
    "SKILLGRAPH_POLITENESS_MAX_CRAWL_DELAY": 60.0,
    "SKILLGRAPH_POLITENESS_MAX_RETRY_AFTER": 120.0,
    "SKILLGRAPH_PROXY_URL": None,
    "SKILLGRAPH_PROXY_FAIL_OPEN": True,
    "SKILLGRAPH_LLMS_FULL_MIN_CHARS": 2000,
    "SKILLGRAPH_LLMS_MAX_SECTIONS": 400,
    "SKILLGRAPH_LLMS_FILE_BYTES": 49152,
    "SKILLGRAPH_LLMS_INCLUDE_OPTIONAL": True,
    "SKILLGRAPH_SITEMAP_MAX_FILES": 200,
    "SKILLGRAPH_SITEMAP_MAX_URLS": 100_000,
    "SKILLGRAPH_CONTACT_URL": "https://github.com/skillgraph/skillgraph",
    "SKILLGRAPH_STATS_FILE": None,
    # progress line and end-of-crawl summary (issue 14; docs/settings.md)
    "SKILLGRAPH_PROGRESS_ENABLED": True,
    "SKILLGRAPH_PROGRESS_INTERVAL": 5.0,
    "SKILLGRAPH_SUMMARY_FORMAT": "text",
    # quality gates (issue 4; docs/quality.md)
    "SKILLGRAPH_QUALITY_ENABLED": True,
    "SKILLGRAPH_QUALITY_THRESHOLD": 0.5,
    "SKILLGRAPH_PAGE_WORKERS": -1,
    "SKILLGRAPH_GC_FREEZE_ENABLED": True,  # start-up's objects out of the garbage collector's walks
    # tier ladder and render (skillgraph/tiers, skillgraph/render; docs/rendering.md)
    "SKILLGRAPH_TIERS_NEGOTIATE": True,
    "SKILLGRAPH_RENDER_ENABLED": True,
    "SKILLGRAPH_RENDER_BACKEND": "playwright",
    "SKILLGRAPH_RENDER_BROWSER": "/usr/bin/chromium",
    "SKILLGRAPH_RENDER_TIMEOUT": 20.0,
    "SKILLGRAPH_RENDER_WAIT_CHARS": 200,
    "SKILLGRAPH_RENDER_MAX_PAGES_OPEN": 4,
    "SKILLGRAPH_SPLASH_URL": "",
    # domain spiders and the batch runner (issue 6; docs/spiders.md, docs/batch.md)
    "SKILLGRAPH_MEDIAWIKI_APLIMIT": "max",
    "SKILLGRAPH_BATCH_JOBS": 4,
    "SKILLGRAPH_BATCH_GRACE": 30.0,
    "SKILLGRAPH_BATCH_KILL_WAIT": 10.0,
    "SKILLGRAPH_BATCH_DETECT_TIMEOUT": 60.0,
    "SKILLGRAPH_BATCH_PROGRESS_INTERVAL": 10.0,
    "SKILLGRAPH_BATCH_REPORT": "",
    # knowledge store and store workers (scrapy worker, scrapy search; docs/store.md)
    "SKILLGRAPH_STORE_EMBEDDER": "auto",  # the neural model when installed, else the hashing embedder
    "SKILLGRAPH_STORE_EMBED_DIM": 1024,
    "SKILLGRAPH_STORE_EMBED_MAX_TOKENS": 64,
    "SKILLGRAPH_STORE_EMBED_STATIC_WEIGHT": 1.0,
    "SKILLGRAPH_STORE_MODEL_CACHE": None,  # None: $XDG_CACHE_HOME/skillgraph
    "SKILLGRAPH_STORE_EMBED_THREADS": 0,
    "SKILLGRAPH_STORE_EMBED_BATCH": 32,
    "SKILLGRAPH_STORE_CHUNK_CHARS": 1500,
    "SKILLGRAPH_STORE_CHUNK_OVERLAP": 0,
    "SKILLGRAPH_STORE_SEARCH_CANDIDATES": 50,
    "SKILLGRAPH_STORE_SEMANTIC_WEIGHT": None,  # None: the embedder's own (measured) weight
    "SKILLGRAPH_STORE_MIN_RELEVANCE": None,  # None: the embedder's own relevance floor
    "SKILLGRAPH_STORE_LEXICAL_WEIGHT": None,  # None: the embedder's own (measured) weight of BM25
    "SKILLGRAPH_WORKER_CLAIM_TIMEOUT": 300.0,
    "SKILLGRAPH_WORKER_MAX_ATTEMPTS": 3,
    "SKILLGRAPH_WORKER_BACKOFF_MAX": 30.0,
    # distributed mode: shared scrapy-redis frontier (skillgraph/distributed; docs/distributed.md)
    "SKILLGRAPH_DISTRIBUTED_ENABLED": True,
    "SKILLGRAPH_DISTRIBUTED_CONNECT_TIMEOUT": 5.0,  # Redis silent this long at start: a local crawl
    "SKILLGRAPH_DISTRIBUTED_WORKER_TIMEOUT": 30.0,
    "SKILLGRAPH_DISTRIBUTED_POLL_INTERVAL": 0.5,
    "SKILLGRAPH_DISTRIBUTED_SHARED_DETECTION": True,
    "SKILLGRAPH_DISTRIBUTED_DETECT_TIMEOUT": 30.0,
    "SKILLGRAPH_DISTRIBUTED_PROFILE_TTL": 86400,
    # one graph out of a fleet: workers hand their pages to Redis, the last one out assembles (docs/distributed.md)
    "SKILLGRAPH_ASSEMBLY_ENABLED": True,
    "SKILLGRAPH_ASSEMBLY_LOCK_TIMEOUT": 120.0,
    # fleet-wide limits of a distributed build: page budget, content dedup, politeness (docs/distributed.md)
    "SKILLGRAPH_FLEET_ENABLED": True,
    "SKILLGRAPH_FLEET_TTL": 86400,
    "SKILLGRAPH_DISTRIBUTED_RECONNECT_TIMEOUT": 300.0,  # Redis lost mid-crawl this long: the worker exits 1
    "SKILLGRAPH_DISTRIBUTED_RECONNECT_BACKOFF_MAX": 10.0,
}

#: Scrapy settings whose defaults skillgraph makes polite and safe.
POLITE: dict[str, object] = {
    "ROBOTSTXT_OBEY": True,
    # At most 2 requests in flight per host, spaced by AutoThrottle: the delay follows the host's latency
    # (one request in flight on average), never below DOWNLOAD_DELAY, raised by a robots.txt Crawl-delay.
    # A host answering in 100 ms gets 4 requests/s: 400 pages in ~2 of SKILLGRAPH_CRAWL_TIMEOUT's 4 minutes.
    "DOWNLOAD_DELAY": 0.25,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
    "AUTOTHROTTLE_ENABLED": True,
    "AUTOTHROTTLE_START_DELAY": 0.5,
    "AUTOTHROTTLE_MAX_DELAY": 30.0,
    "AUTOTHROTTLE_TARGET_CONCURRENCY": 1.0,
    "DOWNLOAD_TIMEOUT": 30,
    "DOWNLOAD_MAXSIZE": 10 * 1024 * 1024,
    "DOWNLOAD_WARNSIZE": 5 * 1024 * 1024,
    "REDIRECT_MAX_TIMES": 10,
    "DEPTH_LIMIT": 20,
    # Breadth first in the site's own order (index links, sitemap order): a bound keeps the top of the site.
    "DEPTH_PRIORITY": 1,
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
    # Waiting requests held as bytes, as JOBDIR stores them: ~0.5 kB each, not ~3.4 kB (skillgraph/build/queues.py).
    "SCHEDULER_MEMORY_QUEUE": "skillgraph.build.queues.CompactFifoMemoryQueue",
    # A page yields one document: Scrapy's 100 item slots per response only cost 100 asyncio tasks a page.
    "CONCURRENT_ITEMS": 8,
    # Responses waiting for the page pool (downloaded faster than two cores evaluate them) hold their body, its
    # text and the pool's answer: at most 16 MB of bodies, and at most SKILLGRAPH_RESPONSE_BACKLOG responses
    # whatever their size (skillgraph/extensions/response_backlog.py: a 2.5 MB page no longer idles the pool).
    "SCRAPER_SLOT_MAX_ACTIVE_SIZE": 16 * 1024 * 1024,
    "TELNETCONSOLE_ENABLED": False,
    # Scrapy 2.19's remote-control extension serves code execution over HTTP: off.
    "REMOTE_CONTROL_ENABLED": False,
    # issue 7: only http(s) is fetched; URLs strangers wrote never reach local files, data: or ftp/s3.
    "DOWNLOAD_HANDLERS": {"file": None, "data": None, "ftp": None, "s3": None},
    "COOKIES_ENABLED": False,
    # Block pages come as 403/429/503 too: they reach the tier ladder to be examined and recorded.
    "HTTPERROR_ALLOWED_CODES": [403, 429, 503],
}

DOWNLOADER_MIDDLEWARES: dict[str, int | None] = {
    # In priority order; responses pass through them in reverse.
    "skillgraph.middlewares.budget.PageBudgetMiddleware": 110,  # no page fetched past the bound (after robots)
    "skillgraph.middlewares.recency.RecencyMiddleware": 120,  # skip recently scraped pages, after robots (100)
    "skillgraph.extensions.crawl_timeout.DeadlineMiddleware": 360,  # no download outlives the crawl timeout
    "skillgraph.tiers.TierErrorMiddleware": 540,  # failed tier requests reach the ladder (before retry 550)
    "skillgraph.middlewares.politeness.PolitenessMiddleware": 560,  # sees 429/503 Retry-After before Retry does
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "skillgraph.middlewares.metarefresh.HeadMetaRefreshMiddleware": 580,  # the same, no body decoded without one
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
    "skillgraph.safety.limits.BoundedHttpCompressionMiddleware": 590,  # the same, plus a decompression-bomb stat
    "skillgraph.safety.limits.RedirectLimitMiddleware": 605,  # counts the hop Redirect (600) drops
    "skillgraph.middlewares.conditional.ConditionalMiddleware": 650,  # after redirects: each hop revalidates
    "skillgraph.middlewares.proxy.ProxyMiddleware": 740,  # SKILLGRAPH_PROXY_URL and fail-open, before HttpProxy
    "skillgraph.distributed.politeness.FleetPolitenessMiddleware": 945,  # REDIS_URL: one host delay for the fleet
    "skillgraph.middlewares.ssrf.SSRFMiddleware": 950,  # last: sees the proxy and every redirect hop
}

ITEM_PIPELINES: dict[str, int] = {
    "skillgraph.pipelines.quality.QualityGatePipeline": 300,  # issue 4: block pages and thin pages never written
    "skillgraph.pipelines.page_budget.PageBudgetPipeline": 600,
    "skillgraph.pipelines.dedup.ContentDedupPipeline": 700,
    "skillgraph.pipelines.dual_write.DualWritePipeline": 800,
    "skillgraph.pipelines.graph.GraphWriterPipeline": 900,
}

SPIDER_MIDDLEWARES: dict[str, int] = {
    "skillgraph.middlewares.resume.ResumeJournal": 50,  # JOBDIR runs resume into a complete graph
    "skillgraph.middlewares.page_errors.PageErrors": 60,  # a page whose evaluation raised is skipped, not lost
}

#: Scrapy components whose switch is off (POLITE, unless a user turns it on): left out of Scrapy's
#: ``*_BASE`` dict, so not even imported. The remote control's aiohttp and platformdirs cost every start 230 ms, the
#: cookie middleware's public-suffix library 80 ms.
SWITCHED_OFF: dict[str, tuple[str, str]] = {
    "COOKIES_ENABLED": ("DOWNLOADER_MIDDLEWARES", "scrapy.downloadermiddlewares.cookies.CookiesMiddleware"),
    "REMOTE_CONTROL_ENABLED": ("EXTENSIONS", "scrapy.extensions.remote_control.RemoteControl"),
    "TELNETCONSOLE_ENABLED": ("EXTENSIONS", "scrapy.extensions.telnet.TelnetConsole"),
}

EXTENSIONS: dict[str, int] = {
    "skillgraph.extensions.download_errors.DownloadErrorLines": 50,  # a failed robots.txt: one line, traceback at DEBUG
    "skillgraph.extensions.gc_freeze.GcFreeze": 60,  # once the engine runs: start-up's objects left alone by the GC
    "skillgraph.extensions.response_backlog.ResponseBacklog": 70,  # waiting responses bounded in number too
    "skillgraph.render.check.RenderCheck": 100,  # a missing browser fails the crawl at start
    "skillgraph.extensions.crawl_timeout.CrawlTimeout": 500,
    "skillgraph.extensions.stats_file.StatsFile": 900,
    "skillgraph.extensions.progress.ProgressLine": 950,  # a progress line every SKILLGRAPH_PROGRESS_INTERVAL
    "skillgraph.extensions.summary.BuildSummary": 960,  # how the build ended, on stdout (SKILLGRAPH_SUMMARY_FORMAT)
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
            ("SPIDER_MIDDLEWARES", SPIDER_MIDDLEWARES),
            ("EXTENSIONS", EXTENSIONS),
        ):
            for path, priority in components.items():
                settings[setting].set(path, priority, "addon")
        for switch, (setting, path) in SWITCHED_OFF.items():
            base = settings[f"{setting}_BASE"]
            # Out of Scrapy's own dict: a component named anywhere is imported to be compared, even with None.
            if not settings.getbool(switch) and path in base and path not in settings[setting]:
                del base[path]
        configure_render(settings)  # the render backend's download handler or middlewares
        configure_socks(settings)  # issue 7: the http(s) handler, SOCKS5-capable (after render's choice)
        configure_distributed(settings)  # REDIS_URL: the shared scrapy-redis frontier
