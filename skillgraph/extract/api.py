"""Entry points: from HTML text, a parsed tree, or a Scrapy response.

``extract_response`` reuses the tree Scrapy (parsel) already built, so a page
is parsed once per crawl.  No entry point mutates the tree it is given: the
spider still follows links from it afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING
from urllib.parse import urljoin

import lxml.html
from lxml import etree

from skillgraph.extract.anchors import point_in_page_links
from skillgraph.extract.content import LANDMARK_TAGS, landmark_candidates, main_content
from skillgraph.extract.detect import detect
from skillgraph.extract.facts import Facts
from skillgraph.extract.inline import Linker, escape
from skillgraph.extract.render import Renderer
from skillgraph.extract.select import Scores, descend, layout_chrome, leading_chrome, masses
from skillgraph.extract.shape import Census, fence_sources
from skillgraph.extract.title import first_h1, h1_in_a_section, head_title, page_title, site_banner, title_beside
from skillgraph.extract.toc import index_blocks, is_book_root, is_index_page, section_blocks
from skillgraph.quality.model import FAIL, PASS, Check
from skillgraph.quality.structure import structure_check

if TYPE_CHECKING:
    from scrapy.http import TextResponse

#: Plain lxml elements parse faster than lxml.html's HtmlElement class lookup;
#: the extractor only uses the common ``_Element`` API. ``collect_ids=False``: no
#: hash table of ``id`` attributes (nothing here looks elements up by id), which
#: halves libxml2's parse time of a docs page.
_PARSER = etree.HTMLParser(collect_ids=False)


#: The verdict of an extraction with nothing to check (an empty document).
NOT_CHECKED = Check(PASS, "not checked", 1.0)


@dataclass(frozen=True)
class Extraction:
    """Result of extracting one page."""

    title: str  #: page title (h1 text, else ``<title>``, cleaned)
    markdown: str  #: docs-grade markdown of the main content
    generator: str | None  #: detected family, e.g. ``"sphinx"``, ``"docusaurus"``
    #: the structural self-check of the markdown against the element it came from
    structure: Check = NOT_CHECKED
    #: why the first candidate element was given up for another (None: it was kept)
    reextracted: str | None = None


def _base(root: etree._Element, url: str | None) -> str | None:
    base = root.find("head/base")
    href = base.get("href") if base is not None else None
    if not href:
        return url
    try:
        return urljoin(url, href.strip()) if url else href.strip()
    except ValueError:
        return url


def _tidy(blocks: list[str]) -> list[str]:
    """No rule at the edges (it separated the content from chrome), no heading saying the one before it.

    A title bar repeating the page's heading (Erlang's ``topbar-title``) gives ``# lists`` twice.
    """
    kept: list[str] = []
    for block in blocks:
        if block == "---" and not kept:
            continue
        if kept and block.startswith("#") and kept[-1].startswith("#") and "\n" not in block + kept[-1] \
                and block.lstrip("#").strip().casefold() == kept[-1].lstrip("#").strip().casefold():
            continue
        kept.append(block)
    while kept and kept[-1] == "---":
        kept.pop()
    return kept


def _render(root: etree._Element, body: etree._Element, url: str | None, skip: set[etree._Element] | None,
            facts: Facts | None = None) -> tuple[Renderer, str]:
    renderer = Renderer(Linker(_base(root, url), url), skip, facts)
    markdown = "\n\n".join(_tidy(renderer.blocks(body)))
    if is_index_page(markdown, renderer.destinations) or is_book_root(body):  # walked again, contents in place
        page = root.find("body")
        index = Renderer(renderer.linker, skip, facts)  # from a fresh state (tab labels waiting for panels)
        found = index_blocks(index, body, page if page is not None else root)
        if found is not None:
            blocks, after = found
            renderer, markdown = index, "\n\n".join(_tidy(blocks))
            if after:
                markdown = f"{markdown}\n\n{after}" if markdown else after
    elif facts is not None and facts.toctrees:
        again = Renderer(renderer.linker, skip, facts)
        sections = section_blocks(again, body, facts.toctrees)
        if sections is not None:  # a toctree that is all of its section's content, written in place
            renderer, markdown = again, "\n\n".join(_tidy(sections))
    notes = ["\n\n".join(_tidy(renderer.blocks(note))) for note in notes_beside(body)]
    if notes:
        markdown = "\n\n".join([markdown, *notes]) if markdown else "\n\n".join(notes)
    return renderer, markdown


#: A page's footnotes container: its tags, and the class tokens that say so.
_NOTES_TAGS = frozenset(["div", "section", "aside"])
_NOTES_TOKENS = frozenset(["footnote", "footnotes"])


def notes_beside(content: etree._Element) -> list[etree._Element]:
    """The footnotes that follow the content element, outside it (its markers inside point at them).

    texi2any writes a node's footnotes as ``div.footnote`` after the node's ``div.section`` (or
    chapter), not in it: the content element ended before them, leaving each ``[6](#FOOT6)`` dangling
    (GNU manuals: Octave, Maxima, SBCL...). Notes held inside the content are rendered with it.
    """
    found = []
    for sibling in content.itersiblings():
        tag = sibling.tag
        if tag.__class__ is str and tag in _NOTES_TAGS:
            cls = sibling.get("class")
            if cls and not _NOTES_TOKENS.isdisjoint(cls.split()):
                found.append(sibling)
    return found


def extract_tree(root: lxml.html.HtmlElement, url: str | None = None) -> Extraction:
    """Extract from an already parsed document; ``root`` is not mutated.

    The content element is the generator's landmark when there is one, else the
    structural scorer's column (:mod:`select`); the markdown is checked against
    the element's structure and, when it lost it, re-extracted from the next
    candidate (the scored column, then the whole body).
    """
    if hasattr(root, "getroot"):  # an ElementTree rather than its root element
        root = root.getroot()
    generator = detect(root)
    body = root.find("body")
    if body is None:
        body = root
    facts = Facts()  # what each pass learns of an element, kept for the passes after it
    # the page's code blocks and headings only, each one's verdict kept; the landmarks met on the same walk
    census = Census(body, facts, LANDMARK_TAGS)
    landmark = main_content(root, generator, landmark_candidates(root, body, census.gathered))
    if landmark is not None and landmark.tag == "div" and _wraps(landmark, body):
        landmark = None  # a wrapper of the whole page (Django's div.document) marks no content: score it
    scores = None
    if landmark is None:
        scores = masses(body, facts)
        first = descend(body, scores)
    else:
        first = landmark
    tried: list[tuple[etree._Element, Renderer, str, Check, str]] = []
    banners: list[tuple[etree._Element, str] | None] = []
    h1s: list[etree._Element | None] = []
    element = first
    while True:
        h1 = first_h1(element)
        h1s.append(h1)
        banner = site_banner(root, element, h1)
        banners.append(banner)
        renderer, markdown = _render(root, element, url, _chrome(element, scores, banner[0] if banner else None),
                                     facts)
        # checked as it will be written, final newline included (the counts are the same): the
        # quality gates then find this markdown already scanned (quality.structure.markdown_lines),
        # and when it is written unchanged, as the same string (its hash kept, no second copy)
        written = markdown + "\n" if markdown else ""
        check = structure_check(census.structure(element), written, partial(fence_sources, element))
        tried.append((element, renderer, markdown, check, written))
        if check.status != FAIL:
            break
        following = None
        if element is landmark:
            scores = scores if scores is not None else masses(body, facts)
            following = descend(body, scores)
        if following is None or any(following is t[0] for t in tried):
            following = body
        if any(following is t[0] for t in tried):
            break
        element = following
    chosen = next((t for t in tried if t[3].status != FAIL), tried[0])
    element, renderer, markdown, check, written = chosen
    reextracted = None
    if chosen is not tried[0]:
        reextracted = f"{_name(tried[0][0])}: {tried[0][3].detail}; used {_name(element)}"
    at = next(i for i, t in enumerate(tried) if t is chosen)
    banner = banners[at]
    # an h1 under a section of the page is that section's, not the page's title (Doxygen: the
    # comment's own "# Creating Slots" in a group's detailed description, under "## Classes")
    opens = renderer.first_level in (0, 1) or not renderer.saw_h1 or not h1_in_a_section(markdown)
    if opens and renderer.saw_h1 and markdown[:1] != "#" and element.tag != "body" and title_beside(root, element):
        # prose before the first h1, a title block outside the content: the h1s are sections (a Doxygen
        # \page whose sections are h1s: Eigen's "The Matrix class" was titled by its first section)
        opens = False
    title = banner[1] if banner else page_title(root, element, generator, h1s[at] if opens else None, url)
    above: str | None = None  # a title heading written above the rendered ones
    if title and not (renderer.saw_h1 and opens):
        promoted = head_title(markdown, title)
        if promoted is not None:
            markdown = promoted
        else:
            above = escape(title)
            markdown = f"# {above}\n\n{markdown}" if markdown else f"# {above}"
        written = markdown + "\n" if markdown else ""
    if renderer.fragments:
        written = point_in_page_links(written, renderer.written_headings, element, renderer.anchors,
                                      renderer.fragments, above)
    return Extraction(title=title, markdown=written, generator=generator,
                      structure=check, reextracted=reextracted)


def _chrome(element: etree._Element, scores: Scores | None,
            banner: etree._Element | None) -> set[etree._Element] | None:
    """What the renderer skips beyond what :func:`classify.kind` says: bars, layout chrome, a site banner."""
    skip: set[etree._Element] = set()
    if scores is not None:
        skip.update(scores.navbars)
        skip.update(layout_chrome(element, scores))
        skip.update(leading_chrome(element, scores))
    if banner is not None:
        # the site's name, or the <header> it heads with the rest of the site's banner (Tomcat's version line)
        header = next((a for a in banner.iterancestors() if a.tag == "header" or a is element), None)
        skip.add(header if header is not None and header is not element else banner)
    return skip or None


_UNSEEN = frozenset(["script", "style", "noscript", "template", "link", "meta"])


def _wraps(el: etree._Element, body: etree._Element) -> bool:
    """Is ``el`` all there is in ``body`` (nothing beside it, or beside a wrapper above it, shows)?"""
    node = el
    while node is not body:
        parent = node.getparent()
        if parent is None or (parent.text or "").strip():
            return False
        for sib in parent:
            if (sib.tail or "").strip():
                return False
            if sib is not node and sib.tag.__class__ is str and sib.tag not in _UNSEEN \
                    and (len(sib) or (sib.text or "").strip()):
                return False
        node = parent
    return True


def _name(el: etree._Element) -> str:
    """``div.sect1`` / ``main#content``: a short name for messages."""
    name = str(el.tag)
    if el.get("id"):
        name += "#" + str(el.get("id"))
    elif el.get("class"):
        name += "." + ".".join(str(el.get("class")).split()[:2])
    return name


def parse(html: str | bytes) -> etree._Element | None:
    """Parse a document with the fast parser (None for an empty document)."""
    if isinstance(html, str) and html.lstrip()[:5].lower() == "<?xml":
        html = html.encode("utf-8")
    if not html or html.isspace():  # ``not html.strip()`` without copying the page
        return None
    try:
        return etree.fromstring(html, _PARSER)
    except etree.XMLSyntaxError:
        return None


def extract_html(html: str | bytes, url: str | None = None) -> Extraction:
    """Parse ``html`` and extract it."""
    root = parse(html)
    if root is None:
        return Extraction(title="", markdown="", generator=None)
    return extract_tree(root, url)


def extract_response(response: TextResponse) -> Extraction:
    """Extract from a Scrapy response, reusing the tree Scrapy already parsed."""
    return extract_tree(response.selector.root, response.url)


def html_to_markdown(html: str, url: str | None) -> str:
    """Hook for extract_bench.py's ``py:MODULE:FUNCTION`` extractor form."""
    return extract_html(html, url).markdown
