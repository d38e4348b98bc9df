"""``scrapy assemble GRAPH``: write the complete graph of a distributed build from Redis.

The last worker out of a fleet assembles the graph itself
(:mod:`skillgraph.distributed.assembly`). When it could not — killed, its node
lost, Redis down at that moment — the workers' pages, skips and warnings wait
under ``<frontier>:build:*`` until their TTL; this command writes the graph
from them, anywhere that reaches Redis (``REDIS_URL``, and the same
``SKILLGRAPH_GRAPHS_DIR`` settings as a crawl), then deletes the build keys.

Exit 0 with one line (how many pages, where); exit 1 with one sentence when
there is nothing to assemble, workers still crawl the frontier, Redis is
unreachable or the assembly failed (the live graph is kept).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from skillgraph.distributed.connection import redis_location, refusal, refusal_sentence
from skillgraph.graph.names import GraphNameError, check_graph_name

if TYPE_CHECKING:
    import argparse

    from redis import Redis
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from skillgraph.distributed.assemblykeys import AssemblyKeys

logger = logging.getLogger(__name__)


class AssemblyError(Exception):
    """One sentence for stderr: why nothing was assembled."""


def find_build(client: Redis, graph: str) -> AssemblyKeys | None:
    """The build keys of ``graph``: frontier ``graph`` (a domain spider) or ``<spider>:graph`` (``docs``)."""
    from skillgraph.distributed.assemblykeys import AssemblyKeys  # here: every scrapy command imports this module

    frontiers = set()
    for suffix in ("pages", "shares"):
        for key in client.scan_iter(match=f"*:build:{suffix}", count=500):
            frontier = key.decode().removesuffix(f":build:{suffix}")
            if frontier == graph or frontier.endswith(":" + graph):
                frontiers.add(frontier)
    if len(frontiers) > 1:
        raise AssemblyError(f"several distributed builds are named {graph} ({', '.join(sorted(frontiers))}): "
                            "assemble them with their own Redis database")
    return AssemblyKeys.for_frontier(frontiers.pop()) if frontiers else None


class _Reader:
    """What :meth:`PreviousBuild.load` reads of a crawler (settings; a stat for an unreadable graph)."""

    def __init__(self, settings: BaseSettings) -> None:
        self.settings = settings
        self.stats = self

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        logger.debug("%s +%d", key, count)


def run_assembly(client: Redis, settings: BaseSettings, graph: str) -> str:
    """Assemble ``graph``; the line to print. Raises :class:`AssemblyError` with the sentence to print instead."""
    from skillgraph.distributed.assembly import Target, assemble, live_workers
    from skillgraph.graph.previous import PreviousBuild

    where = redis_location(str(settings.get("REDIS_URL")))
    client.ping()
    keys = find_build(client, graph)
    if keys is None:
        raise AssemblyError(f"nothing to assemble: Redis at {where} holds no distributed build of graph {graph} "
                            "(assembled already, expired, or never crawled with REDIS_URL)")
    frontier = keys.prefix.removesuffix(":build:")
    live = len(live_workers(client, frontier, settings.getfloat("SKILLGRAPH_DISTRIBUTED_WORKER_TIMEOUT", 30.0)))
    if live:
        raise AssemblyError(f"{live} worker(s) still crawl frontier {frontier}: the last one out assembles graph "
                            f"{graph}; run scrapy assemble once they have stopped")
    graphs_dir = Path(settings.get("SKILLGRAPH_GRAPHS_DIR") or "graphs")
    previous = PreviousBuild.load(cast("Crawler", _Reader(settings)), graph)
    target = Target(graphs_dir, graph, previous, settings.getbool("SKILLGRAPH_ALLOW_SHRINK"),
                    settings.getbool("SKILLGRAPH_GRAPH_LOCAL_LINKS", True), "assemble")
    holder = f"assemble:{socket.gethostname()}:{os.getpid()}"
    result = assemble(client, keys, target, holder, settings.getfloat("SKILLGRAPH_ASSEMBLY_LOCK_TIMEOUT", 120.0))
    if result.outcome == "committed":
        return f"assembled graph {graph}: {result.pages} pages in {result.path}"
    if result.outcome == "failed":
        raise AssemblyError(f"graph {graph} was not assembled: {result.why}; the previous graph (if any) is kept, "
                            f"see {graphs_dir / graph}.failed.json")
    raise AssemblyError(f"nothing to assemble: another process assembled graph {graph} while this one waited")


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "GRAPH"

    def short_desc(self) -> str:
        return "Write the complete graph of a distributed build from Redis (the last worker out does it too)"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        import redis

        if len(args) != 1:
            raise UsageError("give the graph's name: scrapy assemble GRAPH")
        try:
            check_graph_name(args[0])
        except GraphNameError as exc:
            raise UsageError(str(exc)) from exc
        assert self.settings is not None
        url = self.settings.get("REDIS_URL")
        if not url:
            raise UsageError("REDIS_URL is not set: a distributed build lives in Redis")
        client: Any = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=30)
        try:
            print(run_assembly(client, self.settings, args[0]), flush=True)
        except AssemblyError as exc:
            self._fail(str(exc))
        except (redis.RedisError, OSError) as exc:
            logger.debug("assemble failed", exc_info=True)
            why = refusal_sentence(url, exc) if refusal(exc) else (
                f"Redis at {redis_location(url)} unreachable ({exc}); start it or fix REDIS_URL")
            self._fail(f"{why}, then run scrapy assemble {args[0]} again (the build stays in Redis until its TTL)")
        finally:
            client.close()

    def _fail(self, sentence: str) -> None:
        print(f"scrapy assemble: {sentence}", file=sys.stderr, flush=True)
        self.exitcode = 1
