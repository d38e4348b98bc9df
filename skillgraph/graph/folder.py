"""GraphFolder: a graph's files on disk — a staging build, swapped in atomically.

Scrapy's feed exports write one file per crawl; a skill graph is a folder
whose readers must never see it half-built. So each build is written to
``graphs/.builds/<name>/<build-id>/`` and, once committed, ``graphs/<name>`` (a
symlink) is switched to it with ``os.replace``: readers see the old graph or
the new one, never a mix. A discarded build is removed and
``graphs/<name>.failed.json`` says why, beside the untouched live graph.

Page files are written on a worker thread (``asyncio.to_thread``): disk writes
never stall the reactor. Names are claimed on the reactor thread first, so the
order of pages and their file names stay deterministic.

Names are untrusted (:mod:`skillgraph.graph.names`): the graph's name is
checked again here, the build folder and the live link must resolve inside
the graphs folder, and every page file is one safe segment, unique even on a
file system that ignores case.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import shutil
import time
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Executor
from functools import partial
from pathlib import Path
from typing import Any

from skillgraph.files import Batch, DiskWriter, write_atomic, write_json_atomic, write_stream
from skillgraph.graph.links import LocalLinks, PageFile, rewrite_files
from skillgraph.graph.llms import write_graph_llms
from skillgraph.graph.names import UnsafePathError, ensure_inside, graph_path, is_file_name, unique_file_name
from skillgraph.urls import file_stem_for

logger = logging.getLogger(__name__)

KEEP_BUILDS = 2  # the live build and the one before it
RESERVED = frozenset({"llms.md", "sources.md", "llms-full.md"})
#: Fewer pages than this have their links rewritten in the crawl process (a worker round trip costs more).
PARALLEL_LINKS_MIN = 200
#: Chunks of pages handed to the workers (a few per worker, so one slow chunk does not hold the rest).
LINK_CHUNKS = 8


def _write_page(path: Path, markdown: str, batch: Batch) -> None:
    batch.write_atomic(path, markdown)


class GraphFolder:
    def __init__(self, graphs_dir: Path, name: str, writer: DiskWriter | None = None) -> None:
        self.graphs_dir = graphs_dir
        self.name = name
        self.writer = writer  # the crawl's disk writer thread (else a thread of asyncio's default executor)
        graph_path(graphs_dir, name)  # a name that is not one safe segment never becomes a folder
        build_id = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{os.getpid()}"
        builds = graphs_dir / ".builds" / name
        builds.mkdir(parents=True, exist_ok=True)
        ensure_inside(graphs_dir, builds, "build folder")  # ``.builds`` a symlink elsewhere: refused
        self.staging = builds / build_id
        self.staging.mkdir(exist_ok=False)
        self.taken: set[str] = set()  # case-folded: ``Foo.md`` and ``foo.md`` are one file on some disks

    @property
    def live(self) -> Path:
        return self.graphs_dir / self.name

    @property
    def failed_path(self) -> Path:
        return self.graphs_dir / f"{self.name}.failed.json"

    def claim(self, url: str, scope: str) -> str:
        """A free file name for ``url``'s page, claimed for this build."""
        return unique_file_name(file_stem_for(url, scope), self.taken, RESERVED)

    async def write(self, file_name: str, markdown: str) -> None:
        path = self._page_path(file_name)
        if self.writer is None:
            await asyncio.to_thread(write_atomic, path, markdown)
        else:
            await self.writer.run(partial(_write_page, path, markdown))

    def write_now(self, file_name: str, markdown: str) -> None:
        """Write a page file on this thread (the fleet's assembly runs on a thread of its own)."""
        write_atomic(self._page_path(file_name), markdown)

    def copy(self, source: Path, file_name: str) -> None:
        target = self._page_path(file_name)
        shutil.copyfile(source, target)
        os.chmod(target, 0o644)

    def _page_path(self, file_name: str) -> Path:
        """The staging path of a page file: one safe segment (a claimed name always is), else refused."""
        if not is_file_name(file_name):
            raise UnsafePathError(f"page file name {file_name!r} is not one safe segment: refused")
        return self.staging / file_name

    def link_pages(self, pages: list[dict[str, Any]], aliases: dict[str, str], old_files: dict[str, str],
                   executor: Executor | None = None, offsets: dict[str, bytes] | None = None,
               descriptions: dict[str, str] | None = None) -> int:
        """Point links between pages at their files (:mod:`skillgraph.graph.links`); returns how many.

        Runs once every page is known, so a link to a page written later is
        rewritten too. A file that changes gets its ``sha256`` recomputed:
        ``sources.json`` hashes the markdown as written. With an ``executor``
        (the crawl's page worker processes) and enough pages, chunks of pages
        are rewritten in parallel. ``offsets`` (file -> where its links start, noted by
        the page workers) lets a page be spliced, not scanned: 0.3 ms a page instead of 2.
        """
        links = LocalLinks(((p["url"], p["file"]) for p in pages), aliases, old_files)
        known = offsets or {}
        pairs: list[PageFile] = [(page["url"], page["file"], known[page["file"]], page["sha256"])
                                 if page["file"] in known else (page["url"], page["file"]) for page in pages]
        size = max(PARALLEL_LINKS_MIN // 2, -(-len(pairs) // LINK_CHUNKS))
        chunks = (pairs[i:i + size] for i in range(0, len(pairs), size))
        if executor is None or len(pairs) < PARALLEL_LINKS_MIN:
            results: Iterable[list[tuple[str, str, int]]] = (rewrite_files(self.staging, chunk, links)
                                                             for chunk in chunks)
        else:
            futures = deque(executor.submit(rewrite_files, self.staging.absolute(), chunk, links) for chunk in chunks)
            results = (futures.popleft().result() for _ in range(len(futures)))  # each chunk's answer dropped in turn
        by_file = {page["file"]: page for page in pages}
        total = 0
        for changed in results:  # a chunk at a time: never a (file, hash, count) for every page at once
            for file, sha256, count in changed:
                by_file[file]["sha256"] = sha256
                total += count
        return total

    def finish(self, pages: list[dict[str, Any]], titles: dict[str, str], aliases: dict[str, str],
               old_files: dict[str, str], summary: str | None, local_links: bool,
               executor: Executor | None = None, offsets: dict[str, bytes] | None = None,
               descriptions: dict[str, str] | None = None) -> int:
        """Every page is in: point links between pages at their files, then write ``llms.txt`` and ``llms-full.txt``.

        One path for the graph writer and for a fleet's assembly
        (:mod:`skillgraph.distributed.assembly`), so the same pages give the
        same files. Returns how many links were rewritten (0 with local links off).
        """
        total = self.link_pages(pages, aliases, old_files, executor, offsets) if local_links else 0
        write_graph_llms(self.staging, self.name, pages, summary, titles, descriptions)
        return total

    def commit(self, sources: dict[str, Any]) -> None:
        """Write ``sources.json`` (streamed: a page list is ~0.3 kB of JSON a page) and switch the live symlink."""
        encoder = json.JSONEncoder(indent=2, ensure_ascii=False)  # write_json_atomic's format
        write_stream(self.staging / "sources.json", itertools.chain(encoder.iterencode(sources), ["\n"]))
        link = self.live
        link.parent.mkdir(parents=True, exist_ok=True)
        if os.path.realpath(link.parent) != os.path.realpath(self.graphs_dir):
            raise UnsafePathError(f"the live link {link} is not directly in {self.graphs_dir}: refused")
        ensure_inside(self.graphs_dir, self.staging, "build folder")
        if link.exists() and not link.is_symlink():
            # A plain directory (made by hand or by an older layout): keep it as a build.
            os.replace(link, self.staging.parent / f"legacy-{int(time.time())}")
        tmp_link = link.with_name(f".{link.name}.{os.getpid()}.link")
        if tmp_link.is_symlink():
            tmp_link.unlink()
        tmp_link.symlink_to(os.path.relpath(self.staging, link.parent), target_is_directory=True)
        os.replace(tmp_link, link)
        if self.failed_path.exists():
            self.failed_path.unlink()
        self._prune()

    def _prune(self) -> None:
        live = self.live.resolve()
        for old in sorted(p for p in self.staging.parent.iterdir() if p.is_dir())[:-KEEP_BUILDS]:
            if old.resolve() != live:
                shutil.rmtree(old, ignore_errors=True)

    def discard(self, failure: dict[str, Any] | None = None) -> None:
        """Remove this build; with ``failure``, record it in ``<name>.failed.json`` (the live graph stays)."""
        shutil.rmtree(self.staging, ignore_errors=True)
        if failure is not None:
            self.graphs_dir.mkdir(parents=True, exist_ok=True)
            write_json_atomic(self.failed_path, failure)

