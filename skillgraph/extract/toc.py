"""An index page's table of contents: elsewhere navigation, there the page itself.

Tables of contents are skipped as chrome everywhere (they repeat the sidebar),
which leaves index pages (Sphinx ``contents.html``, ``library/windows.html``,
a DocBook book's ``index.html``) nearly empty; for those the child pages, with
their links, are the content. Only the top levels are kept: Sphinx's
``contents.html`` full tree is over a megabyte.
"""

from __future__ import annotations

from lxml import etree

from skillgraph.extract.blocks import Walker
from skillgraph.extract.inline import escape, plain_text

#: Below this many characters a page is an index page whose table of contents is its content.
INDEX_PAGE_CHARS = 400
#: Levels of a generic table of contents kept on an index page.
TOC_DEPTH = 2
_LISTS = frozenset(["ul", "ol", "dl"])


def _toctrees(renderer: Walker, body: etree._Element) -> list[str]:
    """Sphinx toctrees: the first level (``li.toctree-l1``), links kept."""
    items = []
    for toc in body.iter("div"):
        if "toctree-wrapper" not in (toc.get("class") or "").split():
            continue
        for li in toc.iter("li"):
            if "toctree-l1" in (li.get("class") or "").split():
                text = " ".join(renderer.blocks(li, exclude=li.find("ul"))).strip()
                if text:
                    items.append(f"- {text}")
    return items


def _generic_toc(renderer: Walker, body: etree._Element) -> list[str]:
    """The first ``.toc`` container (DocBook ``div.toc``, many themes): its links, nested by list depth."""
    toc = next((el for el in body.iter("div", "nav", "dl", "ul", "ol")
                if "toc" in (el.get("class") or "").split()), None)
    if toc is None:
        return []
    items = []
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


def with_toc(renderer: Walker, body: etree._Element, markdown: str, page: etree._Element | None = None) -> str:
    """``markdown`` followed by the table of contents of ``body`` (else of ``page``), when there is one."""
    items = _toctrees(renderer, body) or _generic_toc(renderer, body)
    if not items and page is not None and page is not body:
        items = _generic_toc(renderer, page)  # a DocBook book's div.toc sits beside its title page
    if not items:
        return markdown
    return f"{markdown}\n\n" + "\n".join(items) if markdown else "\n".join(items)
