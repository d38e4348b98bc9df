"""``scrapy replay [SPIDER ...]``: queue every disk item the store has not had yet.

Every document a crawl writes is on disk (``items/<spider>/<sha256>.json``),
whether or not Redis took it: Redis may have been down mid-crawl (the dual
write then leaves a ``pending/<sha256>`` marker), unreachable at start (the
crawl ran locally), or not configured at all when the crawl ran. So replay does
not trust markers alone: it pushes **every disk item whose content hash Redis
does not hold** (``skillgraph:content_hash:<url>`` differs from the item's
``sha256``), with the dual write's atomic script (RPUSH + hash, skipped when
the hash is already recorded), and removes the markers of the items it
settled. Each document is queued once; a second replay pushes nothing.

* A URL with several items on disk (the page changed between crawls) is
  replayed with its newest one (``fetched_at``); the older ones are
  ``superseded``, never pushed: pushing both would make each replay undo the
  last one's hash.
* Hashes are read with ``MGET`` and documents pushed in pipelined batches of
  ``BATCH``; only the candidates' documents are read a second time.
* A marker whose document is not on disk is removed (``missing``); an item that
  cannot be read, or whose ``sha256`` is not its file name, is left alone
  (``unreadable``, a warning).

No crawler runs, so a plain (blocking) redis-py client is used.
Prints one JSON summary line per spider; Redis unreachable: one line on
stderr, exit 1.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from skillgraph.build.state import HASH_PREFIX, QUEUE_KEY
from skillgraph.distributed import redis_location
from skillgraph.distributed.connection import refusal, refusal_sentence
from skillgraph.graph.names import GraphNameError, check_graph_name
from skillgraph.pipelines.dual_write import PUSH_SCRIPT, ItemStore

logger = logging.getLogger(__name__)

BATCH = 200
COUNTS = ("pushed", "already_queued", "superseded", "missing", "unreadable")


@dataclass(frozen=True)
class DiskItem:
    sha: str
    url: str
    fetched_at: str


def push_sync(redis: Any, doc: dict[str, Any]) -> bool:
    """The blocking twin of :func:`skillgraph.pipelines.dual_write.push_document`."""
    script = redis.register_script(PUSH_SCRIPT)
    payload = json.dumps(doc, ensure_ascii=False)
    return bool(script(keys=[QUEUE_KEY, HASH_PREFIX + doc["url"]], args=[payload, doc["sha256"]]))


def disk_items(store: ItemStore, counts: dict[str, int]) -> Iterator[DiskItem]:
    """Every readable item of the spider (temp files of a write in progress start with a dot)."""
    if not store.dir.is_dir():
        return
    for path in sorted(store.dir.glob("[!.]*.json")):
        doc = store.load(path.stem)
        if not isinstance(doc, dict) or doc.get("sha256") != path.stem or not isinstance(doc.get("url"), str):
            counts["unreadable"] += 1
            logger.warning("Disk item %s is unreadable or not a document: not replayed", path)
            continue
        yield DiskItem(path.stem, doc["url"], str(doc.get("fetched_at") or ""))


def newest_per_url(items: Iterator[DiskItem], counts: dict[str, int]) -> tuple[list[DiskItem], list[DiskItem]]:
    """(the newest item of each URL in fetch order, the older ones)."""
    newest: dict[str, DiskItem] = {}
    older: list[DiskItem] = []
    for item in items:
        kept = newest.get(item.url)
        if kept is None or (item.fetched_at, item.sha) > (kept.fetched_at, kept.sha):
            newest[item.url] = item
            if kept is not None:
                older.append(kept)
        else:
            older.append(item)
    counts["superseded"] += len(older)
    return sorted(newest.values(), key=lambda i: (i.fetched_at, i.url)), older


def replay(redis: Any, store: ItemStore) -> dict[str, int]:
    """Push the spider's disk items whose hash Redis does not hold; the counts of what happened."""
    counts = dict.fromkeys(COUNTS, 0)
    items, older = newest_per_url(disk_items(store, counts), counts)
    script = redis.register_script(PUSH_SCRIPT)
    for start in range(0, len(items), BATCH):
        batch = items[start:start + BATCH]
        held = redis.mget([HASH_PREFIX + item.url for item in batch])
        todo = [item for item, sha in zip(batch, held, strict=True)
                if (sha.decode() if isinstance(sha, bytes) else sha) != item.sha]
        counts["already_queued"] += len(batch) - len(todo)
        pipe = redis.pipeline(transaction=False)
        for item in todo:
            doc = store.load(item.sha)
            if doc is None:  # removed since the first read
                counts["unreadable"] += 1
                continue
            script(keys=[QUEUE_KEY, HASH_PREFIX + item.url], args=[json.dumps(doc, ensure_ascii=False), item.sha],
                   client=pipe)
        for pushed in pipe.execute():
            counts["pushed" if pushed else "already_queued"] += 1
        for item in batch:
            store.done(item.sha)
    for item in older:
        store.done(item.sha)
    on_disk = {item.sha for item in items} | {item.sha for item in older}
    for sha in store.pending():
        if sha not in on_disk and not store.path(sha).exists():
            counts["missing"] += 1  # a marker whose document never reached the disk: nothing to push
            logger.warning("Pending marker %s has no readable document; removed", store.marker(sha))
            store.done(sha)
    return counts


class Command(ScrapyCommand):
    requires_project = True

    def syntax(self) -> str:
        return "[SPIDER ...]"

    def short_desc(self) -> str:
        return "Push every disk item whose content hash Redis does not hold onto the Redis queue, each once"

    def run(self, args: list[str], opts: Any) -> None:
        import redis

        assert self.settings is not None
        url = self.settings.get("REDIS_URL")
        if not url:
            raise UsageError("REDIS_URL is not set: there is no queue to replay into")
        for name in args:  # a spider's name is a folder under SKILLGRAPH_ITEMS_DIR: one safe segment
            try:
                check_graph_name(name, "spider ")
            except GraphNameError as exc:
                raise UsageError(str(exc)) from exc
        root = Path(self.settings.get("SKILLGRAPH_ITEMS_DIR") or "items")
        spiders = args or (sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else [])
        client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=30)
        try:
            client.ping()
            for spider in spiders:
                counts = replay(client, ItemStore(root, spider))
                print(json.dumps({"spider": spider, **counts}))
        except (redis.RedisError, OSError) as exc:
            logger.debug("replay failed", exc_info=True)
            why = refusal_sentence(url, exc) if refusal(exc) else (
                f"Redis at {redis_location(url)} unreachable ({exc}); start it or fix REDIS_URL")
            print(f"scrapy replay: {why}, then run replay again (items stay on disk)", file=sys.stderr)
            self.exitcode = 1
        finally:
            client.close()
        sys.stdout.flush()
