"""What the renderer will show of an element: its code blocks, fence sources and headings.

The self-check (:mod:`skillgraph.quality.structure`) compares these counts with the
markdown's.  Chrome that :func:`classify.kind` skips is never counted; the tags are found
by lxml's C-level ``iter``, so an Erlang or rustdoc sidebar listing the whole site, ten
times the content's elements, costs next to nothing.
"""

from __future__ import annotations

from typing import NamedTuple

from lxml import etree

from skillgraph.extract.classify import CODE, SKIP, kind
from skillgraph.extract.code import lays_out
from skillgraph.extract.inline import text_of
from skillgraph.quality.structure import Structure

HEADINGS = frozenset(["h1", "h2", "h3", "h4", "h5", "h6"])


class Counts(NamedTuple):
    """Code blocks (``<pre>``, code containers), other fence sources (multi-line ``<code>``), headings."""

    blocks: int = 0
    sources: int = 0
    headings: int = 0


def _text(el: etree._Element) -> str:
    if not len(el):  # most code spans and headings: no child, no join
        return (el.text or "").strip()
    return text_of(el).strip()


def _visible(el: etree._Element, scope: etree._Element, memo: dict[etree._Element, bool]) -> bool:
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


def counts(scope: etree._Element, sources: bool = True) -> Counts:
    """Counts of ``scope`` outside skipped chrome.

    The tags are found by lxml's C-level ``iter``; only they (and their ancestors, once
    each) are looked at in Python, so a big sidebar of links costs nothing.  Without
    ``sources``, multi-line ``<code>`` is not counted (the page's own counts need none).
    """
    blocks = found = headings = 0
    memo: dict[etree._Element, bool] = {}
    for el in scope.iter("pre", "div", "code", *HEADINGS) if sources else scope.iter("pre", "div", *HEADINGS):
        tag = el.tag
        if tag == "div" and not kind(el, "div") & CODE:
            continue
        if tag in HEADINGS:
            if _text(el) and _visible(el, scope, memo):
                headings += 1
            continue
        parent = el.getparent()
        if tag == "code":
            if parent is not None and parent.tag != "pre" and "\n" in _text(el) and _visible(el, scope, memo):
                found += 1
            continue
        if parent is not None and (parent.tag == "pre" or "lineno" in (parent.get("class") or "")):
            continue  # <pre><pre> wrappers and line-number gutters are one block
        if tag == "div" and el.find(".//pre") is not None:
            continue  # a code wrapper: its <pre> is the block
        if tag == "pre" and lays_out(el):
            continue  # layout kept in <pre> is written as blocks, never fenced
        if _text(el) and _visible(el, scope, memo):
            blocks += 1
    return Counts(blocks, found, headings)


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
