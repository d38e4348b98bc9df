"""The page's title, and the content's first heading made its H1 when it says the title."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from lxml import etree

from skillgraph.extract.inline import escape, inside, plain_text, squash
from skillgraph.extract.shape import visible
from skillgraph.markdown import HEADING, scan

_first_heading = etree.XPath("//@id[. = 'firstHeading']/..")  # ``//*[@id='firstHeading']``, read as _title_class is
_TITLE_SEPARATORS = (" | ", " — ", " – ", " · ", " :: ", " - ")


def _clean_title(text: str, url: str | None = None, heading: str = "") -> str:
    """``<title>`` without the site's name: its suffix (``Page — Project 1.0 documentation``), or its prefix
    when only the part after the separator shares a word with the page's file name or its first heading
    (``Postfix manual - qmqp-sink(1)`` at ``qmqp-sink.1.html``: every man page was titled "Postfix manual";
    ``GAP (ref) - Chapter 4: The Programming Language`` above ``4 The Programming Language``)."""
    text = squash(text)
    for head, tail in _halves(text):
        if head and tail and (url or heading):
            page = _words(url.rsplit("/", 1)[-1] if url else "") | title_words(heading)
            if _words(tail) & page and not _words(head) & page:
                return tail
        if head:
            return head
    return text


def _halves(text: str) -> Iterator[tuple[str, str]]:
    """``<title>`` split at its last separator, for each separator it holds, in :data:`_TITLE_SEPARATORS` order."""
    for sep in _TITLE_SEPARATORS:
        if sep in text:
            head, _, tail = text.rpartition(sep)
            yield head.strip(), tail.strip()


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold()))


#: Elements whose class holds ``title`` (substring in C, the class token in Python), found from their
#: ``class`` attributes: libxml2 walks the attribute nodes and takes each one's parent ~4x faster than
#: it tests a predicate on every element (``//*[contains(@class, 'title')]``: the same elements, in
#: the same document order, since an element has one ``class`` at most).
_title_class = etree.XPath("//@class[contains(., 'title')]/..")
#: Not ``find(".//h1")``: lxml's iterator looks ahead for the next match, which for the one
#: ``<h1>`` of a page walks the rest of the page (~0.25 ms on a Python docs page); XPath stops.
_first_h1 = etree.XPath("descendant::h1[1]")


def _h1_in(scope: etree._Element) -> etree._Element | None:
    """The first ``<h1>`` below ``scope``, in document order (``scope.find(".//h1")``)."""
    found = _first_h1(scope)
    return found[0] if isinstance(found, list) and found and isinstance(found[0], etree._Element) else None


def first_h1(main: etree._Element) -> etree._Element | None:
    """The content's ``<h1>``: ``main`` itself when it is one, else the first below it.

    :func:`site_banner` and :func:`page_title` both start from it; the extractor finds it
    once per candidate element and hands it to both.
    """
    return main if main.tag == "h1" else _h1_in(main)


def _title_block(root: etree._Element) -> etree._Element | None:
    """The first element of the document, in document order, with a ``title`` class token."""
    found: Any = _title_class(root)
    return next((el for el in found if "title" in el.get("class", "").split()), None)


def page_title(root: etree._Element, main: etree._Element, generator: str | None,
               h1: etree._Element | None, url: str | None = None) -> str:
    """The h1 of the content (MediaWiki: ``#firstHeading``), a title block beside it, else ``<title>`` cleaned.

    ``h1`` is :func:`first_h1` of ``main``.
    """
    heading = _first_heading(root) if generator == "mediawiki" else None
    for found in (h1, first_h1(heading[0]) if heading else None):
        if found is not None:
            text = plain_text(found)
            if text:
                return text
    if main.tag != "body" and (h1 if main.tag != "h1" else _h1_in(main)) is None:
        text = title_beside(root, main)
        if text:
            return text
    title = root.find("head/title")
    if title is None:
        title = root.find(".//title")
    if title is None or not title.text:
        return ""
    heading = ""
    if any(sep in title.text for sep in _TITLE_SEPARATORS):
        first = next(main.iter(*_HEADING_TAGS), None)  # the first heading says which part is the page's
        heading = plain_text(first) if first is not None else ""
    return _clean_title(title.text, url, heading)


def title_beside(root: etree._Element, main: etree._Element) -> str:
    """A title block left outside the content column (Doxygen ``div.title``): its own line, or ""."""
    block = _title_block(root)
    if block is not None and not inside(block, main):
        text = _own_line(block)
        if 0 < len(text) <= 200:
            return text
    return ""


_HEADING_TAGS = frozenset(["h1", "h2", "h3", "h4", "h5", "h6"])


def site_banner(root: etree._Element, main: etree._Element,
                h1: etree._Element | None) -> tuple[etree._Element, str] | None:
    """The content's ``<h1>`` when it names the site, not the page, with the page's own heading text.

    Old hand-written sites print the site's name as the ``<h1>`` of every page and the page's
    heading right after it (libxml2: ``<h1>The XML C parser and toolkit of Gnome</h1>
    <h2>Memory Management</h2>`` under ``<title>Memory Management</title>``).  The ``<title>``
    tells them apart: the banner's words are not all in it, the heading after it says it.  The
    banner is then left out and the heading is the page's title.  ``h1`` is :func:`first_h1` of ``main``.
    """
    if h1 is None:
        return None
    title = root.find("head/title")
    said = title_words(title.text or "") if title is not None else set()
    banner = title_words(plain_text(h1))
    if not said or not banner:
        return None
    if banner <= said:
        return _site_half_banner(title.text or "" if title is not None else "", main, h1, banner)
    for seen, sib in enumerate(h1.itersiblings()):
        if seen >= 3 or not isinstance(sib.tag, str):
            break
        if sib.tag in _HEADING_TAGS:
            text = plain_text(sib)
            words = title_words(text)
            return (h1, text) if words and words <= said else None
    return None


def _site_half_banner(title: str, main: etree._Element, h1: etree._Element,
                      banner: set[str]) -> tuple[etree._Element, str] | None:
    """The ``<h1>`` of a ``<header>`` when it says the site's half of a ``Site - Page`` title and a later heading
    says the page's.

    Tomcat's XSLT puts ``<h1>Apache Tomcat 10</h1>`` in the page's ``<header>`` under ``<title>Apache Tomcat 10
    (10.1.60) - SSL/TLS Configuration How-To``, the page's own ``<h2>`` further down: 95 of 103 pages were
    titled "Apache Tomcat 10".
    """
    site, page = next(_halves(squash(title)), ("", ""))
    page_words = title_words(page)
    if not page_words or not banner <= title_words(site) or banner <= page_words:
        return None
    if not any(a.tag == "header" for a in h1.iterancestors()):
        return None  # a page's own h1 ("What's New in Python 2.6 — Python 3.11 documentation" names the page first)
    after = False
    memo: dict[etree._Element, bool] = {}
    for heading in main.iter(*_HEADING_TAGS):
        if heading is h1:
            after = True
        elif after and visible(heading, main, memo):  # not the sidebar's "Links"
            text = plain_text(heading)
            words = title_words(text)
            return (h1, text) if words and words <= page_words else None
    return None


_BLOCK_TAGS = frozenset(["div", "p", "ul", "ol", "dl", "table", "pre", "blockquote"])


def _own_line(el: etree._Element) -> str:
    """The text of a title block without the blocks inside it.

    Doxygen's ``div.title`` holds the title and, as a ``div.ingroups`` inside it, the groups
    the page belongs to: ``apop_name Struct Reference`` is the title, not
    ``apop_name Struct ReferencePublic functions, structs, and types``.
    """
    if next((d for d in el.iterdescendants() if d.tag in _BLOCK_TAGS), None) is None:
        return plain_text(el)
    parts = [el.text or ""]
    for child in el:
        if child.tag not in _BLOCK_TAGS and isinstance(child.tag, str):
            parts.append(plain_text(child))
        parts.append(child.tail or "")
    return squash("".join(parts))


_LINK_TARGET = re.compile(r"\]\([^()\s]*\)")
_WORD = re.compile(r"\w+")


def title_words(text: str) -> set[str]:
    """Words of a title or heading line: no link targets, no section numbers (``8``, ``17.1``)."""
    return {w.casefold() for w in _WORD.findall(_LINK_TARGET.sub("]", text)) if not w.isdigit()}


def head_title(markdown: str, title: str) -> str | None:
    """The markdown with its first heading made the H1 when it says the title, else None.

    "Says" is every word of the heading within the title's: texinfo titles a page
    ``Input Control (GNU M4 1.4.19 macro processor)`` above its heading ``8 Input control``.
    """
    if not markdown.startswith("#"):
        return None
    line, _, rest = markdown.partition("\n")
    level = len(line) - len(line.lstrip("#"))
    words = title_words(line[level:])
    if level < 2 or not words or not _says(line[level:], words, title):
        return None
    return f"# {line[level:].strip()}" + (f"\n{rest}" if rest else "")


_SECTION_NUMBER = re.compile(r"\s*(\d+(?:\.\d+)+)\s")


def _says(heading: str, words: set[str], title: str) -> bool:
    """Does a heading say the page's ``<title>``: all its words in it, two thirds of three or more (Maxima's
    ``22.2 Functions and Variables for fft`` under ``Functions and Variables for fast Fourier transform``), or
    its section number (SWI-Prolog's ``4.17 Input and output`` under ``Reference Manual: Section 4.17``)?"""
    said = title_words(escape(title))
    if words <= said or (len(words) >= 3 and 3 * len(words & said) >= 2 * len(words)):
        return True
    number = _SECTION_NUMBER.match(heading)
    return number is not None and number.group(1) in title.split()


def h1_in_a_section(markdown: str) -> bool:
    """Does the markdown's first H1 come after a lower heading with something under it?

    Such an h1 is a section's, not the page's title: Doxygen writes a group's title block outside
    its content and the comment's own markdown headings as h1s in the detailed description
    (``## Classes``, a member table, ``## Detailed Description``, ``# Creating Slots``).  A kicker
    heading right above the title (gi-docgen's ``### Method`` then ``# Pango.Layout.get_iter``)
    has nothing under it: the h1 still opens the page.
    """
    lower = under = False
    for line in scan(markdown):
        if line.kind == HEADING:
            if line.level == 1:
                return under
            lower = True
        elif lower and line.text.strip():
            under = True
    return False
