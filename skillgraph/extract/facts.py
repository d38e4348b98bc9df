"""What one page's passes learnt about its elements, kept for the passes that come after.

An extraction reads the same elements several times: the self-check's census reads every
``<pre>`` of the page, the structural scorer classifies every element it weighs, and the
renderer then meets most of them again.  Each fact here is a pure function of the element
(:func:`classify.kind`, :func:`code.lays_out`, the ``<pre>``'s text), so a pass that computed
it leaves it for the next instead of asking lxml again.  One instance per page, dropped with it.
"""

from __future__ import annotations

from lxml import etree


class Facts:
    """Memoised per-element facts of one page (the dictionaries keep their elements' proxies alive)."""

    __slots__ = ("kinds", "layouts", "texts", "toctrees")

    def __init__(self) -> None:
        #: :func:`~skillgraph.extract.classify.kind` of the elements the structural scorer weighed or skipped
        self.kinds: dict[etree._Element, int] = {}
        #: :func:`~skillgraph.extract.code.lays_out` of each ``<pre>`` the census looked at
        self.layouts: dict[etree._Element, bool] = {}
        #: :func:`~skillgraph.extract.inline.text_of` of each ``<pre>`` with child elements the census read
        self.texts: dict[etree._Element, str] = {}
        #: the ``div``s whose class holds ``toctree-wrapper`` (Sphinx), met by the census's walk of the page
        self.toctrees: list[etree._Element] = []
