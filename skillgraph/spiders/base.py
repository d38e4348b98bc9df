"""The base of every skillgraph spider: a declaration.

A domain spider declares a name, a start URL, a domain tag, and optionally a
scope and a strategy hint. What happens to it is not here: the strategy
middleware (:mod:`skillgraph.middlewares.strategy`, enabled by
:meth:`SkillgraphSpider.update_settings`) turns the start URL into the site's
strategy, and the page callbacks (:class:`skillgraph.page.callbacks.PageCallbacks`)
turn responses into documents, degrading tier by tier. Every site gets the
same strategy ladder, bounds and provenance.

Extraction runs in the callbacks, on the reactor thread, by measurement: it
costs about 8 ms of CPU per Python docs page (bench/extract_eval.py) and the
whole build crawls at 1.07x plain Scrapy's rate (bench/crawl.py). A thread
pool would add hand-offs, not throughput, for pure-Python work under the GIL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

from scrapy import Request, Spider

from skillgraph.graph.names import check_graph_name
from skillgraph.middlewares import strategy
from skillgraph.page.callbacks import PageCallbacks

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from skillgraph.strategy.profiler import SiteProfile


def rebase(url: str, base_url: str | None) -> str:
    """Point ``url`` at a mirror: ``base_url``'s origin, and its path when it has one."""
    if not base_url:
        return url
    base = urlsplit(base_url)
    if base.path not in ("", "/"):
        return base_url
    parts = urlsplit(url)
    return urlunsplit((base.scheme, base.netloc, parts.path, parts.query, ""))


class SkillgraphSpider(PageCallbacks, Spider):
    """Declare ``name``, ``start_url`` and ``domain``; optionally ``scope`` and ``strategy``."""

    start_url: ClassVar[str] = ""
    domain: ClassVar[str] = ""
    scope: ClassVar[str | None] = None
    strategy: ClassVar[str | None] = None  # force one of profiler.STRATEGIES

    def __init__(
        self,
        *args: Any,
        base_url: str | None = None,
        graph: str | None = None,
        scope: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.site_url = rebase(self.start_url, base_url)
        declared_scope = scope or type(self).scope
        self.site_scope = rebase(declared_scope, base_url) if declared_scope else None
        # Checked here, where every way of starting a crawl passes (scrapy crawl, scrapyd, a script):
        # the name becomes a folder under SKILLGRAPH_GRAPHS_DIR.
        self.graph_name = check_graph_name(graph or self.name, "-a graph=" if graph else "spider name ")

    @property
    def site_domain(self) -> str:
        """The documents' ``domain`` tag: the declared one, else the start URL's host."""
        return self.domain or (urlsplit(self.site_url).hostname or "")

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        # The whole dict at spider priority, as custom_settings does (an in-place entry does not survive).
        middlewares = {**dict(settings["SPIDER_MIDDLEWARES"] or {}), strategy.PATH: strategy.PRIORITY}
        settings.set("SPIDER_MIDDLEWARES", middlewares, "spider")

    async def start(self) -> AsyncIterator[Any]:
        """The start URL, without a callback: the strategy middleware makes it the site's strategy."""
        yield Request(self.site_url, dont_filter=True,
                      meta={"skillgraph_scope": self.site_scope, "skillgraph_strategy": self.strategy})

    def strategy_output(self, profile: SiteProfile) -> Iterator[Any]:
        """The strategy's first requests or items; a spider with its own enumeration overrides this."""
        yield from strategy.strategy_output(self, profile)

    def shared_state(self) -> dict[str, Any]:
        """What another worker needs, besides the profile, to parse this spider's requests (JSON-safe)."""
        return {}

    def adopt_shared_state(self, state: dict[str, Any]) -> None:
        """Take the detecting worker's :meth:`shared_state` (this worker follows its profile)."""
