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

Inside the element chosen, site chrome that no class names is found by structure
(:func:`layout_chrome`: the menu column and logo row of a page laid out in nested
tables; :func:`leading_chrome`: menus before the page's heading) and skipped by the
renderer, like the navigation bars.
"""

from __future__ import annotations

import re

from lxml import etree

from skillgraph.extract.classify import CODE, HEADINGS, SKIP, kind
from skillgraph.extract.facts import Facts
from skillgraph.extract.inline import text_of
from skillgraph.extract.title import title_words

#: Descend into a child holding at least this share of its parent's mass.
DESCEND_SHARE = 0.8
#: Mass of a heading beyond its text: headings anchor a content column.
HEADING_BONUS = 40
#: Prose mass of a block before the column that makes it part of the page (Haddock's module
#: header and description, a reference page's synopsis table): the column is not descended into.
LEAD_PROSE = 150
#: Containers a selection may stop at (a ``<pre>`` or ``<p>`` is never "the page").
_CONTAINERS = frozenset(["div", "section", "article", "main", "body", "td", "center", "form"])
_TABLE_PARTS = frozenset(["tbody", "thead", "tfoot", "tr"])


_NAV_WORD = re.compile(r"\b(next|prev|previous|up|home)\b", re.I)
#: Link types (HTML's ``rel``) of a page's way around its site: two of them on a bar's links make it one.
_NAV_RELS = frozenset(["next", "prev", "up", "home", "start", "first", "last", "contents", "index", "toc"])
#: A block this short, this much link text, naming two of Next/Prev/Up/Home, is a navigation bar.
NAVBAR_CHARS = 400
NAVBAR_LINK_SHARE = 0.4
_NAVBAR_TAGS = frozenset(["div", "p", "table", "ul", "td", "tr", "span", "center"])


#: An element's figures: mass, all text, link text, headings, and whether it is or holds a navigation bar.
Figures = tuple[int, int, int, int, bool]
_NONE: Figures = (0, 0, 0, 0, False)
#: Weighed whole, never entered: what they hold is their text (paragraphs, code, inline markup).
_LEAVES = HEADINGS | {
    "p", "pre", "code", "a", "span", "em", "strong", "b", "i", "kbd", "samp", "tt", "var", "small", "sup", "sub",
    "abbr", "cite", "dfn", "mark", "q", "s", "u", "time",
}


class Scores:
    """Per-element figures (:data:`Figures`) and the navigation bars found."""

    __slots__ = ("figures", "navbars")

    def __init__(self) -> None:
        self.figures: dict[etree._Element, Figures] = {}
        self.navbars: set[etree._Element] = set()

    def get(self, el: etree._Element) -> int:
        """The mass of ``el`` (0 for chrome and navigation bars)."""
        return self.figures.get(el, _NONE)[0]

    def leads(self, el: etree._Element) -> bool:
        """Does ``el`` open the content: a heading or a paragraph's worth of prose, not a menu of links?"""
        total, raw, links, heads, _ = self.figures.get(el, _NONE)
        return (heads > 0 or total >= LEAD_PROSE) and links < 0.5 * max(1, raw)


def _is_navbar(el: etree._Element, raw: int, links: int, tag: str) -> bool:
    """Short, mostly links, naming two of Next/Prev/Up/Home (the caller rules out headings and inner bars).

    Every row of a table of linked names is short and mostly links: an ASCII text whose
    words cannot hold two of the four (fewer than two of their stems as substrings) is told
    apart without the regular expression.
    """
    if tag not in _NAVBAR_TAGS or not 0 < raw <= NAVBAR_CHARS or links < NAVBAR_LINK_SHARE * raw:
        return False
    said = [text_of(el)]
    for a in el.iter("a"):  # arrows ("<< >>") say where they go in rel (texinfo) or title (texi2html)
        said.extend((a.get("rel") or "", a.get("title") or ""))
    rels = " ".join(said[1::2])
    if rels.strip() and len(_NAV_RELS.intersection(rels.lower().replace("previous", "prev").split())) >= 2:
        return True  # "Next: [fft] [Contents] [Index]": texinfo's one-way bar, its links' rel say so
    text = " ".join(said)
    if text.isascii():
        low = text.lower()
        if ("next" in low) + ("prev" in low) + ("up" in low) + ("home" in low) < 2:
            return False
    words = {w.lower().replace("previous", "prev") for w in _NAV_WORD.findall(text)}
    return len(words) >= 2


def _leaf(el: etree._Element, tag: str) -> Figures:
    """Figures of a paragraph, heading, code or inline element in one C-level read of its text.

    Most leaves (code spans, links, short paragraphs) have no child element: their text is
    their ``.text``, and no link or heading can be inside them.
    """
    children = len(el)
    text = etree.tostring(el, method="text", encoding=str, with_tail=False) if children else el.text
    raw = len(text.strip()) if text else 0
    if tag in HEADINGS:  # a heading linked to the contents (texi2html, docutils) is still a title
        return raw + HEADING_BONUS, raw, 0, 1, False
    if tag == "a" and el.get("href") is not None:  # a link, even a card holding a heading, is link text
        return 0, raw, raw, int(children > 0 and next(el.iter(*HEADINGS), None) is not None), False
    if not children:
        return raw, raw, 0, 0, False  # an <a> without href counts no link text: it is no link
    links = 0
    for a in el.iter("a"):
        if a.get("href") is not None:
            links += len(text_of(a).strip())
    return max(0, raw - links), raw, links, 0, False


#: A navigation bar's figures: it weighs nothing and marks its holders as holding a bar.
_BAR: Figures = (0, 0, 0, 0, True)


def masses(body: etree._Element, facts: Facts | None = None) -> Scores:
    """Scores of every element below ``body`` (one pass, children before parents).

    Chrome that :func:`classify.kind` skips is never entered (a sidebar listing the whole
    site is most of an Erlang or rustdoc page's elements), nor are paragraphs, headings
    and code, weighed whole by :func:`_leaf`.  A navigation bar (Prev/Next/Up bars of
    DocBook, texinfo, old generators) weighs nothing and is recorded in ``navbars``: the
    renderer skips it.  Only the innermost such block is one: an element holding a
    heading or a bar already found is content around it (a short texinfo chapter page is
    its bar, its title and a paragraph).

    One recursive pass: each element's children are read once (tag, class, tail), where a
    stack of elements then a second loop over them read every child twice.  What
    :func:`classify.kind` says of each element is left in ``facts`` for the renderer, which
    walks the same elements of the content next.
    """
    scores = Scores()
    tag = body.tag
    if tag.__class__ is not str or kind(body, tag) & SKIP:
        return scores
    if tag in _LEAVES:
        _weigh_leaf(body, tag, scores)
    else:
        _weigh(body, tag, scores.figures, scores.navbars, facts.kinds if facts is not None else {})
    return scores


def _weigh_leaf(el: etree._Element, tag: str, scores: Scores) -> Figures:
    leaf = _leaf(el, tag)
    if leaf[2] and not leaf[3] and _is_navbar(el, leaf[1], leaf[2], tag):
        scores.navbars.add(el)
        leaf = _BAR
    scores.figures[el] = leaf
    return leaf


def _weigh(el: etree._Element, tag: str, figures: dict[etree._Element, Figures],
           navbars: set[etree._Element], kinds: dict[etree._Element, int]) -> Figures:
    """Figures of a container (not skipped, not a leaf), its children's recorded on the way."""
    text = el.text
    raw = len(text.strip()) if text else 0
    total = raw
    links = heads = 0
    holds_bar = False
    for child in el:
        ctag = child.tag
        if ctag.__class__ is str:
            flags = kinds[child] = kind(child, ctag)
            if not flags & SKIP:
                if ctag in _LEAVES:
                    got = _leaf(child, ctag)
                    if got[2] and not got[3] and _is_navbar(child, got[1], got[2], ctag):
                        navbars.add(child)
                        got = _BAR
                    figures[child] = got
                else:
                    got = _weigh(child, ctag, figures, navbars, kinds)
                c_total, c_raw, c_links, c_heads, c_bar = got
                raw += c_raw
                total += c_total
                links += c_links
                heads += c_heads
                holds_bar = holds_bar or c_bar
        tail = child.tail
        if tail:
            tail_size = len(tail.strip())
            raw += tail_size
            total += tail_size
    if holds_bar:
        if not raw and tag in _NAVBAR_TAGS:
            navbars.add(el)  # nothing but the bar: the table or box around it is the bar
    elif links and not heads and _is_navbar(el, raw, links, tag):
        navbars.add(el)
        figures[el] = _BAR
        return _BAR
    got = figures[el] = (total, raw, links, heads, holds_bar)
    return got


#: A layout cell whose link text is at least this share of its text, beside the row's content cell, is a menu.
MENU_LINK_SHARE = 0.6
#: ... and it holds at least this many links (one linked word in a cell is a table's data).
MENU_LINKS = 3
_CELLS = frozenset(["td", "th"])
#: Does a table hold another?  ``[1]``: libxml2 stops at the first one found, where a bare
#: ``boolean(descendant::table)`` collects them all first (2.4x slower on libxml2's own pages).
_nested_table = etree.XPath("boolean(descendant::table[1])")


def _own_rows(table: etree._Element) -> list[etree._Element]:
    rows = []
    for child in table:
        if child.tag == "tr":
            rows.append(child)
        elif child.tag in _TABLE_PARTS:
            rows.extend(tr for tr in child if tr.tag == "tr")
    return rows


def _menu(figures: Figures, el: etree._Element) -> bool:
    """Is ``el`` a menu or a logo: no heading, and only linked images or mostly three links' text or more?

    A paragraph is never one, whatever its links: it is prose.
    """
    _, raw, links, heads, _ = figures
    if heads:
        return False
    if raw == 0:  # linked images (logos, icons); an image alone in a cell is a table's data
        return next((a for a in el.iter("a") if a.get("href") is not None), None) is not None
    if el.tag in _LEAVES:  # a paragraph of linked words is prose (Doxygen's brief description)
        return False
    return links >= MENU_LINK_SHARE * raw and sum(1 for _ in el.iter("a")) >= MENU_LINKS


def leading_chrome(el: etree._Element, scores: Scores) -> set[etree._Element]:
    """Blocks before the page's first heading that are menus or logos (a site header without landmarks).

    SQLite's pages open with a logo, a tagline and two menus in a plain ``div`` before the
    ``<h1>``; Node.js's index page with its menu column.  The page starts at its heading, and
    the blocks that come first, before it, each mostly links, are the site's.  Only the first
    heading of level 1 or 2 anchors this, and only a leading run of menus: once a block of
    another kind comes (Haddock's module header, then its synopsis), the rest is the page's.
    """
    found: set[etree._Element] = set()
    figures = scores.figures
    node = el
    while node.tag not in ("h1", "h2"):
        nxt = None
        for child in node:
            got = figures.get(child)
            if got is None or not (got[0] or got[1] or got[3] or len(child)):
                continue  # chrome already skipped, or nothing shown
            if got[3]:  # holds a heading
                nxt = child
                break
            if not _menu(got, child):
                return found  # the page opened with something else than a menu: it starts here
            found.add(child)
        if nxt is None or (nxt.tag in HEADINGS and nxt.tag not in ("h1", "h2")):
            return set()  # no h1/h2 first: nothing is before the page's heading
        node = nxt
    return found


def layout_chrome(el: etree._Element, scores: Scores) -> set[etree._Element]:
    """The cells of ``el``'s layout tables that are site chrome: a menu column, a row of logos.

    Old hand-written sites (libxml2's, many C libraries') lay every page out in nested tables:
    a banner row of logo links above the title, a menu column of link lists beside the page's
    column.  In a table that lays a page out (it holds another table), each row's cell of most
    mass is content; beside it, a cell with no text but its links' (logos, icons) or whose text
    is mostly the text of three links or more, with no heading (menus), is chrome.  Rows of
    data tables are never judged: a table of function names, every cell a link, holds no table.
    """
    found: set[etree._Element] = set()
    figures = scores.figures
    for table in el.iter("table"):
        if table not in figures or not _nested_table(table):
            continue  # chrome already skipped, or a data table
        rows = _own_rows(table)
        if not rows or rows[0].getparent().tag == "thead" or any(c.tag == "th" for c in rows[0]):
            continue  # a header row: a data table (docutils' cheat sheet holds footnote tables)
        for tr in rows:
            cells = [c for c in tr if c.tag in _CELLS and c in figures]
            if len(cells) < 2:
                continue
            best = max(cells, key=scores.get)
            for cell in cells:
                if cell is best:
                    continue
                if _menu(figures[cell], cell):
                    found.add(cell)
    return found


def _best_cell(table: etree._Element, scores: Scores) -> etree._Element | None:
    best, best_mass = None, -1
    for row in table.iter("tr"):
        for cell in row:
            if cell.tag in ("td", "th") and scores.get(cell) > best_mass:
                best, best_mass = cell, scores.get(cell)
    return best


def _led_before(node: etree._Element, best: etree._Element, scores: Scores) -> bool:
    """Does a sibling before ``best`` open the content (a title block, an intro, not a menu, not a banner)?"""
    for child in node:
        if child is best:
            return False
        if scores.leads(child) and not _linked_banner(child):
            return True
    return False


def _linked_banner(el: etree._Element) -> bool:
    """Is ``el`` a heading that is one link to another page, saying words the page's ``<title>`` does not?

    A site's name printed above the content column as a link to its home page (Exim's manual:
    ``<h1 id="header"><a href="http://www.exim.org">Exim Internet Mailer</a></h1>`` before the
    ``div`` holding the navigation and the chapter under ``<title>4. Building and installing
    Exim``) names the site, not the page, and opens nothing.  A heading linked to the contents
    (texi2html, docutils: a ``#fragment``) or saying the title is still the page's.
    """
    if el.tag not in HEADINGS:
        return False
    links = [a for a in el.iter("a") if a.get("href") is not None]
    if len(links) != 1:
        return False
    href = links[0].get("href", "").strip()
    text = text_of(el).strip()
    if not href or "#" in href or href.lower().startswith("javascript:") or not text \
            or text_of(links[0]).strip() != text:
        return False
    title = el.getroottree().getroot().find("head/title")
    said = title_words(title.text or "") if title is not None else set()
    return bool(said) and not title_words(text) <= said


def descend(body: etree._Element, scores: Scores) -> etree._Element:
    """The innermost container that still holds DESCEND_SHARE of its parent's mass.

    It never steps past a heading or a block of prose: a chapter whose intro and title
    precede a long section stays whole (texinfo, DocBook, Haddock), a title block beside
    the column is kept.
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
        if best is None or best_mass < DESCEND_SHARE * total or _led_before(node, best, scores):
            return node
        tag = best.tag
        if tag == "table" or tag in _TABLE_PARTS:
            cell = _best_cell(best, scores)
            if cell is None or scores.get(cell) < DESCEND_SHARE * total:
                return node  # a data table, or content spread over cells: keep the table whole
            best = cell
        elif tag not in _CONTAINERS or kind(best, str(tag)) & CODE:
            return node  # a code block (Doxygen's div.fragment) is never "the page": its fence is
        node = best
