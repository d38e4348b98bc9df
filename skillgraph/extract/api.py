"""Entry points: from HTML text, a parsed tree, or a Scrapy response.

``extract_response`` reuses the tree Scrapy (parsel) already built, so a page
is parsed once per crawl.  No entry point mutates the tree it is given: the
spider still follows links from it afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin

import lxml.html
from lxml import etree

from skillgraph.extract.content import main_content
from skillgraph.extract.detect import detect
from skillgraph.extract.fallback import article_body
from skillgraph.extract.inline import Linker, escape, plain_text, squash
from skillgraph.extract.render import Renderer

if TYPE_CHECKING:
    from scrapy.http import TextResponse

#: Plain lxml elements parse faster than lxml.html's HtmlElement class lookup;
#: the extractor only uses the common ``_Element`` API.
_PARSER = etree.HTMLParser()
_first_heading = etree.XPath("//*[@id='firstHeading']")
_TITLE_SEPARATORS = (" | ", " — ", " – ", " · ", " :: ", " - ")


@dataclass(frozen=True)
class Extraction:
    """Result of extracting one page."""

    title: str  #: page title (h1 text, else ``<title>``, cleaned)
    markdown: str  #: docs-grade markdown of the main content
    generator: str | None  #: detected family, e.g. ``"sphinx"``, ``"docusaurus"``


def _clean_title(text: str) -> str:
    """``<title>`` without the site suffix (``Page — Project 1.0 documentation``)."""
    text = squash(text)
    for sep in _TITLE_SEPARATORS:
        if sep in text:
            head = text.rsplit(sep, 1)[0].strip()
            if head:
                return head
    return text


def _title(root: etree._Element, main: etree._Element | None, generator: str | None) -> str:
    heading = _first_heading(root) if generator == "mediawiki" else None
    for scope in (main, heading[0] if heading else None):
        if scope is None:
            continue
        h1 = scope if scope.tag == "h1" else scope.find(".//h1")
        if h1 is not None:
            text = plain_text(h1)
            if text:
                return text
    title = root.find("head/title")
    if title is None:
        title = root.find(".//title")
    return _clean_title(title.text or "") if title is not None and title.text else ""


def _base(root: etree._Element, url: str | None) -> str | None:
    base = root.find("head/base")
    href = base.get("href") if base is not None else None
    if not href:
        return url
    try:
        return urljoin(url, href.strip()) if url else href.strip()
    except ValueError:
        return url


#: Below this many characters a page is an index page whose table of contents is its content.
INDEX_PAGE_CHARS = 400


def _with_toctrees(renderer: Renderer, body: etree._Element, markdown: str) -> str:
    """Keep a Sphinx index page's toctree: elsewhere it is navigation, here it is the page.

    Toctrees are skipped as chrome everywhere (they repeat the sidebar), which
    leaves pages such as ``contents.html`` or ``library/windows.html`` nearly
    empty; for those the child pages, with their links, are the content. Only
    the first level is kept: ``contents.html``'s full tree is over a megabyte.
    """
    items = []
    for toc in body.iter("div"):
        if "toctree-wrapper" not in (toc.get("class") or "").split():
            continue
        for li in toc.iter("li"):
            if "toctree-l1" in (li.get("class") or "").split():
                text = " ".join(renderer.blocks(li, exclude=li.find("ul"))).strip()
                if text:
                    items.append(f"- {text}")
    if not items:
        return markdown
    return f"{markdown}\n\n" + "\n".join(items) if markdown else "\n".join(items)


def extract_tree(root: lxml.html.HtmlElement, url: str | None = None) -> Extraction:
    """Extract from an already parsed document; ``root`` is not mutated."""
    if hasattr(root, "getroot"):  # an ElementTree rather than its root element
        root = root.getroot()
    generator = detect(root)
    main = main_content(root, generator)
    body = main
    if body is None:
        body = article_body(root, url)
    if body is None:
        body = root.find("body")
    if body is None:
        body = root
    renderer = Renderer(Linker(_base(root, url), url))
    markdown = renderer.markdown(body)
    if len(markdown) < INDEX_PAGE_CHARS:
        markdown = _with_toctrees(renderer, body, markdown)
    title = _title(root, main if main is not None else body, generator)
    if title and not renderer.saw_h1:
        markdown = f"# {escape(title)}\n\n{markdown}" if markdown else f"# {escape(title)}"
    return Extraction(title=title, markdown=markdown + "\n" if markdown else "", generator=generator)


def parse(html: str | bytes) -> etree._Element | None:
    """Parse a document with the fast parser (None for an empty document)."""
    if isinstance(html, str) and html.lstrip()[:5].lower() == "<?xml":
        html = html.encode("utf-8")
    if not html or not html.strip():
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
