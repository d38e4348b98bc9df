"""An index page's table of contents: elsewhere navigation, there the page itself.

Tables of contents are skipped as chrome everywhere (they repeat the sidebar),
which leaves index pages (Sphinx ``contents.html``, ``library/windows.html``,
a DocBook book's ``index.html``) nearly empty; for those the child pages, with
their links, are the content. Only the top levels are kept: Sphinx's
``contents.html`` full tree is over a megabyte.  Each table of contents is written
where it stands, under the heading it sits under (clang's index: a toctree under
each section heading), as the walker would meet it if it were not chrome.
"""

from __future__ import annotations

import re
from itertools import islice

from lxml import etree

from skillgraph.extract import containers
from skillgraph.extract.blocks import Out, Walker
from skillgraph.extract.classify import SKIP, kind
from skillgraph.extract.inline import escape, inside, plain_text

#: Below this many characters of text (link destinations left out) a page is an index page whose table
#: of contents is its content.
INDEX_PAGE_CHARS = 400
#: A markdown link's destination, parentheses balanced one level deep (as the renderer writes them).
_DESTINATION = re.compile(r"\]\(((?:[^()\s]|\([^()\s]*\))*)\)")
#: Levels of a generic table of contents kept on an index page.
TOC_DEPTH = 2
_LISTS = frozenset(["ul", "ol", "dl"])
#: Plain block wrappers the walk goes down through to reach a table of contents inside them.
_WRAPPERS = frozenset(["div", "section", "article", "main"])


def is_index_page(markdown: str, destinations: int) -> bool:
    """Is a page this short, its links' destinations left out, an index page?

    Counted without the destinations, the verdict does not depend on the host's name: with them, the
    same page (SQLAlchemy's ``orm/relationships.html``: 391 characters) was an index page read from a
    file and lost its toctree when crawled from a server with a longer URL. ``destinations`` (what the
    renderer wrote, never fewer than the markdown holds) settles most pages without reading them.
    """
    if len(markdown) - destinations >= INDEX_PAGE_CHARS:
        return False
    if len(markdown) < INDEX_PAGE_CHARS:
        return True
    return len(markdown) - sum(map(len, _DESTINATION.findall(markdown))) < INDEX_PAGE_CHARS


#: DocBook XSL's classes of a book's (a set's, a part's) root element: its title page holds the book's contents.
_BOOK_CLASSES = frozenset(["book", "set", "part"])


def is_book_root(body: etree._Element) -> bool:
    """Is ``body`` (or one of its first elements, or what holds it) a DocBook book, set or part with a ``div.toc``?

    Its title page is the book's contents whatever its length: Wireshark's guides' lists of figures and
    tables, Valgrind's licence, made their ``index.md`` longer than an index page and the contents were lost.
    """
    around = (*islice(body.iterancestors(), 2), *islice((child for child in body if isinstance(child.tag, str)), 3))
    for el in (body, *around):
        if not _BOOK_CLASSES.isdisjoint((el.get("class") or "").split()):
            return any(child.tag == "div" and "toc" in (child.get("class") or "").split() for child in el)
    return False


def _toctrees(renderer: Walker, body: etree._Element,
              holders: list[etree._Element] | None = None) -> dict[etree._Element, list[str]]:
    """Sphinx toctrees: the first level (``li.toctree-l1``) of each, links kept (``holders``: the candidates)."""
    found: dict[etree._Element, list[str]] = {}
    for toc in body.iter("div") if holders is None else holders:
        if "toctree-wrapper" not in (toc.get("class") or "").split():
            continue
        items = []
        caption = next((p for p in toc.iterchildren("p") if "caption" in (p.get("class") or "").split()), None)
        if caption is not None:  # "Appendix": also keeps two toctrees in a row from reading as one list
            items.append("\n".join(renderer.blocks(caption)).strip() + "\n")
        for li in toc.iter("li"):
            if "toctree-l1" in (li.get("class") or "").split():
                text = " ".join(renderer.blocks(li, exclude=li.find("ul"))).strip()
                if text:
                    items.append(f"- {text}")
        if items and items[-1][:1] == "-":
            found[toc] = items
    return found


def _generic_tocs(renderer: Walker, root: etree._Element, first: bool = False) -> dict[etree._Element, list[str]]:
    """The ``.toc`` containers (DocBook ``div.toc``, many themes), outermost ones (``first``: the first one).

    Each with its links; one without links to other pages is left out.
    """
    found: dict[etree._Element, list[str]] = {}
    for el in root.iter("div", "nav", "dl", "ul", "ol"):
        if "toc" in (el.get("class") or "").split() and not any(anc in found for anc in el.iterancestors()):
            found[el] = _generic_toc(renderer, el)
            if first:
                break
    return {toc: items for toc, items in found.items() if items}


def _generic_toc(renderer: Walker, toc: etree._Element) -> list[str]:
    """A ``.toc`` container's links, nested by list depth."""
    items: list[str] = []
    for a in toc.iter("a"):
        href = a.get("href")
        text = plain_text(a)
        if not href or href.startswith("#") or not text:
            continue  # an on-page contents box (links to the page's own sections) is not an index
        depth = -1
        for anc in a.iterancestors():
            if anc is toc:
                break
            depth += anc.tag in _LISTS
        depth = max(0, depth + (toc.tag in _LISTS))
        if depth >= TOC_DEPTH:
            continue
        target = renderer.linker.target(href)
        line = f"[{escape(text)}]({target})" if target else escape(text)
        items.append("  " * depth + "- " + line)
    return items


def _one_after_another(lists: list[str]) -> str:
    """Tables of contents in a row: one list, but a captioned one (Sphinx's "Appendix") starts its own block."""
    return "".join(("\n" if text[:1] == "-" else "\n\n") + text if n else text for n, text in enumerate(lists))


class _InPlace:
    """The walk of an index page that writes each table of contents where it stands."""

    def __init__(self, renderer: Walker, lists: dict[etree._Element, str]) -> None:
        self.renderer = renderer
        self.lists = lists  #: the list of each table of contents not written yet
        #: the plain wrappers the walk goes down through to reach a table of contents
        self.holders = {anc for toc in lists for anc in toc.iterancestors() if anc.tag in _WRAPPERS}
        self.placed: list[str] = []  #: the lists written, in order

    def walk(self, el: etree._Element, out: Out) -> None:
        """The children of ``el`` as the walker writes them, each table of contents as its list.

        Only wrappers holding a table of contents are walked here; every other child is handed
        to the walker as its own loop would (chrome skipped, containers by their flags). A table
        of contents right after another, with nothing written between them, continues its list.
        """
        renderer = self.renderer
        text = el.text
        if text and (out.inline or not text.isspace()):
            out.inline.append(escape(text))
        skip = renderer.skip
        for child in el:
            tag = child.tag
            if isinstance(tag, str) and not (skip and child in skip):
                if child in self.lists:
                    out.flush()
                    placed = self.lists.pop(child)
                    if self.placed and out.blocks and out.blocks[-1] is self.placed[-1]:
                        out.blocks.pop()
                        placed = _one_after_another([self.placed.pop(), placed])
                    out.blocks.append(placed)
                    self.placed.append(placed)
                else:
                    flags = kind(child, tag)
                    if flags & SKIP:
                        pass
                    elif not flags and child in self.holders:
                        out.flush()
                        self.walk(child, out)
                        out.flush()
                    elif flags:
                        containers.special(renderer, child, tag, flags, out)
                    else:
                        renderer.element(child, out)
            text = child.tail
            if text and (out.inline or not text.isspace()):
                out.inline.append(escape(text))


def section_blocks(renderer: Walker, body: etree._Element, holders: list[etree._Element]) -> list[str] | None:
    """The blocks of ``body`` with each Sphinx toctree of the content written in place, on any page.

    A toctree in a page's body is what its author wrote there (``.. toctree::``), not the theme's
    navigation: the section's list of pages. Kept only on short index pages, it was lost from the
    kernel's ``core-api/index.html`` (an empty "Low level entry and exit"), the Developer's Reference's
    root (the chapters, after a licence), asyncio's "High-level APIs" and rsyslog's section pages (829
    links before their "See also" boxes). ``holders``: the page's toctrees, as the self-check's census met
    them (no walk of the page here). None when the page has none in ``body``.
    """
    in_body = [toc for toc in holders if inside(toc, body)]
    if not in_body:
        return None
    tocs = _toctrees(renderer, body, in_body)
    if not tocs:
        return None
    return _walk_in_place(renderer, body, tocs)[1]


def _walk_in_place(renderer: Walker, body: etree._Element,
                   tocs: dict[etree._Element, list[str]]) -> tuple[_InPlace, list[str]]:
    """The blocks of ``body``, each of ``tocs`` written where it stands, and the walk that wrote them."""
    walk = _InPlace(renderer, {toc: "\n".join(items) for toc, items in tocs.items()})
    out = Out()
    walk.walk(body, out)
    out.flush()
    return walk, out.blocks


def index_blocks(renderer: Walker, body: etree._Element,
                 page: etree._Element | None = None) -> tuple[list[str], str] | None:
    """The blocks of ``body`` with its tables of contents, and the list that follows them; None without any.

    Each table of contents is written where it stands (clang's index: a toctree under each
    section heading), unless the page has one and no heading after it: under the same heading
    either way, it follows the page's own text, as it always has (a DocBook chapter's toc
    precedes its introduction). One the walk does not reach as a block of its own (inside a
    list item, an admonition, chrome), or found beside ``body`` in ``page`` (a DocBook book's
    ``div.toc`` sits beside its title page), follows too.
    """
    tocs = _toctrees(renderer, body) or _generic_tocs(renderer, body)
    if not tocs and page is not None and page is not body:
        tocs = _generic_tocs(renderer, page, first=True)
    if not tocs:
        return None
    walk, blocks = _walk_in_place(renderer, body, tocs)
    after = list(walk.lists.values())  # not reached by the walk: in document order, as found
    if len(walk.placed) == 1:
        at = next((i for i, block in enumerate(blocks) if block is walk.placed[0]), None)
        if at is not None and not any(block[:1] == "#" for block in blocks[at + 1:]):
            after.insert(0, blocks.pop(at))
    return blocks, _one_after_another(after)
