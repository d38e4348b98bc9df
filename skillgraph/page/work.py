"""The CPU-heavy part of a page, as a pure function of the response's bytes: :func:`evaluate`.

Parse the page once, extract it, assess it against the quality gates, hash its
markdown, note what the graph's commit needs of it and read its links: ~20x what
fetching it costs. :class:`~skillgraph.page.pool.PagePool` runs it in worker
processes. This module and what it imports need no Scrapy and no Twisted, so a
worker starts from a small process (the fork server preloads only this module):
the decoding is w3lib's, as Scrapy's ``TextResponse.text``.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from lxml import etree
from w3lib.encoding import html_to_unicode
from w3lib.html import get_base_url

from skillgraph.items import sha256_text
from skillgraph.page.memtrim import release_after
from skillgraph.urls import join, link_place

if TYPE_CHECKING:
    from skillgraph.render.shell import Shell
    from skillgraph.tiers.attempt import Attempt
    from skillgraph.tiers.evaluate import PageNotes

_SKIPPED_SCHEMES = ("#", "mailto:", "javascript:", "tel:", "data:")
#: Every link's ``href``, as plain ``str`` (not lxml's "smart" strings that keep a reference to their element).
_HREFS = etree.XPath("//a/@href", smart_strings=False)
#: The extractor's parser (``collect_ids=False``: nothing looks elements up by id), reading UTF-8 bytes.
_UTF8_PARSER = etree.HTMLParser(collect_ids=False, encoding="utf-8")

#: Scrapy's ``scrapy.linkextractors.IGNORED_EXTENSIONS`` (2.19), copied so that a worker need not import
#: Scrapy; tests/test_pagework.py fails the day Scrapy's list differs.
SCRAPY_IGNORED_EXTENSIONS = frozenset([
    "7z", "7zip", "bz2", "rar", "tar", "tar.gz", "xz", "zip", "mng", "pct", "bmp", "gif", "jpg", "jpeg", "png",
    "pst", "psp", "tif", "tiff", "ai", "drw", "dxf", "eps", "ps", "svg", "cdr", "ico", "webp", "mp3", "wma",
    "ogg", "wav", "ra", "aac", "mid", "au", "aiff", "3gp", "asf", "asx", "avi", "mov", "mp4", "mpg", "qt", "rm",
    "swf", "wmv", "m4a", "m4v", "flv", "webm", "xls", "xlsm", "xlsx", "xltm", "xltx", "potm", "potx", "ppt",
    "pptm", "pptx", "pps", "doc", "docb", "docm", "docx", "dotm", "dotx", "odt", "ods", "odg", "odp", "css",
    "pdf", "exe", "bin", "rss", "dmg", "iso", "apk", "jar", "sh", "rb", "js", "hta", "bat", "cpl", "msi", "msp",
    "py"
])
#: File extensions of links that are never pages (archives, images, sources, books...): such a link, even under
#: the scope, is outside the graph's scope of documents, so it is counted with the out-of-scope links, never fetched.
NOT_PAGES = frozenset([*SCRAPY_IGNORED_EXTENSIONS, "txt", "py", "c", "h", "json", "xml", "gz", "bz2", "whl", "rst",
                       "tgz", "tbz2", "txz", "zst", "epub", "mobi", "deb", "rpm", "woff", "woff2", "ttf", "otf"])


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
    from skillgraph.extract.api import parse

    text = html_to_unicode(f"charset={encoding}", body)[1]
    # ``not text.isspace()``: ``text.strip()``'s truth without copying the page (it ends with a newline)
    if _is_utf8(encoding) and "\ufffd" not in text and text and not text.isspace():
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
    """The page's links: (in-scope page URLs, the rest), each once, in page order.

    The rest is what the build counts as out of scope: links off the scope, and links under it to
    files (:data:`NOT_PAGES`), which are not documents and were, before, neither followed nor counted.

    Not ``LinkExtractor``: on API reference pages with hundreds of links it cost
    five times the HTML parse (canonicalising every URL). Links are read from the
    tree already parsed, joined, stripped of fragments and placed by a memoised
    :func:`~skillgraph.urls.link_place`; the dupefilter still canonicalises the few that are new.
    The base is the page's ``<base href>`` as Scrapy's ``get_base_url`` reads it. A frameset's frames are
    its first links (Ant's manual: ``<frame src="toc.html">``; the 222 pages behind it were never learned of).
    A page names the same few pages hundreds of times under different anchors, so each
    fragment-free reference is joined and placed once a page (an ``href`` starting ``#`` has
    an empty one: skipped, as are ``mailto:`` and the like, which keep their prefix).
    """
    base = get_base_url(text[:4096], url, encoding)
    inside: dict[str, None] = {}
    outside: dict[str, None] = {}
    seen: set[str] = {""}  # references already read on this page ("": an href that is empty or an #anchor)
    hrefs = _HREFS(root)  # plain strings, gathered in C (no element proxy per anchor)
    frameset = root.find("frameset")  # a page of frames (old Javadoc, Ant's manual): each frame is a page it links
    if frameset is not None:
        hrefs = [src for src in (frame.get("src") for frame in frameset.iter("frame")) if src] + hrefs
    for href in hrefs:
        reference = href.strip().partition("#")[0]
        if reference in seen:
            continue
        seen.add(reference)
        if reference.startswith(_SKIPPED_SCHEMES):
            continue
        try:
            link = join(base, reference)  # page_key(join(base, href)), the fragment never joined
        except ValueError:  # not a URL ("http://[user@]host/path", a bad port): no page to follow
            continue
        if link in inside or link in outside:
            continue
        if link_place(link, scope, NOT_PAGES) == "page":
            inside[link] = None
        else:  # outside the scope, or a file under it (a .zip, a .pdf, a Show Source .txt): counted, not followed
            outside[link] = None
    return list(inside), list(outside)


