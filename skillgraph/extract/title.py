"""The page's title, and the content's first heading made its H1 when it says the title."""

from __future__ import annotations

import re

from lxml import etree

from skillgraph.extract.inline import escape, plain_text, squash

_first_heading = etree.XPath("//*[@id='firstHeading']")
_TITLE_SEPARATORS = (" | ", " — ", " – ", " · ", " :: ", " - ")


def _clean_title(text: str) -> str:
    """``<title>`` without the site suffix (``Page — Project 1.0 documentation``)."""
    text = squash(text)
    for sep in _TITLE_SEPARATORS:
        if sep in text:
            head = text.rsplit(sep, 1)[0].strip()
            if head:
                return head
    return text


_title_class = etree.XPath("//*[contains(@class, 'title')]")  # substring in C, the class token in Python
#: Not ``find(".//h1")``: lxml's iterator looks ahead for the next match, which for the one
#: ``<h1>`` of a page walks the rest of the page (~0.25 ms on a Python docs page); XPath stops.
_first_h1 = etree.XPath("descendant::h1[1]")


def _h1_in(scope: etree._Element) -> etree._Element | None:
    """The first ``<h1>`` below ``scope``, in document order (``scope.find(".//h1")``)."""
    found = _first_h1(scope)
    return found[0] if isinstance(found, list) and found and isinstance(found[0], etree._Element) else None


def page_title(root: etree._Element, main: etree._Element, generator: str | None) -> str:
    """The h1 of the content (MediaWiki: ``#firstHeading``), a title block beside it, else ``<title>`` cleaned."""
    heading = _first_heading(root) if generator == "mediawiki" else None
    for scope in (main, heading[0] if heading else None):
        if scope is None:
            continue
        h1 = scope if scope.tag == "h1" else _h1_in(scope)
        if h1 is not None:
            text = plain_text(h1)
            if text:
                return text
    if _h1_in(main) is None and main.tag != "body":
        # A title block left outside the content column (Doxygen ``div.title``).
        found = next((el for el in _title_class(root) if "title" in el.get("class", "").split()), None)
        if found is not None and not _inside(found, main):
            text = plain_text(found)
            if 0 < len(text) <= 200:
                return text
    title = root.find("head/title")
    if title is None:
        title = root.find(".//title")
    return _clean_title(title.text or "") if title is not None and title.text else ""


def _inside(el: etree._Element, scope: etree._Element) -> bool:
    return any(a is scope for a in el.iterancestors())


_LINK_TARGET = re.compile(r"\]\([^()\s]*\)")
_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
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
    words = _words(line[level:])
    if level < 2 or not words or not words <= _words(escape(title)):
        return None
    return f"# {line[level:].strip()}" + (f"\n{rest}" if rest else "")
