"""DualWritePipeline: every new document goes to disk first, then onto the Redis queue.

Scrapy's feed exports append to one file per crawl and know nothing of a
queue; store workers need each document once, even across a Redis outage. So:

1. ``items/<spider>/<sha256>.json`` is written atomically (temp file, fsync,
   ``os.replace``; in a thread, off the reactor). With a queue, a
   ``pending/<sha256>`` marker is created *before* it, so a document on disk
   is always either pushed or marked pending.
2. The document JSON is pushed with ``redis.asyncio`` together with
   ``skillgraph:content_hash:<url>`` in one atomic Lua script
   (:func:`push_document`, one round trip), then the marker is removed. A
   document whose hash is already recorded is not pushed again, so a retry
   after a lost reply, or ``scrapy replay``, never duplicates it.
3. When Redis is unreachable the crawl goes on: the marker stays, a warning is
   logged once and ``skillgraph/dual_write/pending`` counted. The documents this
   crawl left pending are pushed, each once, as soon as Redis answers again:
   when the distributed scheduler has reconnected (the
   :data:`~skillgraph.signals.redis_back` signal), when a later
   document's push succeeds, and at close. What is still pending then (Redis
   never came back) is for ``scrapy replay``.
4. When Redis did not answer at start (:func:`skillgraph.distributed.redis_at_start`,
   asked once per crawl at ``spider_opened``, before the first request, with the wait of
   ``SKILLGRAPH_DISTRIBUTED_CONNECT_TIMEOUT``),
   Redis is not tried at all during the crawl: documents are written and marked
   pending, and the one warning is that of the start.

Documents marked ``meta["unchanged"]`` by the dedup pipeline are skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import signals

from skillgraph.build.state import HASH_PREFIX, QUEUE_KEY, RedisState, StateUnavailableError, get_state
from skillgraph.distributed import redis_at_start
from skillgraph.files import Batch, disk_writer, write_atomic
from skillgraph.items import sha256_text
from skillgraph.pipelines.dedup import OrderedExit, item_meta
from skillgraph.signals import redis_back

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: ``json.dumps(doc, ensure_ascii=False)``'s encoder, built once rather than for every document.
_ITEM_JSON = json.JSONEncoder(ensure_ascii=False)

PUBLIC_FIELDS = ("url", "title", "markdown", "sha256", "fetched_at", "source", "domain", "strategy", "tier",
                 "quality")


class ItemStore:
    """``items/<spider>/<sha256>.json`` plus ``items/<spider>/pending/<sha256>`` markers."""

    def __init__(self, root: Path, spider: str) -> None:
        self.dir = root / spider
        self.pending_dir = self.dir / "pending"
        self.made = False  # self.dir made by this store

    def path(self, sha: str) -> Path:
        return self.dir / f"{sha}.json"

    def marker(self, sha: str) -> Path:
        return self.pending_dir / sha

    def save(self, doc: dict[str, Any], pending: bool, batch: Batch | None = None) -> bool:
        """Write the document unless it is already on disk; True when written (with ``batch``: once it is done).

        The folder is made once, not checked at every document (a ``mkdir`` a page); should it vanish
        meanwhile, the write that misses it makes it again.
        """
        path = self.path(doc["sha256"])
        if os.path.exists(path):
            return False
        if pending:  # before the document: a document on disk is always pushed or marked pending
            self.pending_dir.mkdir(parents=True, exist_ok=True)
            self.marker(doc["sha256"]).touch()
        if not self.made:
            self.dir.mkdir(parents=True, exist_ok=True)
            self.made = True
        text = _ITEM_JSON.encode(doc)  # json.dumps(doc, ensure_ascii=False), the encoder built once
        write = batch.write_atomic if batch is not None else write_atomic
        try:
            write(path, text, durable=True)
        except FileNotFoundError:  # the folder was removed under the crawl
            self.dir.mkdir(parents=True, exist_ok=True)
            write(path, text, durable=True)
        return True

    def is_pending(self, sha: str) -> bool:
        return self.marker(sha).exists()

    def done(self, sha: str) -> None:
        self.marker(sha).unlink(missing_ok=True)

    def pending(self) -> list[str]:
        if not self.pending_dir.is_dir():
            return []
        return sorted(p.name for p in self.pending_dir.iterdir() if not p.name.startswith("."))

    def load(self, sha: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.path(sha).read_text("utf-8"))
        except (OSError, ValueError):
            return None


#: RPUSH the document unless its hash is already recorded for the URL, and record it: one atomic step.
PUSH_SCRIPT = """
if redis.call('GET', KEYS[2]) == ARGV[2] then return 0 end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
return 1
"""


async def push_document(redis: Redis, doc: dict[str, Any]) -> bool:
    """Push the document and record its hash atomically (a Lua script); False when already recorded."""
    payload = json.dumps(doc, ensure_ascii=False)
    script = redis.register_script(PUSH_SCRIPT)
    return bool(await script(keys=[QUEUE_KEY, HASH_PREFIX + doc["url"]], args=[payload, doc["sha256"]]))


class PendingDocuments:
    """This crawl's documents an outage left pending on disk, pushed each once when Redis answers again.

    The dual write marks a document pending when Redis does not take it. Leaving
    every such document for ``scrapy replay`` meant a Redis restart mid-crawl left
    the store without the pages written while it was down, until someone replayed
    by hand. They are remembered (in order) and pushed with the dual write's script
    as soon as Redis answers again; the script skips a document whose hash is
    already recorded, so a push repeated after a lost reply never queues it twice.
    Only this crawl's documents: older markers (a crawl that ran with Redis down at
    start) are ``scrapy replay``'s, which picks the newest document per URL.
    """

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


class DualWritePipeline:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.root = Path(settings.get("SKILLGRAPH_ITEMS_DIR") or "items")
        self.state = get_state(crawler)
        self.queue = settings.getbool("SKILLGRAPH_QUEUE_ENABLED", True) and isinstance(self.state, RedisState)
        self.store: ItemStore | None = None
        self.warned = False
        self.offline: bool | None = None  # Redis unreachable at start (asked at spider_opened)
        self.order = OrderedExit()
        self.saving: set[str] = set()  # hashes being written or pushed
        self.pending = PendingDocuments(crawler)  # this crawl's documents an outage left pending
        self.writer = disk_writer(crawler)  # disk items written a batch at a time, made durable together

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DualWritePipeline:
        pipeline = cls(crawler)
        crawler.signals.connect(pipeline.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(pipeline.redis_back, signal=redis_back)
        return pipeline

    async def spider_opened(self) -> None:
        """Ask Redis before the first request (the engine awaits this), not at the first document."""
        if self.queue:
            await self.redis_answered_at_start()

    def open_spider(self) -> None:
        assert self.crawler.spider is not None
        self.store = ItemStore(self.root, self.crawler.spider.name)

    async def close_spider(self) -> None:
        """A last try for what an outage left pending; what stays is for ``scrapy replay`` (stat, warning)."""
        if not self.pending or not isinstance(self.state, RedisState):
            return
        await self.push_pending()  # one try even if the state marked Redis down a moment ago
        if self.pending and self.store is not None:
            self.crawler.stats.set_value("skillgraph/dual_write/pending_left", len(self.pending))
            logger.warning("%d documents of this crawl stay pending under %s (Redis unreachable at close): run "
                           "`scrapy replay %s` when it is back", len(self.pending), self.store.pending_dir,
                           self.crawler.spider.name if self.crawler.spider else "")

    async def redis_back(self) -> None:
        """The distributed scheduler reached Redis again after an outage: push what the outage left pending."""
        if isinstance(self.state, RedisState):
            self.state.down_until = 0.0  # the state (hashes, recency) may use Redis again at once, too
            self.state.recovered()
            # idle pooled connections may lead to the server that died: drop them, the next call connects afresh
            await self.state.redis.connection_pool.disconnect(inuse_connections=False)
        await self.push_pending()

    async def push_pending(self) -> None:
        """Push this crawl's pending documents (:class:`PendingDocuments`)."""
        if self.store is not None and isinstance(self.state, RedisState) and await self.pending.push(
                self.store, self.state):
            self.warned = False  # the next outage warns again

    async def process_item(self, item: Any) -> Any:
        async with self.order.turn():
            return await self._process(item)

    async def _process(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        stats = self.crawler.stats
        if item_meta(adapter).get("unchanged"):
            stats.inc_value("skillgraph/dual_write/skipped_unchanged")
            return item
        assert self.store is not None
        doc: dict[str, Any] = {name: adapter.get(name) for name in PUBLIC_FIELDS}
        doc["sha256"] = sha = doc.get("sha256") or sha256_text(doc["markdown"])
        if sha in self.saving:  # the same content under another URL, being saved right now
            stats.inc_value("skillgraph/dual_write/already_saved")
            return item
        self.saving.add(sha)
        try:
            await self._save(doc)
        except OSError:
            # The graph still gets the page; only its disk item (and so its queue entry) is missing.
            stats.inc_value("skillgraph/dual_write/disk_error")
            logger.error("Could not write the disk item of %s", doc["url"], exc_info=True)
        finally:
            self.saving.discard(sha)
        return item

    async def _save(self, doc: dict[str, Any]) -> None:
        assert self.store is not None
        stats = self.crawler.stats
        written = await self.writer.run(partial(self.store.save, doc, self.queue))
        pending = self.queue and self.store.is_pending(doc["sha256"])
        online = pending and await self.redis_answered_at_start()
        if written:
            stats.inc_value("skillgraph/dual_write/disk_written")
        elif not online:  # on disk, and pushed or (Redis down at start) pending already
            stats.inc_value("skillgraph/dual_write/already_saved")
        if not self.queue:
            with contextlib.suppress(StateUnavailableError):
                await self.state.set_content_hash(doc["url"], doc["sha256"])
        elif online:
            await self._push(doc)
        elif written and pending:
            stats.inc_value("skillgraph/dual_write/pending")

    async def redis_answered_at_start(self) -> bool:
        """Whether Redis answered when the crawl started (asked once, shared with the scheduler)."""
        if self.offline is None:
            self.offline = await redis_at_start(self.crawler) is not None
        return not self.offline

    async def _push(self, doc: dict[str, Any]) -> None:
        from redis.exceptions import RedisError

        assert isinstance(self.state, RedisState) and self.store is not None
        stats = self.crawler.stats
        if self.state.available():
            try:
                pushed = await push_document(self.state.redis, doc)
            except (RedisError, OSError) as exc:
                self.state.failed(exc)
            else:
                self.state.recovered()
                self.store.done(doc["sha256"])
                stats.inc_value("skillgraph/dual_write/pushed" if pushed else "skillgraph/dual_write/already_queued")
                await self.push_pending()  # Redis answers again: the outage's pending documents go too
                return
        self.pending.add(doc["sha256"])
        stats.inc_value("skillgraph/dual_write/pending")
        if not self.warned:
            self.warned = True
            logger.warning("Redis queue unreachable: documents stay pending under %s; run `scrapy replay %s`",
                           self.store.pending_dir, self.crawler.spider.name if self.crawler.spider else "")
