"""This crawl's documents that an outage left pending on disk, pushed each once when Redis answers again.

The dual write marks a document pending when Redis does not take it. Leaving
every such document for ``scrapy replay`` meant a Redis restart mid-crawl left
the store without the pages written while it was down, until someone replayed
by hand. :class:`PendingDocuments` remembers them (in order) and pushes them
with the dual write's script as soon as Redis answers again; the script skips a
document whose hash is already recorded, so a push repeated after a lost reply
never queues it twice. Only this crawl's documents: older markers (a crawl
that ran with Redis down at start) are ``scrapy replay``'s, which picks the
newest document per URL.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from skillgraph.state import QUEUE_KEY, RedisState

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from skillgraph.pipelines.dual_write import ItemStore

logger = logging.getLogger("skillgraph.pipelines.dual_write")  # the dual write's log lines


class PendingDocuments:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.shas: dict[str, None] = {}  # an ordered set: pushed in the order they were written
        self.pushing = False

    def __len__(self) -> int:
        return len(self.shas)

    def add(self, sha: str) -> None:
        self.shas[sha] = None

    async def push(self, store: ItemStore, state: RedisState) -> bool:
        """Push them in order, each once; False when Redis failed again (the rest stay pending)."""
        from redis.exceptions import RedisError

        from skillgraph.pipelines.dual_write import push_document

        if self.pushing or not self.shas:
            return True
        self.pushing = True
        stats, pushed = self.crawler.stats, 0
        try:
            for sha in list(self.shas):
                doc = await asyncio.to_thread(store.load, sha)
                if doc is None:  # removed from disk meanwhile: nothing to push
                    stats.inc_value("skillgraph/dual_write/pending_missing")
                else:
                    try:
                        new = await push_document(state.redis, doc)
                    except (RedisError, OSError) as exc:
                        state.failed(exc)
                        return False
                    pushed += new
                    stats.inc_value("skillgraph/dual_write/pending_pushed" if new
                                    else "skillgraph/dual_write/already_queued")
                store.done(sha)
                del self.shas[sha]
        finally:
            self.pushing = False
        logger.info("Redis answers again: %d documents an outage left pending pushed to %s", pushed, QUEUE_KEY)
        return True
