"""The graph writer's close on a fleet worker: hand the share over; the last worker out assembles.

A mixin of :class:`~skillgraph.pipelines.graph.GraphWriterPipeline`, apart so
that each module keeps one concern. In a fleet (distributed mode,
``SKILLGRAPH_ASSEMBLY_ENABLED``) the writer admitted and recorded pages as in
a local build, and they also went to the fleet's build in Redis
(:class:`skillgraph.distributed.share.BuildShare`). At close this worker's
truncation, carried-over pages and kept skips follow them, and then either the
worker leaves (others still crawl: exit 0, ``empty-share`` outcome, the page files
it kept in its staging folder removed) or, last out, it writes the one graph
(:func:`skillgraph.distributed.assembly.assemble_here`) and records the outcome
in the Build as the writer does for its own graph. When Redis cannot be reached
at close, nobody can assemble: the worker commits the graph of its own pages (it
wrote them to its staging folder too), as a local crawl.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from skillgraph.build import Build
    from skillgraph.distributed.share import BuildShare
    from skillgraph.graph_folder import GraphFolder

logger = logging.getLogger(__name__)


class FleetClose:
    """``_hand_over``: the fleet worker's end of a build (attributes and helpers are the writer's)."""

    crawler: Crawler
    build: Build
    share: BuildShare | None
    folder: GraphFolder | None
    pages: list[dict[str, Any]]
    finished: bool
    graphs_dir: Path
    allow_shrink: bool
    local_links: bool

    if TYPE_CHECKING:
        @property
        def name(self) -> str: ...

        def _mark_truncated(self, reason: str) -> None: ...

        def _carry_unreached(self) -> None: ...

        def _keep_previous_skips(self) -> None: ...

        def _finish(self, reason: str) -> str | None: ...

    async def _hand_over(self, reason: str, success: bool) -> str | None:
        """A fleet worker's close: its share goes to the fleet's build; the last worker out assembles the graph."""
        assert self.share is not None and self.folder is not None
        self.finished = True
        build = self.build
        self._mark_truncated(reason)
        if success:
            if build.truncation() is not None:
                self._carry_unreached()
            elif build.previous.skipped:
                self.share.kept_from_previous = {str(e["url"]) for e in build.previous.skipped
                                                 if not build.knows(str(e["url"]))}
                self._keep_previous_skips()
        if not await self.share.close(build):  # Redis lost: nobody can assemble now; this worker's pages are a graph
            await self.share.aclose()
            self.crawler.stats.set_value("skillgraph/assembly/local_graph", 1)
            logger.warning("Graph %s: the fleet's build is out of reach; this worker commits the graph of its own "
                           "pages, as a local crawl would", self.name)
            self.finished = False
            return self._finish(reason)
        self.folder.discard()  # the pages are in the fleet's build
        if not self.pages:  # a follower with nothing to do (an llms-full corpus is the leader's): not a failure
            self.crawler.stats.set_value("skillgraph/graph/empty_share", 1)
        # Imported here: a local crawl never loads the assembly (nor redis-py, 70 ms of every start).
        from skillgraph.distributed.assembly import Target, assemble_here

        target = Target(self.graphs_dir, self.name, build.previous, self.allow_shrink, self.local_links, reason)
        try:
            result = await assemble_here(self.crawler, self.share, target)
        finally:
            await self.share.aclose()
        if result.outcome == "committed":
            build.outcome, build.graph_path = "committed", result.path
            self.crawler.stats.set_value("skillgraph/graph/committed", 1)
            return "committed"
        if result.outcome == "failed":
            build.outcome, build.failure = "failed", result.why
            self.crawler.stats.set_value("skillgraph/graph/failed", result.why)
            return "failed"
        # handed over: the last worker out (or scrapy assemble) commits the graph
        build.outcome = "handed-over" if self.pages else "empty-share"
        return None
