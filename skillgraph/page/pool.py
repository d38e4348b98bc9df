"""PageWork: the CPU-heavy part of a page, done once, in a pool of processes.

Parsing an HTML page, extracting it, assessing it against the quality gates,
hashing its markdown and reading its links cost ~20x what fetching it costs.
On the reactor thread they serialise the crawl onto one core. :func:`evaluate`
does all of it, once per page, as a pure function of the response's bytes, so
:class:`PagePool` can run it in worker processes (``SKILLGRAPH_PAGE_WORKERS``,
default one per core; ``0`` runs it in the reactor thread, the serial path).

What must stay ordered does: :class:`ArrivalOrder` hands results back in the order
the responses arrived, so the ledger and the writer see what the serial path shows them.
"""

from __future__ import annotations

import asyncio
import codecs
import gc
import logging
import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from lxml import etree
from scrapy.linkextractors import IGNORED_EXTENSIONS

from skillgraph.items import sha256_text
from skillgraph.page.memtrim import release_after
from skillgraph.urls import join, link_place

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from skillgraph.render import Shell
    from skillgraph.tiers.attempt import Attempt
    from skillgraph.tiers.evaluate import PageNotes

logger = logging.getLogger(__name__)

_POOLS: WeakKeyDictionary[Crawler, PagePool] = WeakKeyDictionary()
#: Pages evaluated in the crawl process before the pool starts: a one-page ``scrapy scrape`` or a small
#: site never pays for starting processes; a larger crawl switches to the pool as soon as it is up.
INLINE_PAGES = 8
_SKIPPED_SCHEMES = ("#", "mailto:", "javascript:", "tel:", "data:")
#: Every link's ``href``, as plain ``str`` (not lxml's "smart" strings that keep a reference to their element).
_HREFS = etree.XPath("//a/@href", smart_strings=False)
#: The extractor's parser (``collect_ids=False``: nothing looks elements up by id), reading UTF-8 bytes.
_UTF8_PARSER = etree.HTMLParser(collect_ids=False, encoding="utf-8")


#: File extensions of links that are never pages (archives, images, sources...).
NOT_PAGES = frozenset([*IGNORED_EXTENSIONS, "txt", "py", "c", "h", "json", "xml", "gz", "bz2", "whl", "rst"])


@dataclass
class PageJob:
    """One HTML (or rendered) response, as bytes: what a worker process needs to evaluate it."""

    tier: str  #: html | render
    url: str
    body: bytes
    encoding: str
    headers: dict[str, str]
    status: int
    title_hint: str  #: the title an llms.txt index gave the page ("" if none)
    threshold: float
    links_scope: str | None  #: read the page's links under this scope (None: the page is not followed)


@dataclass
class PageResult:
    """Everything the crawl needs of a page: the tier's attempt, its shell verdict, hash and links."""

    attempt: Attempt
    shell: Shell
    code_blocks: int
    sha256: str
    links: list[str] = field(default_factory=list)  #: in-scope page URLs, fragment-free, in page order
    outside: list[str] = field(default_factory=list)  #: links outside the scope (counted only)
    notes: PageNotes | None = None  #: what the graph's commit reads of the markdown (links, description)


def evaluate(job: PageJob) -> PageResult:
    """Parse, extract, assess, hash and read links of one page: pure, so it runs in any process.

    No Scrapy response is built: the body is decoded as Scrapy would (``html_to_unicode`` with the
    response's encoding) for the quality gates, and parsed from its bytes when they are UTF-8.
    """
    from skillgraph.tiers.evaluate import markup_attempt  # the tier ladder imports this module

    text, root = decode_and_parse(job.body, job.encoding)
    attempt, shell, code_blocks, notes = markup_attempt(job.tier, job.url, job.status, text, job.headers, root,
                                                        job.threshold, job.title_hint)
    attempt.headers = {}  # the crawl process has them: they do not travel back
    result = PageResult(attempt, shell, code_blocks, sha256_text(attempt.markdown), notes=notes)
    if job.links_scope is not None and attempt.status < 400 and root is not None:
        result.links, result.outside = read_links(job.url, text, root, job.links_scope, job.encoding)
    del root, text
    release_after(len(job.body))  # a big page's tree: its freed heap back to the system
    return result


def decode_and_parse(body: bytes, encoding: str) -> tuple[str, etree._Element | None]:
    """The page's text (decoded as Scrapy's ``TextResponse.text``) and its tree.

    libxml2 reads UTF-8 natively: a UTF-8 body is parsed from its bytes (a fifth
    less time than from the decoded text, which lxml encodes back). Any other
    encoding, or a body whose decoding needed replacement characters (libxml2
    would read the bad bytes its own way), is parsed from the text.
    """
    from w3lib.encoding import html_to_unicode

    from skillgraph.extract.api import parse

    text = html_to_unicode(f"charset={encoding}", body)[1]
    if _is_utf8(encoding) and "\ufffd" not in text and text.strip():
        try:
            return text, etree.fromstring(body, _UTF8_PARSER)
        except etree.XMLSyntaxError:
            return text, None
    return text, parse(text)


@lru_cache(maxsize=64)
def _is_utf8(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def read_links(url: str, text: str, root: etree._Element, scope: str,
               encoding: str = "utf-8") -> tuple[list[str], list[str]]:
    """The page's links: (in-scope page URLs, out-of-scope URLs), each once, in page order.

    Not ``LinkExtractor``: on API reference pages with hundreds of links it cost
    five times the HTML parse (canonicalising every URL). Links are read from the
    tree already parsed, joined, stripped of fragments and placed by a memoised
    :func:`~skillgraph.urls.link_place`; the dupefilter still canonicalises the few that are new.
    The base is the page's ``<base href>`` as Scrapy's ``get_base_url`` reads it.
    """
    from w3lib.html import get_base_url

    base = get_base_url(text[:4096], url, encoding)
    inside: dict[str, None] = {}
    outside: dict[str, None] = {}
    for href in _HREFS(root):  # plain strings, gathered in C (no element proxy per anchor)
        href = href.strip()
        if not href or href.startswith(_SKIPPED_SCHEMES):
            continue
        link = join(base, href.partition("#")[0])  # page_key(join(base, href)), the fragment never joined
        if link in inside or link in outside:
            continue
        place = link_place(link, scope, NOT_PAGES)
        if place == "outside":
            outside[link] = None
        elif place == "page":
            inside[link] = None
    return list(inside), list(outside)


def _start_worker() -> None:
    """A worker leaves Ctrl-C to the crawl, which finishes its pages and then stops the pool; the modules it
    started with are frozen out of the garbage collector's walks (as the crawl process does:
    :mod:`skillgraph.extensions.gc_freeze`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()


class ArrivalOrder:
    """Results back in the order their pages arrived, whatever order the pool finishes them in."""

    def __init__(self) -> None:
        self.issued = 0
        self.released = 0
        self.done: set[int] = set()
        self.waiters: dict[int, asyncio.Future[None]] = {}

    def ticket(self) -> int:
        self.issued += 1
        return self.issued - 1

    async def turn(self, ticket: int) -> None:
        """Wait until every earlier ticket was released."""
        if ticket > self.released:
            self.waiters[ticket] = asyncio.get_running_loop().create_future()
            await self.waiters[ticket]

    def release(self, ticket: int) -> None:
        self.done.add(ticket)
        while self.released in self.done:
            self.done.discard(self.released)
            self.released += 1
        waiter = self.waiters.pop(self.released, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class PagePool:
    """Runs :func:`evaluate` in worker processes (one per core by default), or inline when set to 0."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        workers = crawler.settings.getint("SKILLGRAPH_PAGE_WORKERS", -1)
        self.workers = (os.cpu_count() or 1) if workers < 0 else workers
        self.executor: ProcessPoolExecutor | None = None
        self.starting: asyncio.Future[None] | None = None
        self.evaluated = 0
        self.closed = False
        self.order = ArrivalOrder()
        from scrapy import signals

        crawler.signals.connect(self.shutdown, signals.engine_stopped)

    @classmethod
    def of(cls, crawler: Crawler) -> PagePool:
        pool = _POOLS.get(crawler)
        if pool is None:
            pool = _POOLS[crawler] = cls(crawler)
        return pool

    def _start(self) -> None:
        """Start the worker processes (in a thread: starting them blocks for about a second)."""
        # forkserver: workers start from a clean process, not a fork of the reactor and its threads
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["skillgraph.tiers", "skillgraph.page.pool"])
        executor = ProcessPoolExecutor(self.workers, mp_context=context, initializer=_start_worker)
        executor.submit(int).result()  # the processes are up
        if self.closed:
            executor.shutdown(wait=True)
            return
        self.executor = executor
        logger.info("Page work runs in %d worker processes (SKILLGRAPH_PAGE_WORKERS)", self.workers)
        if self.crawler.stats is not None:
            self.crawler.stats.set_value("skillgraph/pagework/workers", self.workers)

    def _started(self, starting: asyncio.Future[None]) -> None:
        if not starting.cancelled() and starting.exception() is not None:
            logger.warning("The page worker processes did not start (%s): page work stays in the crawl process",
                           starting.exception())
            self.workers = 0

    async def evaluate(self, response: Response, tier: str, threshold: float, links_scope: str | None) -> PageResult:
        """The page's result, handed back in the order the pages arrived."""
        from scrapy.http import TextResponse

        from skillgraph.tiers.evaluate import page_attempt, response_headers

        if not isinstance(response, TextResponse):  # nothing to parse: the ladder's own verdict, here
            return PageResult(*page_attempt(tier, response, threshold), "")
        job = PageJob(tier, response.url, response.body, response.encoding, response_headers(response),
                      response.status, response.meta.get("skillgraph_title", ""), threshold, links_scope)
        ticket = self.order.ticket()
        try:
            result = await self._run(job)
            result.attempt.headers = job.headers  # kept here, not sent back by the worker
            await self.order.turn(ticket)
            return result
        finally:
            self.order.release(ticket)

    async def _run(self, job: PageJob) -> PageResult:
        self.evaluated += 1
        if self.workers and self.starting is None and self.evaluated > INLINE_PAGES:
            self.starting = asyncio.ensure_future(asyncio.to_thread(self._start))
            self.starting.add_done_callback(self._started)
        executor = self.executor
        if executor is not None and self.workers:
            try:
                return await asyncio.wrap_future(executor.submit(evaluate, job))
            except BrokenProcessPool as exc:  # a worker died (killed, out of memory): go on in this process
                if self.workers:
                    logger.warning("A page worker process died (%s): page work goes on in the crawl process", exc)
                    self.workers = 0
                    if self.crawler.stats is not None:
                        self.crawler.stats.inc_value("skillgraph/pagework/pool_broken")
        return evaluate(job)

    def running_executor(self) -> ProcessPoolExecutor | None:
        """The worker processes if they are up, for other CPU-bound work of the crawl (the commit's links)."""
        return self.executor if self.workers else None

    def shutdown(self) -> None:
        self.closed = True
        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)
            self.executor = None
