"""The structural self-check: does the markdown keep the structure of the page it came from?

The other gates judge the markdown alone (size, link density) and cannot see a
page whose code blocks became paragraphs, whose inline code became fenced
blocks, or whose headings vanished: every one of those pages still reads as
plenty of content. This check compares counts taken from the rendered element
(:class:`Structure`, filled by the extractor while it selects the content) with
the same counts read back from the markdown:

* code: at least half of the page's code blocks (``<pre>``, Doxygen
  ``div.fragment``, other code containers) must come out as fenced blocks;
* junk fences: no more than ``JUNK_ALLOWANCE`` fenced blocks beyond what the
  page has as code (inline code turned into fences is the typical damage);
* headings: at least half of the page's headings must be markdown headings;
* selection: the element must hold at least half of the page's code blocks and a
  third of its headings (chrome aside), or the content is elsewhere.

The extractor runs it on each candidate element (:mod:`skillgraph.extract.select`)
and re-extracts from the next one when it fails; the verdict travels with the
extraction so that the tier ladder can warn (``re-extracted``) or degrade the page
(``best-effort``). Pure and cheap: a few counts and one scan of the markdown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from skillgraph.markdown import FENCE_OPEN, HEADING, Line, scan
from skillgraph.quality.model import FAIL, PASS, WARN, Check

MIN_CODE_SHARE = 0.5  #: fenced blocks per code block of the page, at least
MIN_HEADING_SHARE = 0.5  #: markdown headings per heading of the page, at least
JUNK_ALLOWANCE = 2  #: fenced blocks beyond the page's code that are tolerated


@dataclass(frozen=True)
class Structure:
    """What the rendered element holds (chrome the renderer skips is not counted)."""

    code_blocks: int = 0  #: ``<pre>`` and code containers
    code_sources: int = 0  #: elements a fence may legitimately come from (code blocks, multi-line ``<code>``)
    headings: int = 0  #: h1-h6
    page_code_blocks: int = 0  #: code blocks of the whole page (chrome aside)
    page_headings: int = 0  #: headings of the whole page (chrome aside)


@dataclass(frozen=True)
class Found:
    """The same counts, read from markdown."""

    fences: int
    headings: int


#: The last scans made (markdown -> its lines), most recently used last; a page's markdown is scanned once.
_SCANS: dict[str, tuple[Line, ...]] = {}
SCANS_KEPT = 2


def markdown_lines(markdown: str) -> tuple[Line, ...]:
    """``scan(markdown)``, kept for the last pages: the self-check and the gates' text statistics read the same lines.

    The extractor checks the markdown it writes (final newline included, see
    :func:`skillgraph.extract.api.extract_tree`), so a page is scanned once, not twice;
    :func:`scanned` tells whether it was. Kept in a plain dict rather than ``lru_cache``
    because the gates must look a scan up without making one.
    """
    lines = _SCANS.pop(markdown, None)
    if lines is None:
        lines = tuple(scan(markdown))
        if len(_SCANS) >= SCANS_KEPT:
            del _SCANS[next(iter(_SCANS))]  # the least recently used
    _SCANS[markdown] = lines
    return lines


def scanned(markdown: str) -> tuple[Line, ...] | None:
    """The lines :func:`markdown_lines` kept for ``markdown``, or None (no scan is made)."""
    return _SCANS.get(markdown)


def forget_scans() -> None:
    """Drop the kept scans (a page's scan serves that page only)."""
    _SCANS.clear()


def read_markdown(markdown: str) -> Found:
    """Fenced blocks and non-empty headings (in quotes and list items too), as a markdown reader sees them."""
    fences = headings = 0
    for line in markdown_lines(markdown):
        if line.kind == FENCE_OPEN:
            fences += 1
        elif line.kind == HEADING and line.title:
            headings += 1
    return Found(fences, headings)


def structure_check(page: Structure, markdown: str, sources: Callable[[], int] | None = None) -> Check:
    """PASS, WARN (minor loss) or FAIL (the structure was lost: try another element).

    ``sources``, when given, counts the fence sources that ``page`` left out (reading every
    ``<code>`` of an API page is costly); it is called only when the markdown has more
    fences than the page has code blocks, the only case in which they matter.
    """
    found = read_markdown(markdown)
    problems: list[str] = []
    minor: list[str] = []
    if page.code_blocks:
        share = found.fences / page.code_blocks
        if share < MIN_CODE_SHARE:
            problems.append(f"{found.fences} fenced block(s) for {page.code_blocks} code block(s)")
        elif found.fences < page.code_blocks:
            minor.append(f"{found.fences}/{page.code_blocks} code blocks fenced")
    if found.fences - page.code_blocks > JUNK_ALLOWANCE:  # else no fence is junk, whatever the sources
        junk = found.fences - max(sources() if sources is not None else page.code_sources, page.code_blocks)
        if junk > JUNK_ALLOWANCE:
            problems.append(f"{junk} fenced block(s) that are not code on the page (inline code fenced?)")
    if page.headings >= 2 and found.headings < MIN_HEADING_SHARE * page.headings:
        problems.append(f"{found.headings} heading(s) for {page.headings} on the page")
    if page.page_code_blocks >= 2 and page.code_blocks < MIN_CODE_SHARE * page.page_code_blocks:
        problems.append(f"the element holds {page.code_blocks} of the page's {page.page_code_blocks} code blocks")
    if page.page_headings >= 6 and page.headings < page.page_headings / 3:
        problems.append(f"the element holds {page.headings} of the page's {page.page_headings} headings")
    if problems:
        return Check(FAIL, "; ".join(problems), 0.5)
    if minor:
        return Check(WARN, "; ".join(minor), 0.95)
    return Check(PASS, f"{found.fences} fence(s), {found.headings} heading(s) as on the page", 1.0)
