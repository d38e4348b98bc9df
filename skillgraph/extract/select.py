"""Content selection without landmarks: a structural scorer over the original tree.

Generators that mark their content (``main``, ``article``, ``[role=main]``, the
rules of :mod:`content`) are taken at their word.  Everything else (DocBook XSL,
Doxygen, docutils, gtk-doc, texinfo, hand-written pages) goes through here,
never through another tool's rewritten HTML: trafilatura's output turns inline
``<code>`` into ``<pre>`` and ``<pre>`` into ``<blockquote>``, and drops headings.

The score of an element is its *mass*: readable characters that are not link
text (a sidebar, a breadcrumb or a Prev/Next bar is mostly links), plus the text
of its code blocks, plus a bonus per heading.  Chrome that :func:`classify.kind`
already knows (header/footer/nav/aside, toc, breadcrumbs, DocBook
``navheader``/``navfooter``...) weighs nothing.  One bottom-up pass computes
every element's mass; selection then walks down from ``<body>`` into the child
that holds most of its parent's mass, and stops where the content splits into
several blocks.  Layout tables are crossed only through a cell that holds the
mass (an old page's content column), never into a data table.

:func:`candidates` returns the elements to try in order; the extractor renders
the first and its self-check (:mod:`skillgraph.quality.structure`) moves on to
the next when the markdown lost the page's structure.
"""

from __future__ import annotations

import re

from lxml import etree

from skillgraph.extract.classify import CODE, SKIP, kind
from skillgraph.quality.structure import Structure

#: Descend into a child holding at least this share of its parent's mass.
DESCEND_SHARE = 0.8
#: Mass of a heading beyond its text: headings anchor a content column.
HEADING_BONUS = 40
_HEADINGS = frozenset(["h1", "h2", "h3", "h4", "h5", "h6"])
#: Containers a selection may stop at (a ``<pre>`` or ``<p>`` is never "the page").
_CONTAINERS = frozenset(["div", "section", "article", "main", "body", "td", "center", "form"])
_TABLE_PARTS = frozenset(["tbody", "thead", "tfoot", "tr"])


_NAV_WORD = re.compile(r"\b(next|prev|previous|up|home)\b", re.I)
#: A block this short, this much link text, naming two of Next/Prev/Up/Home, is a navigation bar.
NAVBAR_CHARS = 400
NAVBAR_LINK_SHARE = 0.4
_NAVBAR_TAGS = frozenset(["div", "p", "table", "ul", "td", "tr", "span", "center"])


def _size(text: str | None) -> int:
    return len(text.strip()) if text else 0


class Scores:
    """Per-element mass, link text, all text and heading count, and the navigation bars found."""

    __slots__ = ("heads", "links", "mass", "navbars", "raw")

    def __init__(self) -> None:
        self.mass: dict[etree._Element, int] = {}
        self.raw: dict[etree._Element, int] = {}
        self.links: dict[etree._Element, int] = {}
        self.heads: dict[etree._Element, int] = {}
        self.navbars: set[etree._Element] = set()

    def get(self, el: etree._Element, default: int = 0) -> int:
        return self.mass.get(el, default)


def _is_navbar(el: etree._Element, raw: int, links: int) -> bool:
    if el.tag not in _NAVBAR_TAGS or not 0 < raw <= NAVBAR_CHARS or links < NAVBAR_LINK_SHARE * raw:
        return False
    words = {w.lower().replace("previous", "prev") for w in _NAV_WORD.findall("".join(el.itertext()))}
    return len(words) >= 2


def masses(body: etree._Element) -> Scores:
    """Scores of every element below ``body`` (one pass, children before parents).

    A navigation bar (Prev/Next/Up bars of DocBook, texinfo, old generators) weighs
    nothing and is recorded in ``navbars``: the renderer skips it.
    """
    elements = [el for el in body.iter() if el.tag.__class__ is str]
    scores = Scores()
    mass, raw_of, links_of, heads_of = scores.mass, scores.raw, scores.links, scores.heads
    for el in reversed(elements):
        tag = el.tag
        if kind(el, tag) & SKIP:
            mass[el] = raw_of[el] = links_of[el] = heads_of[el] = 0
            continue
        raw = _size(el.text)
        total = raw
        links = heads = 0
        for child in el:
            tail = _size(child.tail)
            raw += raw_of.get(child, 0) + tail
            total += mass.get(child, 0) + tail
            links += links_of.get(child, 0)
            heads += heads_of.get(child, 0)
        if tag == "a" and el.get("href") is not None:
            links, total = raw, 0
        elif tag in _HEADINGS:
            total += HEADING_BONUS
            heads += 1
        if links and _is_navbar(el, raw, links):
            scores.navbars.add(el)
            mass[el] = raw_of[el] = links_of[el] = heads_of[el] = 0
            continue
        mass[el], raw_of[el], links_of[el], heads_of[el] = total, raw, links, heads
    return scores


def _best_cell(table: etree._Element, scores: Scores) -> etree._Element | None:
    best, best_mass = None, -1
    for row in table.iter("tr"):
        for cell in row:
            if cell.tag in ("td", "th") and scores.get(cell) > best_mass:
                best, best_mass = cell, scores.get(cell)
    return best


def _titled_before(node: etree._Element, best: etree._Element, scores: Scores) -> bool:
    """Does a sibling before ``best`` hold a heading in prose (a title block, not a menu)?"""
    for child in node:
        if child is best:
            return False
        if scores.heads.get(child, 0) and scores.links.get(child, 0) < 0.5 * max(1, scores.raw.get(child, 0)):
            return True
    return False


def descend(body: etree._Element, scores: Scores) -> etree._Element:
    """The innermost container that still holds DESCEND_SHARE of its parent's mass.

    It never steps past a heading: a chapter whose intro and title precede a long
    section stays whole (texinfo, DocBook), a title block beside the column is kept.
    """
    node = body
    while True:
        total = scores.get(node)
        if total <= 0:
            return node
        best, best_mass = None, -1
        for child in node:
            m = scores.get(child)
            if m > best_mass:
                best, best_mass = child, m
        if best is None or best_mass < DESCEND_SHARE * total or _titled_before(node, best, scores):
            return node
        tag = best.tag
        if tag == "table" or tag in _TABLE_PARTS:
            cell = _best_cell(best, scores)
            if cell is None or scores.get(cell) < DESCEND_SHARE * total:
                return node  # a data table, or content spread over cells: keep the table whole
            best = cell
        elif tag not in _CONTAINERS:
            return node
        node = best


def _shown(el: etree._Element, scope: etree._Element) -> bool:
    """True unless an ancestor of ``el`` up to ``scope`` is chrome the renderer skips."""
    node: etree._Element | None = el
    while node is not None and node is not scope:
        if kind(node, str(node.tag)) & SKIP:
            return False
        node = node.getparent()
    return True


def _code_blocks(el: etree._Element) -> int:
    blocks = 0
    for pre in el.iter("pre", "div"):
        if pre.tag == "div" and not kind(pre, "div") & CODE:
            continue
        parent = pre.getparent()
        if parent is not None and (parent.tag == "pre" or "lineno" in (parent.get("class") or "")):
            continue  # <pre><pre> wrappers and line-number gutters are one block
        if pre.tag == "div" and pre.find(".//pre") is not None:
            continue
        if _shown(pre, el) and "".join(pre.itertext()).strip():
            blocks += 1
    return blocks


def _headings(el: etree._Element) -> int:
    return sum(1 for h in el.iter(*_HEADINGS) if "".join(h.itertext()).strip() and _shown(h, el))


def structure(el: etree._Element, body: etree._Element | None = None) -> Structure:
    """Code blocks, fence sources and headings of ``el`` as the renderer will show them.

    With ``body``, also the page's own counts (chrome aside), so that the check can tell a
    content element that left most of the page's code or headings outside.
    """
    blocks = _code_blocks(el)
    sources = 0
    for code in el.iter("code"):
        parent = code.getparent()
        if parent is not None and parent.tag != "pre" and "\n" in "".join(code.itertext()).strip():
            sources += 1
    headings = _headings(el)
    if body is None or body is el:
        return Structure(blocks, blocks + sources, headings, blocks, headings)
    return Structure(blocks, blocks + sources, headings, _code_blocks(body), _headings(body))
