"""In-page links pointed at the heading a markdown reader finds, not at an HTML id the markdown lost.

An HTML page links within itself by ids: a section's (``<section id="source">``), a label before a
heading (Sphinx's ``<span id="s-f-source"></span><h3>``, texinfo's ``<span id="Tools-1">``), an API
entry's (``<dt id="json.dumps">``), an anchor in the text (``<a name="index-x">``). Markdown has no ids:
a viewer anchors each heading by its slug (GitHub's: ``5.6.1. Source`` -> ``561-source``). Written as
they were, such links pointed at nothing (Debian Policy: 484 of 486; Wireshark's guides: every one).
Each is pointed at the heading the id labels, or, for an API entry or an anchor in the text, at the
heading of the section it is written in; any other fragment is left as written (found by a walk of
the whole page, it cost a millisecond a page of the Python docs). Links to other pages keep their
fragment (their page is extracted alone).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from lxml import etree

from skillgraph.extract.classify import HEADINGS
from skillgraph.markdown import CODE_SPAN

#: An in-page link's destination, as the renderer writes it: ``](#fragment)``.
_IN_PAGE = re.compile(r"\]\(#([^()\s]+)\)")
#: What GitHub's slug drops: anything but letters, digits, ``_``, ``-`` and spaces.
_NOT_SLUG = re.compile(r"[^\w\- ]")
_LINK = re.compile(r"!?\[((?:[^\[\]\\]|\\.)*)\]\([^)]*\)")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_HELD = re.compile("\ue000(\\d+)\ue001")


def heading_slug(title: str) -> str:
    """The anchor a markdown viewer gives a heading, as GitHub makes it, from the heading's markdown text.

    The text as it shows (links and code spans as their text, emphasis marks and escapes gone,
    entities read), lower case, punctuation dropped, each space a ``-``.
    """
    code: list[str] = []

    def hold(span: re.Match[str]) -> str:  # code as it is: markup is read only outside code
        code.append(span.group(0).strip("`").strip())
        return f"\ue000{len(code) - 1}\ue001"

    text = _shown(CODE_SPAN.sub(hold, title)) if "`" in title else _shown(title)
    if code:
        text = _HELD.sub(lambda m: code[int(m.group(1))], text)
    return _NOT_SLUG.sub("", text.strip().lower()).replace(" ", "-")


def _shown(markdown: str) -> str:
    """Text of inline markdown outside code: links as their text, emphasis marks and escapes gone, entities read."""
    if "[" in markdown:
        markdown = _LINK.sub(lambda m: _shown(m.group(1)), markdown)
    return html.unescape(_ESCAPE.sub(r"\1", markdown.replace("**", "").replace("*", "")))


def slugs(titles: Iterable[str]) -> list[str]:
    """The anchors of headings with these texts, in order; a slug met again takes ``-1``, ``-2``... (GitHub's)."""
    seen: dict[str, int] = {}
    found = []
    for title in titles:
        slug = heading_slug(title)
        n = seen.get(slug)
        seen[slug] = 0 if n is None else n + 1
        found.append(slug if n is None else f"{slug}-{n + 1}")
    return found


def _ids(el: etree._Element) -> Iterable[str]:
    for attr in ("id", "name"):
        value = el.get(attr)
        if value:
            yield value


def _empty(el: etree._Element) -> bool:
    return not (el.text or "").strip() and not len(el)


def heading_ids(heading: etree._Element, top: etree._Element) -> set[str]:
    """The ids that name ``heading``: its own and its children's, empty labels just before it, and each
    enclosing section it opens (an element up to ``top`` whose first heading it is) with its empty labels."""
    found = set(_ids(heading))
    for child in heading.iterdescendants():
        found.update(_ids(child))
    before = heading.getprevious()
    while before is not None and isinstance(before.tag, str) and _empty(before) and not (before.tail or "").strip():
        found.update(_ids(before))
        before = before.getprevious()
    node = heading
    while node is not top:
        parent = node.getparent()
        if parent is None or next(parent.iter(*HEADINGS), None) is not heading:
            break  # a section is named by its first heading (a nav bar before it aside: texinfo's div.header)
        found.update(_ids(parent))
        for sibling in parent:  # the section's own empty labels before its heading
            if sibling is node:
                break
            if isinstance(sibling.tag, str) and _empty(sibling):
                found.update(_ids(sibling))
        node = parent
    return found


def point_in_page_links(markdown: str, written: list[tuple[etree._Element, str]], top: etree._Element,
                        under: dict[str, int], fragments: set[str], before: str | None = None) -> str:
    """``markdown`` with each in-page link pointed at its heading's slug (see the module's docstring).

    ``written``: the headings the renderer wrote, each element with its markdown text, in order;
    ``top``: the element the markdown was rendered from; ``under``: ids of other elements the renderer
    wrote (API entries, anchors in the text), each with the place in ``written`` of the heading above it;
    ``fragments``: the in-page fragments the renderer linked to; ``before``: the text of a title heading
    written above them all, if any (it takes its slug first).
    """
    if not written or not fragments:
        return markdown
    anchors = slugs(([before] if before is not None else []) + [text for _, text in written])
    if before is not None:
        anchors.pop(0)
    target: dict[str, str] = {}
    for (element, _), slug in zip(written, anchors, strict=True):
        for name in heading_ids(element, top):
            target.setdefault(name, slug)
    for name in fragments - target.keys():
        place = under.get(name)
        if place is not None:
            target[name] = anchors[place]
    if target.keys().isdisjoint(fragments):
        return markdown
    # the whole text at once: "](#" and a fragment the page labels, inside a code block, is not met in practice
    return _IN_PAGE.sub(lambda m: f"](#{target.get(m.group(1), m.group(1))})", markdown)
