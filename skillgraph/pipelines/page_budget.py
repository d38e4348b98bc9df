"""PageBudgetPipeline: admit each document once, within ``SKILLGRAPH_MAX_PAGES``.

"Will this document be written?" has one answer, the Build's admission rule
(:meth:`skillgraph.build.Build.admit`): a new page, the same URL again, the
same markdown under another URL (``/docs/`` and ``/docs/index.html``: one
file), or over the page bound. It is asked here, before the disk and Redis
writers, so a document the graph will not hold is neither stored nor queued
twice, and the verdict travels in ``item.meta["admission"]`` to the graph
writer, which never decides again.

The bound itself is enforced before fetching (``PageBudgetMiddleware``), so a
document over budget here is rare (a page let through after its wait ran out of
patience): it is dropped, and the crawl closed with reason ``max_pages``.

In distributed mode the rule is the fleet's (:mod:`skillgraph.distributed.admission`):
one page budget and one set of content hashes for every worker of the build. A
document whose content another worker admitted is recorded as a ``duplicate``
like a local one, then dropped (:class:`DuplicateElsewhere`): its document is the
other worker's, and the dual write's per-URL hash check would queue it again.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem

from skillgraph.build import Build
from skillgraph.distributed.admission import FleetAdmission
from skillgraph.items import sha256_text
from skillgraph.middlewares.budget import stop_at_max_pages
from skillgraph.urls import page_key

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class PageBudgetExhausted(DropItem):
    """The page bound was reached before this document.

    Logged at INFO, not Scrapy's WARNING per dropped item: reaching the bound is
    an expected end, already logged once as a warning (``build_truncated``).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, log_level="INFO")


class DuplicateElsewhere(DropItem):
    """Another worker of the distributed build admitted the same content: the document is theirs.

    The URL is already a ``duplicate`` skip of this build (as a local duplicate);
    logged at DEBUG like a local duplicate, not as Scrapy's WARNING per dropped item.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, log_level="DEBUG")


class PageBudgetPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.build = Build.of(crawler)
        self.fleet = FleetAdmission.of(crawler)  # None in local mode

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageBudgetPipeline:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        if "markdown" not in adapter.field_names():
            return item
        sha = adapter.get("sha256") or sha256_text(adapter.get("markdown") or "")
        adapter["sha256"] = sha
        url, corpus = str(adapter["url"]), adapter.get("tier") == "corpus"
        admitted = await self.fleet.admit(url, sha) if self.fleet is not None and not corpus else None
        verdict = admitted.verdict if admitted is not None else self.build.admit(url, sha, corpus=corpus)
        if admitted is not None and admitted.elsewhere:
            self.crawler.stats.inc_value("skillgraph/page_budget/not_counted_duplicate")
            raise DuplicateElsewhere(f"{url}: same content as {self.build.aliases.get(page_key(url))}, "
                                     "admitted by another worker")
        meta = adapter.get("meta")
        if isinstance(meta, dict):
            meta["admission"] = verdict
        if verdict in ("same-url", "same-content"):
            self.crawler.stats.inc_value("skillgraph/page_budget/not_counted_duplicate")
        elif verdict == "over-budget":
            self.crawler.stats.inc_value("skillgraph/page_budget/dropped")
            await stop_at_max_pages(self.crawler)
            raise PageBudgetExhausted(f"max_pages ({self.build.max_pages}) reached")
        return item
