"""A graph as an llms corpus: its ``llms.txt`` (table of contents) and ``llms-full.txt``.

DESIGN.md, "Output layout": every committed graph holds

* ``llms.txt`` in the shape of the llms.txt proposal: ``# name``, ``> summary``,
  then ``## section`` headings over ``- [title](file.md): description`` links, in
  the order of the pages given (site order). Sections are the first path segment
  of the page URLs under their common scope (``/library/json.html`` under
  ``/`` is in *Library*); pages at the scope itself, or a graph where every page
  is in one place, are listed under *Pages*. Every link is a file of the graph.
* ``llms-full.txt``: every page's markdown in the same order, each opened by
  front matter (``---``, ``url: <page URL>``, ``---``), so that crawling a served
  graph splits it back into its pages (the splitter's front-matter rule).

Nothing in Scrapy or the ecosystem writes llms.txt files; this is a pure function
of the pages and their files, called by the graph writer when a build commits.
Both files are written beside the pages, each to a temp file moved into place
with ``os.replace``, mode 0644.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, overload
from urllib.parse import quote, urlsplit

from skillgraph.files import write_stream
from skillgraph.markdown import HEADING, IN_FENCE, Line, headings, scan

logger = logging.getLogger(__name__)

ROOT_SECTION = "Pages"
DESCRIPTION_CHARS = 160
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")
#: A label line, not prose: ``**Source code:** [Lib/json/__init__.py](...)``.
_FIELD = re.compile(r"^(\*\*|__)[^*_]{1,40}:(\*\*|__)")
#: A mail address in a line (as a ``mailto:`` link or as text): a byline or a contact, never a description.
_CONTACT = re.compile(r"mailto:|[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
#: A word of a description: letters only (an apostrophe or hyphen inside), punctuation around it aside.
_WORD = re.compile(r"^[(\"'“‘]*([^\W\d_]{2,}(?:['’-][^\W\d_]+)*)[)\"'”’.,;:!?]*$")
#: A line of emphasis only ("*Part of the Stable ABI.*", "*Return value: New reference.*"): an annotation.
_ANNOTATION = re.compile(r"^(?:\*[^*\s][^*]*\*\s*)+$|^(?:_[^_\s][^_]*_\s*)+$")
#: Words a description line must have: 3 ("Memory allocation APIs"), 4 beside a number ("New in version 3.16."
#: and "Release 3.19.0 11 Apr 2022" are stamps, not descriptions).
MIN_DESCRIPTION_WORDS = 3
MIN_DESCRIPTION_WORDS_WITH_NUMBERS = 4
#: Terms of legal text, which opens many manuals' front pages (copyright lines, permission notices, warranty
#: disclaimers). A line with two different ones is legal text: what a page is about only when its title says
#: so (one alone is prose: "... free software available under the MIT License").
_LEGAL = re.compile(r"copyright|©|\(c\)\s|licen[cs]|permission is granted|permission to use|hereby granted|"
                    r"all rights reserved|redistribut|warrant|merchantab|disclaim|permitted provided|permission notice|"
                    r"received a copy|without fee|free software foundation|prior written|advertising or otherwise|"
                    r"contained in this notice", re.IGNORECASE)


def write_graph_llms(folder: Path, name: str, pages: list[dict[str, Any]], summary: str | None = None,
                     titles: dict[str, str] | None = None, descriptions: dict[str, str] | None = None) -> None:
    """Write ``llms.txt`` and ``llms-full.txt`` into ``folder`` for ``pages`` (``url``, ``file``, ``title``).

    ``titles`` (URL -> title), when given, replaces the pages' own ``title``; ``descriptions``
    (URL -> :func:`describe` of the page, done by the page workers from the scan they already had)
    spares the commit that scan.
    One page's markdown is in memory at a time (page files are read once for
    each of the two files, from the page cache): holding them all and
    building ``llms-full.txt`` as one string raised a 20,000-page build's
    peak RSS by 200 MB at commit (bench/memory.py ``--narrow``).
    """
    folder = Path(folder)
    present = []
    for page in pages:
        if (folder / str(page["file"])).is_file():
            present.append(page)
        else:
            logger.warning("llms.txt of graph %s: page file %s is missing; not listed", name, page["file"])
    texts = PageTexts(folder, present, titles, descriptions)
    urls = [str(page["url"]) for page in present]
    write_stream(folder / "llms.txt", llms_index_lines(name, texts, urls, summary, common_scope(urls)))
    write_stream(folder / "llms-full.txt", (("\n" if i else "") + llms_full([pair]) for i, pair in enumerate(texts)))


class PageTexts(Sequence[tuple[dict[str, Any], str]]):
    """``(page with its title, markdown)`` of a graph's pages, each file read when its pair is asked for."""

    def __init__(self, folder: Path, pages: list[dict[str, Any]], titles: dict[str, str] | None = None,
                 descriptions: dict[str, str] | None = None) -> None:
        self.folder, self.pages, self.titles, self.descriptions = folder, pages, titles, descriptions or {}

    def __len__(self) -> int:
        return len(self.pages)

    @overload
    def __getitem__(self, index: int) -> tuple[dict[str, Any], str]: ...

    @overload
    def __getitem__(self, index: slice) -> list[tuple[dict[str, Any], str]]: ...

    def __getitem__(self, index: int | slice) -> tuple[dict[str, Any], str] | list[tuple[dict[str, Any], str]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        page = self.page(index)
        return page, (self.folder / str(page["file"])).read_text("utf-8")

    def page(self, index: int) -> dict[str, Any]:
        """The page with its title and description, its file not read (``llms.txt`` needs it only without them)."""
        page = self.pages[index]
        if self.titles is not None:
            page = {**page, "title": self.titles.get(page["url"], "")}
        if page["url"] in self.descriptions:
            page = {**page, "description": self.descriptions[page["url"]]}
        return page

    def __iter__(self) -> Iterator[tuple[dict[str, Any], str]]:
        return (self[i] for i in range(len(self)))


def llms_index(name: str, pages: Iterable[tuple[dict[str, Any], str]], summary: str | None = None,
               scope: str | None = None) -> str:
    """The text of ``llms.txt`` for ``(page, markdown)`` pairs, in their order (``scope``: their common_scope)."""
    pairs = pages if isinstance(pages, Sequence) else list(pages)
    urls = [str(page["url"]) for page, _ in pairs]
    return "".join(llms_index_lines(name, pairs, urls, summary, common_scope(urls) if scope is None else scope))


def llms_index_lines(name: str, pages: Sequence[tuple[dict[str, Any], str]], urls: Sequence[str],
                     summary: str | None, scope: str) -> Iterator[str]:
    """``llms.txt`` a line at a time: ``urls`` (the pages' own) group the pages by section, then each
    page's pair is taken (its file read, with :class:`PageTexts`) when its line is written.

    Every line held until the end cost a 20,000-page commit 6 MB (bench/memory.py). A page whose
    title and description are known (the crawl's pages: :meth:`PageTexts.page`) is listed without
    reading its file: the commit read every page file twice, once for nothing (27 ms for 526 pages).
    """
    known = pages.page if isinstance(pages, PageTexts) else None
    groups: dict[str, list[int]] = {}
    for index, url in enumerate(urls):
        groups.setdefault(section_of(url, scope), []).append(index)
    if len(groups) == 1:
        groups = {ROOT_SECTION: next(iter(groups.values()))}
    if summary is None:
        where = f" from {scope}" if scope else ""
        summary = f"{len(urls)} page{'s' if len(urls) != 1 else ''} of documentation{where}, as markdown."
    yield f"# {_one_line(name)}\n\n> {_one_line(summary)}\n"
    for section, indices in groups.items():
        yield f"\n## {section}\n\n"
        for index in indices:
            page = known(index) if known is not None else None
            if page is None or not str(page.get("title") or "").strip() or "description" not in page:
                page, markdown = pages[index]
                title = (str(page.get("title") or "").strip() or markdown_title(markdown)
                         or Path(str(page["file"])).stem)
                description = page["description"] if "description" in page else describe(markdown, title)
            else:
                title, description = str(page["title"]).strip(), page["description"]
            link = f"- [{_escape(title)}]({quote(str(page['file']))})"
            yield f"{link}: {description}\n" if description else f"{link}\n"


def llms_full(pages: list[tuple[dict[str, Any], str]]) -> str:
    """Every page's markdown in order, each opened by ``---`` / ``url: <URL>`` / ``---`` front matter."""
    parts = []
    for page, markdown in pages:
        body = markdown.strip("\n")
        parts.append(f"---\nurl: {page['url']}\n---\n{body}\n" if body else f"---\nurl: {page['url']}\n---\n")
    return "\n".join(parts)  # a blank line before each front matter: never read as a setext underline


def common_scope(urls: Iterable[str]) -> str:
    """The deepest directory URL (ending in ``/``) holding every URL; '' when they span origins.

    One pass with one running prefix: a 20,000-page graph's commit no longer
    keeps a parsed URL and a segment list per page (9.8 MB, bench/memory.py).
    """
    origin: tuple[str, str] | None = None
    common: list[str] | None = None
    for url in urls:
        split = urlsplit(url)
        if origin is None:
            origin = split.scheme, split.netloc
        elif origin != (split.scheme, split.netloc):
            return ""
        segments = split.path.rsplit("/", 1)[0].split("/")  # directory segments, file name dropped
        if common is None:
            common = segments
            continue
        n = 0
        while n < min(len(common), len(segments)) and common[n] == segments[n]:
            n += 1
        del common[n:]
    if origin is None or common is None:
        return ""
    return f"{origin[0]}://{origin[1]}{'/'.join(common)}/"


def section_of(url: str, scope: str) -> str:
    """The section heading of ``url``: its first path segment under ``scope``, or :data:`ROOT_SECTION`."""
    path = url.split("#", 1)[0].split("?", 1)[0]
    rest = path[len(scope):] if scope and path.startswith(scope) else urlsplit(path).path.lstrip("/")
    if "/" not in rest:
        return ROOT_SECTION
    segment = rest.split("/", 1)[0]
    words = re.sub(r"[-_.]+", " ", segment).strip()
    return (words[:1].upper() + words[1:]) if words else ROOT_SECTION


def markdown_title(markdown: str) -> str:
    """The page's first H1 (in its first 4000 characters), outside code and containers."""
    return next((h.title for h in headings(markdown[:4000]) if h.level == 1 and h.depth == 0 and h.title), "")


def describe(markdown: str, title: str = "", lines: Iterable[Line] | None = None) -> str:
    """The page's first sentence-bearing paragraph line, plain, at most :data:`DESCRIPTION_CHARS` characters.

    ``lines`` is ``markdown``'s :func:`~skillgraph.markdown.scan` when done already.
    """
    read = iter(scan(markdown) if lines is None else lines)
    legal_page = bool(_LEGAL.search(title))
    for scanned in read:
        line = scanned.text.strip()
        if scanned.kind in IN_FENCE or scanned.kind == HEADING or not line \
                or line.startswith(("#", "|", ">", "---", "<", "!", "[", "- ", "* ", "+ ", "=")):
            continue
        if re.match(r"^\d+[.)]\s", line) or _FIELD.match(line):
            continue
        if _hard_break(line):  # a paragraph set line by line (a text file's, a poem's): its lines, not a "\"
            line = _broken_paragraph(line, scanned.kind, read)
        if _CONTACT.search(line):  # an author's byline ("Reference Team <team@lists.example.org>"), not the page
            continue
        text = _EMPHASIS.sub(r"\2", _LINK.sub(r"\1", line)).strip()
        if len(text) < 20 or text == title or _ANNOTATION.match(text) or not _prose(text) \
                or (not legal_page and _legal(text)):
            continue
        return _shorten(text)
    return ""


def _legal(text: str) -> bool:
    """Does ``text`` hold two different terms of legal text (:data:`_LEGAL`)?"""
    return len({term.lower()[:5] for term in _LEGAL.findall(text)}) >= 2


def _prose(text: str) -> bool:
    """Does ``text`` read as words about something, not a stamp (a version, a date, a URL, a name, a banner)?

    Words of letters for at least half of what is written, and at least :data:`MIN_DESCRIPTION_WORDS` of
    three letters or more (:data:`MIN_DESCRIPTION_WORDS_WITH_NUMBERS` beside a number): "Release 3.19.0 11
    Apr 2022", "New in version 3.16.", "https://sourceware.org/bzip2/", "Available Languages: en | fr" and
    "boost::units::cgs::cubic_centimetre" describe nothing.
    """
    tokens = text.split()
    words = [match.group(1) for match in map(_WORD.match, tokens) if match]
    least = MIN_DESCRIPTION_WORDS_WITH_NUMBERS if any(c.isdigit() for c in text) else MIN_DESCRIPTION_WORDS
    # a sentence has a word in lower case; names and banners have none ("Sun Microsystems, Inc.",
    # "Ada Reference Manual — Legal Information")
    return sum(len(word) >= 3 for word in words) >= least and 2 * len(words) >= len(tokens) \
        and any(word[:1].islower() for word in words)


def _hard_break(line: str) -> bool:
    """Does ``line`` end with a hard line break (a backslash that no other escapes)?"""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _broken_paragraph(first: str, kind: str, rest: Iterator[Line]) -> str:
    """``first`` and the lines after it in its paragraph, joined with spaces, up to a description's length."""
    parts = [first[:-1].rstrip()]
    size = len(parts[0])
    for scanned in rest:
        line = scanned.text.strip()
        if scanned.kind != kind or not line:
            break
        broken = _hard_break(line)
        parts.append(line[:-1].rstrip() if broken else line)
        size += len(parts[-1]) + 1
        if not broken or size > DESCRIPTION_CHARS:
            break
    return " ".join(parts)


def _shorten(text: str) -> str:
    text = _one_line(text)
    if len(text) <= DESCRIPTION_CHARS:
        return text
    cut = text[: DESCRIPTION_CHARS - 1].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + "…"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _escape(title: str) -> str:
    """A link text every llms.txt reader parses: brackets (which many readers cannot escape) become parentheses."""
    return _one_line(title).replace("[", "(").replace("]", ")")
