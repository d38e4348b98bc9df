"""Inline markdown: prose escaping, code spans, emphasis, link targets.

Prose is escaped only where markdown would misread it: ``*`` and backticks
(emphasis and code), ``<`` before something tag-like (so no HTML tag appears
outside code), and block markers at the start of a paragraph.  ``_`` is left
alone: CommonMark does not treat intraword underscores as emphasis, and
escaping it would break identifiers such as ``__init__`` for every reader.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from lxml import etree

from skillgraph.extract.classify import CACHE_LIMIT, SEPARATOR_TOKENS
from skillgraph.urls import join

_TAGLIKE = re.compile(r"<(?=[A-Za-z/!?]|\Z)")  # at the end of a piece too: a link or span may follow
#: A backslash that CommonMark reads as an escape: before ASCII punctuation (or at a piece's end).
_ESCAPING_BACKSLASH = re.compile(r"\\(?=[!-/:-@\[-`{-~]|\Z)")
_ORDERED = re.compile(r"^(\d{1,9})([.)])(?=\s|$)")
_BACKTICKS = re.compile(r"`+")
#: An image file's name or path (docutils and Sphinx give an image without ``:alt:`` its URI for alt text).
_IMAGE_FILE = re.compile(r"[\w./%~+-]+\.(?:png|jpe?g|gif|svg|webp|bmp|ico|tiff?)", re.IGNORECASE)

_CHROME_TAGS = frozenset(["button", "script", "style", "template"])
_CHROME_CLASSES = ("headerlink", "linenos", "viewcode-link", "sr-only", "visually-hidden")


#: What a class string says of its element: 0 nothing, 1 chrome, 2 chrome on an ``<a>`` only (``anchor``),
#: 3 a separator drawn by CSS when on an empty ``<span>`` (:data:`~skillgraph.extract.classify.SEPARATOR_TOKENS`).
_chrome_cache: dict[str, int] = {}


def _chrome_class(cls: str) -> int:
    if any(c in cls for c in _CHROME_CLASSES):
        return 1
    if "anchor" in cls:
        return 2
    return 3 if not SEPARATOR_TOKENS.isdisjoint(cls.split()) else 0


def _is_separator(node: etree._Element) -> bool:
    """An empty ``<span>`` whose class says separator: its mark is CSS, so it stands for a space."""
    return node.tag == "span" and not len(node) and not (node.text or "").strip() \
        and _chrome_cache.get(node.get("class") or "") == 3


def _find_chrome(el: etree._Element) -> list[etree._Element]:
    """Permalinks, line numbers, buttons and screen-reader text below ``el``, and separators drawn by CSS.

    A Python walk with a class test memoised per class string: the equivalent XPath measured
    ~7x slower.
    """
    found = []
    for node in el.iterdescendants():
        tag = node.tag
        if tag.__class__ is not str:
            continue
        if tag in _CHROME_TAGS:
            found.append(node)
            continue
        cls = node.get("class")
        if cls:
            said = _chrome_cache.get(cls)
            if said is None:
                if len(_chrome_cache) > CACHE_LIMIT:  # keep memory bounded over a long crawl
                    _chrome_cache.clear()
                said = _chrome_cache[cls] = _chrome_class(cls)
            if said == 1 or (said == 2 and tag == "a") or (said == 3 and _is_separator(node)):
                found.append(node)
    return found


_PERMALINK_TEXT = frozenset(["¶", "#", "§", "🔗", "◆", "\u200b", ""])  # ◆: Doxygen's member permalink


def escape(text: str) -> str:
    """Escape prose text so markdown renders it literally (cheap `in` tests first).

    A backslash is doubled where markdown would read it as an escape (before ASCII punctuation, or at
    the end of a piece, where the next piece or a line end may follow): ``\\=`` and ``=`` were one text.
    """
    if "\\" in text:
        text = _ESCAPING_BACKSLASH.sub(r"\\\\", text)
    if "<" in text:
        text = _TAGLIKE.sub("&lt;", text)
    if "*" in text:
        text = text.replace("*", "\\*")
    if "`" in text:
        text = text.replace("`", "\\`")
    if "¶" in text:
        text = text.replace("¶", "")
    if "\u200b" in text:
        text = text.replace("\u200b", "")
    return text


def inside(el: etree._Element, scope: etree._Element) -> bool:
    """Is ``el`` below ``scope``?"""
    return any(anc is scope for anc in el.iterancestors())


def text_of(el: etree._Element) -> str:
    """``"".join(el.itertext())``, read by libxml2 in one call (3-4x faster on span soup).

    Both are the element's text nodes in document order (comments and processing
    instructions left out); the text serialiser builds the string in C instead of
    yielding one Python string per node.  An element without children (most code
    spans, links and table cells) is its ``.text``: a tenth of the serialiser's set-up.
    """
    if not len(el):
        return el.text or ""
    return etree.tostring(el, method="text", encoding=str, with_tail=False)


def squash(text: str) -> str:
    """Collapse HTML whitespace to single spaces (what a browser displays)."""
    return " ".join(text.split())


def _gather(el: etree._Element, skip: set[etree._Element], holders: set[etree._Element], parts: list[str]) -> None:
    if el.text:
        parts.append(el.text)
    for child in el:
        if child in holders:
            _gather(child, skip, holders, parts)
        elif child not in skip and isinstance(child.tag, str):
            parts.append(text_of(child))
        elif child in skip and _is_separator(child):
            parts.append(" ")
        if child.tail:
            parts.append(child.tail)


def plain_text(el: etree._Element) -> str:
    """Displayed text of ``el`` without permalink marks, whitespace collapsed.

    The common case (no permalink inside) is one C-level :func:`text_of`; with a
    permalink, only the elements on the path to it are walked in Python and
    every other subtree is still flattened by :func:`text_of`.
    """
    chrome = _find_chrome(el) if len(el) else None  # no element inside: no chrome either
    last = el[-1] if chrome else None
    if chrome and len(chrome) == 1 and chrome[0] is last and not len(last):
        # The one permalink closes ``el`` (an API signature's ``a.headerlink``): the text is the
        # whole text but that element's own, its tail kept; one C-level read, not one per child.
        full = text_of(el)
        tail = last.tail or ""
        text = full[: len(full) - len(last.text or "") - len(tail)] + (" " if _is_separator(last) else "") + tail
    elif chrome:
        holders: set[etree._Element] = set()
        for node in chrome:
            parent = node.getparent()
            while parent is not None and parent is not el and parent not in holders:
                holders.add(parent)
                parent = parent.getparent()
        parts: list[str] = []
        _gather(el, set(chrome), holders, parts)
        text = "".join(parts)
    else:
        text = text_of(el)
    if "¶" in text or "\u200b" in text:
        text = text.replace("¶", "").replace("\u200b", "")
    return squash(text)


def guard_line(line: str) -> str:
    """Escape a leading character that would turn a prose line into a block marker."""
    first = line[:1]
    if first in ("#", ">", "|") or line.startswith(("- ", "+ ", "~~~", "===", "---")):
        return "\\" + line
    if first in ("-", "+", "=") and len(line) == 1:
        return "\\" + line
    if first.isdigit():
        return _ORDERED.sub(r"\1\\\2", line, count=1)
    return line


#: :func:`guard_line`'s escape at the start of a heading's text, where nothing is a block marker ("#" aside:
#: ``# #`` is an empty heading, its "#" a closing sequence).
_HEADING_GUARD = re.compile(r"^(\d{1,9})\\(?=[.)](?:\s|$))|^\\(?=[>|+~=-])")


def unguard_heading(text: str) -> str:
    """A heading's text without :func:`guard_line`'s escape: an ATX heading's content is inline only.

    ``# 5\\. Managing Packages`` rendered right but read oddly to anyone reading the markdown
    (a model, a diff): every numbered Sphinx or DocBook heading carried the backslash.
    """
    if text[:1] == "\\" or text[:1].isdigit():
        return _HEADING_GUARD.sub(lambda m: m.group(1) or "", text, count=1)
    return text


def code_span(text: str) -> str:
    """Inline code with a delimiter longer than any backtick run inside."""
    text = squash(text)
    if not text:
        return ""
    if "`" not in text:
        return f"`{text}`"
    fence = "`" * (max(len(m) for m in _BACKTICKS.findall(text)) + 1)
    return f"{fence} {text} {fence}"


def wrap(content: str, mark: str) -> str:
    """Wrap ``content`` in an emphasis mark, keeping outer whitespace outside it."""
    core = content.strip()
    if not core:
        return content
    lead = content[: len(content) - len(content.lstrip())]
    trail = content[len(content.rstrip()) :]
    return f"{lead}{mark}{core}{mark}{trail}"


def is_permalink_text(text: str) -> bool:
    """True for the visible text of a heading permalink (``¶``, ``#``, ``§``...)."""
    return text.strip() in _PERMALINK_TEXT


class Linker:
    """Resolves hrefs against the page: absolute URLs, ``#anchor`` kept relative.

    Results are cached per href: docs pages repeat the same targets many times.
    """

    __slots__ = ("_anchors", "_cache", "base", "page")

    def __init__(self, base: str | None, page: str | None) -> None:
        self.base = base
        self.page = page.split("#", 1)[0] if page else None
        self._anchors = self.page + "#" if self.page else None  #: the page's own URL before a fragment
        self._cache: dict[str, str | None] = {}

    def target(self, href: str) -> str | None:
        """Markdown link destination for ``href``, or None when it is no link."""
        cache = self._cache
        if href in cache:  # not try/except KeyError: most hrefs of a page are new, and a raise costs ~2 µs
            return cache[href]
        result = cache[href] = self._resolve(href.strip())
        return result

    def _resolve(self, href: str) -> str | None:
        if not href or href == "#" or href.lower().startswith(("javascript:", "data:")):
            return None
        if href.startswith("#"):
            return _encode(href)
        if self.base and not href.startswith(("http://", "https://", "mailto:")):
            try:
                href = join(self.base, href)
            except ValueError:
                return None
        if self._anchors and href.startswith(self._anchors):
            href = href[len(self._anchors) - 1 :]
        elif self.page and href == self.page and urlsplit(href).fragment == "":
            return None
        return _encode(href)


def _encode(href: str) -> str:
    if " " in href or "(" in href or ")" in href or "<" in href or ">" in href:
        href = (
            href.replace(" ", "%20")
            .replace("(", "%28")
            .replace(")", "%29")
            .replace("<", "%3C")
            .replace(">", "%3E")
        )
    return href


def names_a_file(alt: str, src: str | None) -> bool:
    """Is an image's ``alt`` its own address rather than a description (``images/banner-640x320.svg``)?

    docutils writes an image's URI as its alt text when the author gave none; a reader of the page
    sees the picture, never that path, and in markdown it would stand as a line of text.
    """
    if src:
        src = src.strip()
        stem = src.rsplit(".", 1)[0] if "." in src.rsplit("/", 1)[-1] else src
        # the path or its file name; a path without the extension (texinfo: alt="fig/log1p" for fig/log1p.png)
        if alt in (src, src.rsplit("/", 1)[-1]) or ("/" in alt and (alt == stem or stem.endswith("/" + alt))):
            return True
    return _IMAGE_FILE.fullmatch(alt) is not None
