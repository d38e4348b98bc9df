"""``scrapy replay [SPIDER ...]``: push the documents left pending on disk onto the Redis queue.

The dual-write pipeline marks a document ``items/<spider>/pending/<sha256>``
before writing it and unmarks it once it is on ``skillgraph:queue``. Replay
pushes each marked document with the same atomic script as the crawl
(RPUSH + ``skillgraph:content_hash:<url>``, skipped when that hash is already
recorded), then removes the marker: a document whose hash Redis already records (pushed, but the marker
outlived it) is not pushed again, so running replay twice pushes nothing more.

No crawler runs, so a plain (blocking) redis-py client is used.
Prints one JSON summary line per spider.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from skillgraph.pipelines.dual_write import PUSH_SCRIPT, ItemStore
from skillgraph.state import HASH_PREFIX, QUEUE_KEY

logger = logging.getLogger(__name__)


def push_sync(redis: Any, doc: dict[str, Any]) -> bool:
    """The blocking twin of :func:`skillgraph.pipelines.dual_write.push_document`."""
    script = redis.register_script(PUSH_SCRIPT)
    payload = json.dumps(doc, ensure_ascii=False)
    return bool(script(keys=[QUEUE_KEY, HASH_PREFIX + doc["url"]], args=[payload, doc["sha256"]]))


def replay(redis: Any, store: ItemStore) -> dict[str, int]:
    counts = {"pushed": 0, "already_queued": 0, "missing": 0}
    for sha in store.pending():
        doc = store.load(sha)
        if doc is None or doc.get("sha256") != sha:
            counts["missing"] += 1  # a marker whose document never reached the disk: nothing to push
            logger.warning("Pending marker %s has no readable document; removed", store.marker(sha))
        elif push_sync(redis, doc):
            counts["pushed"] += 1
        else:
            counts["already_queued"] += 1
        store.done(sha)
    return counts


class Command(ScrapyCommand):
    requires_project = True

    def syntax(self) -> str:
        return "[SPIDER ...]"

    def short_desc(self) -> str:
        return "Push documents left pending on disk (Redis was down) onto the Redis queue, each once"

    def run(self, args: list[str], opts: Any) -> None:
        import redis

        assert self.settings is not None
        url = self.settings.get("REDIS_URL")
        if not url:
            raise UsageError("REDIS_URL is not set: there is no queue to replay into")
        root = Path(self.settings.get("SKILLGRAPH_ITEMS_DIR") or "items")
        spiders = args or (sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else [])
        client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=30)
        try:
            client.ping()
        except redis.RedisError as exc:
            print(json.dumps({"error": f"redis unreachable: {exc}"}))
            self.exitcode = 1
            return
        for spider in spiders:
            counts = replay(client, ItemStore(root, spider))
            print(json.dumps({"spider": spider, **counts}))
        client.close()
        sys.stdout.flush()
