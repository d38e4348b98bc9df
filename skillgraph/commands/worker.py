"""``scrapy worker [--burst] [--from-items DIR] [--reembed]``: a store worker (docs/store.md).

Claims documents from ``skillgraph:queue`` (``REDIS_URL`` required), chunks,
embeds and stores them in ``SKILLGRAPH_STORE_URL``, then completes them
(:mod:`skillgraph.store.worker`). ``--burst`` exits 0 once the queue is empty
and no stale claim is left to reap; without it the worker waits for
documents until SIGINT/SIGTERM, which let the current document finish (a
second signal stops at once; the claim is then reaped later). ``--from-items
DIR`` stores disk items (``DIR/<spider>/*.json``) without Redis: local mode
(idempotent: stored pages are skipped; of a page crawled more than once, only
its newest item is stored). ``--reembed`` re-embeds every stored
chunk with the configured embedder after a model change, then exits; until
then a store embedded by another model refuses to open (exit 2, saying so).

``--burst`` with Redis unreachable fails fast: one line on stderr, exit 1 (a
long-running worker waits and reconnects instead). Redis refusing the password
or ACL of ``REDIS_URL`` is not waited for by either: one line, exit 1. Redis is
named by ``host:port/db``, never by its URL (it may hold the password). A burst or local run whose
embedder fails stops with exit 1, its document left queued; a long-running
worker pauses and resumes by itself (the embedder health gate).

No crawl runs, so there is no crawler and no reactor: the worker is a plain
blocking loop, and its stats go to the log and to ``SKILLGRAPH_STATS_FILE``.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from argparse import ArgumentParser, Namespace
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import NotConfigured, UsageError
from scrapy.utils.log import configure_logging

from skillgraph.distributed import redis_location
from skillgraph.distributed.connection import refusal, refusal_sentence
from skillgraph.files import write_atomic

if TYPE_CHECKING:
    from skillgraph.store.worker import StoreWorker

logger = logging.getLogger(__name__)


@contextmanager
def stop_on_signals(worker: StoreWorker) -> Iterator[None]:
    """SIGINT/SIGTERM: finish the current document, then stop; a second one stops now."""
    received: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        if len(received) > 1:
            raise SystemExit(1)
        logger.info("Received %s: finishing the current document, then exiting (send it again to force)",
                    signal.Signals(signum).name)
        worker.request_stop()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def item_files(root: Path) -> list[Path]:
    if not root.is_dir():
        raise UsageError(f"--from-items: {root} is not a directory")
    return sorted(p for p in root.rglob("*.json") if not p.name.startswith("."))


def newest_items(paths: list[Path]) -> tuple[list[Path], int]:
    """Per URL, the disk item fetched last (``fetched_at``, then the file's mtime), and how many older ones
    were left out. Items are named by content hash, so a page crawled again after it changed leaves its
    older versions in ``items/``: storing them all would let an old one replace the new one. Files that
    are not documents are kept, for the worker to report."""
    newest: dict[str, tuple[tuple[str, int], Path]] = {}
    others: list[Path] = []
    for path in paths:
        try:
            doc = json.loads(path.read_bytes())
            url, key = doc["url"], (str(doc.get("fetched_at") or ""), path.stat().st_mtime_ns)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            others.append(path)
            continue
        if url not in newest or key > newest[url][0]:
            newest[url] = (key, path)
    chosen = sorted([*others, *(path for _, path in newest.values())])
    return chosen, len(paths) - len(chosen)


def write_stats(path: str, stats: dict[str, Any]) -> None:
    write_atomic(Path(path), json.dumps(stats, indent=2, sort_keys=True))


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--burst] [--from-items DIR] [--reembed]"

    def short_desc(self) -> str:
        return "Run a store worker: claim documents from Redis, chunk, embed, store"

    def add_options(self, parser: ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--burst", action="store_true", help="exit when the queue is empty")
        parser.add_argument("--from-items", metavar="DIR", default=None,
                            help="store disk items (DIR/<spider>/*.json) instead of the Redis queue; no Redis needed")
        parser.add_argument("--reembed", action="store_true",
                            help="re-embed every stored chunk with the configured embedder (after a model change)")

    def run(self, args: list[str], opts: Namespace) -> None:
        # imported here, not at the top: Scrapy imports every command module for any command, a crawl too
        from skillgraph.store.embed import describe, load_embedder
        from skillgraph.store.queue import ClaimQueue
        from skillgraph.store.sqlite import open_store
        from skillgraph.store.worker import BLOCK_SECONDS, StoreWorker, WorkerConfig

        if args:
            raise UsageError("scrapy worker takes no arguments")
        assert self.settings is not None
        settings = self.settings
        configure_logging(settings)
        redis_url = settings.get("REDIS_URL")
        if opts.reembed:
            self.exitcode = self.reembed()
            return
        if not opts.from_items and not redis_url:
            raise UsageError("REDIS_URL is not set: a store worker claims from the Redis queue "
                             "(or use --from-items DIR to store disk items locally)")
        try:
            embedder = load_embedder(settings)
            store = open_store(settings, embedder.name, embedder.dimension)
        except NotConfigured as exc:
            raise UsageError(str(exc)) from exc
        logger.info("Embedder: %s", describe(embedder))
        config = WorkerConfig.from_settings(settings)
        client = None
        if opts.from_items:
            worker = StoreWorker(store, embedder, config)
        else:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            client = redis.Redis.from_url(redis_url, socket_connect_timeout=2, socket_timeout=BLOCK_SECONDS + 10,
                                          retry=Retry(NoBackoff(), 0))
            try:
                client.ping()
            except (redis.RedisError, OSError) as exc:  # a refused password is not waited for, an outage may be
                if refusal(exc) or opts.burst:
                    store.close()
                    client.close()
                    why = refusal_sentence(redis_url, exc) if refusal(exc) else (
                        f"Redis at {redis_location(redis_url)} is unreachable ({exc}); start it, "
                        "or run without --burst to wait for it")
                    print(f"scrapy worker: {why}", file=sys.stderr)
                    self.exitcode = 1
                    return
            worker = StoreWorker(store, embedder, config, ClaimQueue(client))
        try:
            with stop_on_signals(worker):
                if opts.from_items:
                    paths, superseded = newest_items(item_files(Path(opts.from_items)))
                    if superseded:
                        worker.inc("superseded", superseded)
                        logger.info("Left out %d older version(s) of pages crawled again", superseded)
                    stats = worker.run_local(paths)
                    self.exitcode = 1 if worker.summary()["failed"] else 0
                else:
                    stats = worker.run(burst=opts.burst)
                if worker.embedder_down_since is not None:
                    print(f"scrapy worker: the embedder {embedder.name} failed; the document it was on is still "
                          "queued (see the log); fix the embedder and run again", file=sys.stderr)
                    self.exitcode = 1
        finally:
            store.close()
            if client is not None:
                client.close()
        if settings.get("SKILLGRAPH_STATS_FILE"):
            write_stats(settings["SKILLGRAPH_STATS_FILE"], dict(stats))

    def reembed(self) -> int:
        """``--reembed``: every chunk's vector again, with the configured embedder; 0 when done."""
        from skillgraph.store.embed import load_embedder
        from skillgraph.store.sqlite import open_store

        assert self.settings is not None
        try:
            embedder = load_embedder(self.settings)
            store = open_store(self.settings, embedder.name, embedder.dimension, must_exist=True,
                               check_embedder=False)
        except NotConfigured as exc:
            print(f"scrapy worker: {exc}", file=sys.stderr)
            return 1
        wanted = f"{embedder.name}/{embedder.dimension}"
        try:
            before = store.embedder_of()
            if before == wanted:
                print(f"scrapy worker: {store.path} is already embedded with {wanted}; nothing to do",
                      file=sys.stderr)
                return 0
            logger.info("Re-embedding %s: %s -> %s", store.path, before, wanted)
            done = store.reembed(embedder.embed, embedder.name, embedder.dimension,
                                 progress=lambda n, total: logger.info("Re-embedded %d/%d chunks", n, total))
        finally:
            store.close()
        print(f"scrapy worker: re-embedded {done} chunks of {store.path}: {before} -> {wanted}", file=sys.stderr)
        return 0
