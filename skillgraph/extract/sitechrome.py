"""Site chrome found by repetition: the linked lines a site writes on most of its pages.

The extractor leaves chrome out by structure, one page at a time (:mod:`select`: a menu
column or a logo row in a table layout, a header of links before the page's heading).
What structure cannot tell apart, a build can: it sees every page, and a line of links that
recurs on half of a site's pages (a language bar, a "main help file" back link, a menu that
no layout isolates) is the site's, not the page's.  Page workers extract each page alone,
so this is the cross-page half, for whoever holds a site's pages together (the graph
commit): feed it the pages' markdown with :meth:`SiteChrome.add`, then :func:`strip` each
page with :meth:`SiteChrome.lines`.

Only lines that carry a link to another page are candidates: content repeated on every
page (a licence line, a table header, ``## Description``) is never removed, nor is code.
"""

from __future__ import annotations

import re
from collections import Counter

from skillgraph.markdown import scan

#: A line on at least this share of the pages seen is the site's.
SHARE = 0.5
#: Below this many pages nothing repeats enough to tell (a small site keeps every line).
MIN_PAGES = 20
#: Pages counted: the first ones are enough to learn a site's chrome, and memory stays bounded.
SAMPLE = 200
#: Lines shorter than this are structure (``- [API](api.html)`` is a page's own link list too).
MIN_CHARS = 12
_LINK_ELSEWHERE = re.compile(r"\]\((?!#)[^)\s]+\)")


def candidates(markdown: str) -> set[str]:
    """Lines of ``markdown`` that could be chrome: prose (not code, not a heading) linking elsewhere."""
    found = set()
    for line in scan(markdown):
        if line.kind == "text" and len(line.text) >= MIN_CHARS and _LINK_ELSEWHERE.search(line.text):
            found.add(line.text.strip())
    return found


class SiteChrome:
    """Counts candidate lines over a site's pages; :meth:`lines` are those on most of them."""

    __slots__ = ("_counts", "pages", "sample")

    def __init__(self, sample: int = SAMPLE) -> None:
        self.sample = sample
        self.pages = 0
        self._counts: Counter[str] = Counter()

    def add(self, markdown: str) -> None:
        """Count one page's candidate lines (each once), up to ``sample`` pages."""
        if self.pages >= self.sample:
            return
        self.pages += 1
        self._counts.update(candidates(markdown))

    def lines(self, share: float = SHARE, min_pages: int = MIN_PAGES) -> frozenset[str]:
        """Lines on ``share`` of the pages counted or more; none before ``min_pages`` pages."""
        if self.pages < min_pages:
            return frozenset()
        bar = share * self.pages
        return frozenset(line for line, seen in self._counts.items() if seen >= bar)


def strip(markdown: str, chrome: frozenset[str]) -> str:
    """``markdown`` without the lines in ``chrome`` (outside code), blank runs closed up."""
    if not chrome or not markdown:
        return markdown
    kept: list[str] = []
    for line in scan(markdown):
        if line.kind == "text" and line.text.strip() in chrome:
            continue
        if line.kind == "text" and not line.text.strip() and (not kept or not kept[-1].strip()):
            continue  # the blank line after a removed block (blank lines of code are code)
        kept.append(line.text)
    text = "\n".join(line.rstrip("\n") for line in kept).strip("\n")
    return text + "\n" if text else ""
