"""What the renderer will show of an element: its code blocks, fence sources and headings.

The self-check (:mod:`skillgraph.quality.structure`) compares these counts with the
markdown's.  Chrome that :func:`classify.kind` skips is never counted; the tags are found
by lxml's C-level ``iter``, so an Erlang or rustdoc sidebar listing the whole site, ten
times the content's elements, costs next to nothing.
"""

from __future__ import annotations

from typing import NamedTuple

from lxml import etree

from skillgraph.extract.classify import CODE, HEADINGS, SKIP, code_class, kind, labels_a_box
from skillgraph.extract.code import is_code_flow, is_code_rows, is_gutter, is_listing_table, is_prompt, lays_out
from skillgraph.extract.facts import Facts
from skillgraph.extract.inline import text_of
from skillgraph.quality.structure import Structure


class Counts(NamedTuple):
    """Code blocks (``<pre>``, code containers), other fence sources (multi-line ``<code>``), headings."""

    blocks: int = 0
    sources: int = 0
    headings: int = 0


def _text(el: etree._Element) -> str:
    if not len(el):  # most code spans and headings: no child, no join
        return (el.text or "").strip()
    return text_of(el).strip()


def visible(el: etree._Element, scope: etree._Element, memo: dict[etree._Element, bool]) -> bool:
    """True unless ``el`` or an ancestor up to ``scope`` is skipped chrome (memoised along the way)."""
    path = []
    node: etree._Element | None = el
    result = True
    while node is not None and node is not scope:
        known = memo.get(node)
        if known is not None:
            result = known
            break
        path.append(node)
        if kind(node, str(node.tag)) & SKIP:
            result = False
            break
        node = node.getparent()
    for seen in path:
        memo[seen] = result
    return result


#: What an element adds to the counts: nothing, a code block, a heading.
NONE, BLOCK, HEADING = 0, 1, 2


def _what(el: etree._Element, tag: str, facts: Facts | None = None) -> int:
    """Is ``el`` (a ``<pre>``, a ``<div>`` or a heading) a code block, a heading or neither, wherever it is?

    A ``<div>`` is one only when a class token says code (:data:`classify.CODE_TOKENS`): the
    memoised token test comes first, so the many plain ``<div>``s cost one attribute read.
    ``facts`` keeps what :func:`code.lays_out` said of each ``<pre>`` and the text of those with
    child elements: the renderer needs both again.
    """
    if tag == "div":
        cls = el.get("class")
        if not cls:
            return NONE
        if facts is not None and "toctree-wrapper" in cls:
            facts.toctrees.append(el)  # for the renderer: a toctree that is a section's content (toc.py)
        if not code_class(cls) or not kind(el, "div") & CODE:
            return NONE
    elif tag in HEADINGS:
        return HEADING if _text(el) and not labels_a_box(el) else NONE
    parent = el.getparent()
    if parent is not None and (parent.tag == "pre" or "lineno" in (parent.get("class") or "")):
        return NONE  # <pre><pre> wrappers and line-number gutters are one block
    if tag == "pre" and parent is not None and parent.tag == "td" and is_gutter(el):
        return NONE  # line numbers in the cell before a listing's (YARD)
    if tag == "pre" and is_prompt(el):
        return NONE  # a notebook cell's execution count (nbsphinx)
    if tag == "div" and next(el.iter("pre"), None) is not None:
        return NONE  # a code wrapper: its <pre> is the block
    if tag == "pre":
        laid = lays_out(el)
        if facts is not None:
            facts.layouts[el] = laid
        if laid:
            return NONE  # layout kept in <pre> is written as blocks, never fenced
        if facts is not None and len(el):
            text = facts.texts[el] = text_of(el)
            return BLOCK if text.strip() else NONE
    return BLOCK if _text(el) else NONE


def counts(scope: etree._Element, sources: bool = True) -> Counts:
    """Counts of ``scope`` outside skipped chrome.

    The tags are found by lxml's C-level ``iter``; only they (and their ancestors, once
    each) are looked at in Python, so a big sidebar of links costs nothing.  Without
    ``sources``, multi-line ``<code>`` is not counted (the page's own counts need none).
    """
    blocks = found = headings = 0
    memo: dict[etree._Element, bool] = {}
    for el in scope.iter("pre", "div", "code", "tt", "table", "blockquote", *HEADINGS) if sources \
            else scope.iter("pre", "div", *HEADINGS):
        tag = el.tag
        if tag == "code" or tag == "tt":  # the renderer fences a multi-line one of either (SWIG's <p><tt>)
            parent = el.getparent()
            if parent is not None and parent.tag != "pre" and "\n" in _text(el) and visible(el, scope, memo):
                found += 1
            continue
        if tag == "table":  # a listing laid out as a table, a row a line (Scribble's table.RktBlk), outermost
            outermost = is_listing_table(el) and not any(is_listing_table(a) for a in el.iterancestors("table"))
            if (outermost or is_code_rows(el)) and visible(el, scope, memo):
                found += 1
            continue
        if tag == "blockquote":
            if is_code_flow(el) and visible(el, scope, memo):
                found += 1
            continue
        what = _what(el, tag)
        if what and visible(el, scope, memo):
            if what == BLOCK:
                blocks += 1
            else:
                headings += 1
    return Counts(blocks, found, headings)


_COUNTED = frozenset(("pre", "div", *HEADINGS))  #: the tags the census looks at


class Census:
    """The page's code blocks and headings (chrome aside), each one's verdict kept for the elements inside it.

    The self-check counts the page once, then each candidate content element.  An
    element's counts are the page's items that lie inside it: what an item is does not
    depend on where it is counted from, and an item that no chrome hides from the page is
    not hidden from an element holding it (its ancestors up to the element are fewer);
    only the items hidden from the page are looked at again (the element may be inside
    the chrome: QDoc's header wrapper holds the content).  A candidate then costs one
    C-level ``iter`` and a dictionary look-up per item (``<div>``s only when the page has
    code containers), not the page's pass again.
    """

    __slots__ = ("_code_divs", "_items", "gathered", "page", "scope")

    def __init__(self, scope: etree._Element, facts: Facts | None = None, gather: frozenset[str] = frozenset()) -> None:
        self.scope = scope
        self._items: dict[etree._Element, tuple[int, bool]] = {}
        self._code_divs = False
        #: the elements of ``scope`` (itself included) whose tag is in ``gather``, in document order: a
        #: tag-filtered walk of the page costs as much as this one, so the content's landmarks are read here
        self.gathered: list[etree._Element] = []
        blocks = headings = 0
        memo: dict[etree._Element, bool] = {}
        for el in scope.iter("pre", "div", *HEADINGS, *(gather - _COUNTED)) if gather else scope.iter(*_COUNTED):
            tag = el.tag
            if tag in gather:
                self.gathered.append(el)
                if tag not in _COUNTED:
                    continue
            what = _what(el, tag, facts)
            if not what:
                continue
            self._code_divs = self._code_divs or tag == "div"
            seen = visible(el, scope, memo)
            self._items[el] = (what, seen)
            if seen:
                if what == BLOCK:
                    blocks += 1
                else:
                    headings += 1
        #: the counts of the whole scope (no fence sources: the page's counts need none)
        self.page = Counts(blocks, 0, headings)

    def within(self, el: etree._Element) -> Counts:
        """``counts(el, sources=False)``, read from the page's verdicts."""
        if el is self.scope:
            return self.page
        if not any(anc is self.scope for anc in el.iterancestors()):
            return counts(el, sources=False)  # not inside the page counted: count it afresh
        items = self._items
        blocks = headings = 0
        memo: dict[etree._Element, bool] = {}
        for node in el.iter("pre", "div", *HEADINGS) if self._code_divs else el.iter("pre", *HEADINGS):
            got = items.get(node)
            if got is None or not (got[1] or visible(node, el, memo)):
                continue
            if got[0] == BLOCK:
                blocks += 1
            else:
                headings += 1
        return Counts(blocks, 0, headings)

    def structure(self, el: etree._Element) -> Structure:
        """``structure(el, self.page, sources=False)``: the self-check's input for a candidate element."""
        own = self.within(el)
        return Structure(own.blocks, own.blocks, own.headings, self.page.blocks, self.page.headings)


def fence_sources(el: etree._Element) -> int:
    """Code blocks and multi-line ``<code>`` of ``el``: :attr:`Structure.code_sources`, counted on demand."""
    own = counts(el)
    return own.blocks + own.sources


def structure(el: etree._Element, page: Counts | None = None, sources: bool = True) -> Structure:
    """Code blocks, fence sources and headings of ``el``; with ``page``, the whole page's counts too.

    The page's counts let the check tell a content element that left most of the page's
    code or headings outside.  Without ``sources``, no ``<code>`` is read and the fence
    sources are the code blocks alone (:func:`fence_sources` counts the rest when needed).
    """
    own = counts(el, sources)
    page = page or own
    return Structure(own.blocks, own.blocks + own.sources, own.headings, page.blocks, page.headings)
