"""ContentDedupPipeline: mark documents whose content has not changed since last stored.

The hash is the SHA-256 of the markdown the graph stores (after extraction and
the quality gates), never of the raw body: HTML carries volatile tokens (CSRF
nonces, build ids, timestamps) that change on every fetch while the page does
not. It is compared with the last *stored* hash of the URL
(``skillgraph:content_hash:<url>`` in Redis, or the local SQLite state), which
the dual-write pipeline records once a document is durably saved.

An unchanged document is not dropped: the new graph build needs it. It gets
``item.meta["unchanged"] = True``, which the dual-write pipeline respects (no
disk item, no queue push). Scrapy has no content-level dedup, hence this module.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import NotConfigured

from skillgraph.build.state import StateUnavailableError, get_state
from skillgraph.items import sha256_text

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def item_meta(adapter: ItemAdapter) -> dict[str, Any]:
    """The item's ``meta`` notes (created when the item type has the field and it is unset)."""
    meta = adapter.get("meta")
    if meta is None:
        meta = {}
        if "meta" in adapter.field_names():
            adapter["meta"] = meta
    return meta


class OrderedExit:
    """Items leave a stage in the order they entered it, while their awaits overlap.

    Items from one response (an llms-full corpus's sections) reach the pipelines
    in reading order; an await on Redis or a disk thread would let a later item
    overtake an earlier one, and the graph writer would list pages out of order.
    """

    def __init__(self) -> None:
        self.last: asyncio.Future[None] | None = None

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        previous, mine = self.last, asyncio.get_running_loop().create_future()
        self.last = mine
        try:
            yield
        finally:
            try:
                if previous is not None:
                    await previous
            finally:
                mine.set_result(None)


class ContentDedupPipeline:
    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("SKILLGRAPH_DEDUP_ENABLED", True):
            raise NotConfigured("SKILLGRAPH_DEDUP_ENABLED is off")
        self.crawler = crawler
        self.state = get_state(crawler)
        self.order = OrderedExit()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ContentDedupPipeline:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        async with self.order.turn():
            return await self._process(item)

    async def _process(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        sha = adapter.get("sha256") or sha256_text(adapter["markdown"])  # hashed once: the item's own hash
        adapter["sha256"] = sha
        try:
            stored = await self.state.content_hash(adapter["url"])
        except StateUnavailableError:
            self.crawler.stats.inc_value("skillgraph/dedup/unknown")
            return item
        stats = self.crawler.stats
        if stored == sha:
            item_meta(adapter)["unchanged"] = True
            stats.inc_value("skillgraph/dedup/unchanged")
        elif stored is None:
            stats.inc_value("skillgraph/dedup/new")
        else:
            stats.inc_value("skillgraph/dedup/changed")
        return item
