"""Fenced code blocks: byte-faithful text, language from the markup.

Highlighters wrap every token in a span (Pygments, Prism, Shiki) and some put
each line in its own element (Docusaurus ends lines with ``<br>``, Expressive
Code uses one ``<div>`` per line).  The common case, plain span soup, is
flattened by libxml2 in one call (:func:`~skillgraph.extract.inline.text_of`); only blocks that contain line
elements or line numbers take the slower Python walk.
"""

from __future__ import annotations

import re

from lxml import etree

from skillgraph.extract.classify import SKIP, kind
from skillgraph.extract.inline import text_of

_LANG_PREFIXES = ("language-", "lang-", "highlight-source-", "highlight-", "mw-highlight-lang-", "brush:")
_KNOWN_LANGS = frozenset(
    [
        "python", "rust", "javascript", "js", "typescript", "ts", "bash", "sh", "shell", "console", "json", "yaml",
        "toml", "c", "cpp", "java", "go", "html", "css", "sql", "ruby", "php", "kotlin", "swift", "xml", "ini", "diff",
        "text",
    ]
)
_LANG_ALIASES = {"python3": "python", "py3": "python", "pycon3": "pycon", "default": "", "none": ""}

_LINE_ELEMENTS = ("br", "div", "p", "button")
#: What a browser draws as boxes, not as lines of text: a ``<pre>`` holding one lays a page out.
_LAYOUT_TAGS = ("table", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "dl", "blockquote")
_LAYOUT_SET = frozenset(_LAYOUT_TAGS)


def _needs_walk(pre: etree._Element) -> bool:
    """True when line elements or a line-number gutter make plain ``itertext`` wrong.

    Python checks, not XPath: a ``descendant::*[...]`` query measured 5x slower on
    Pygments span soup.  Gutters (Pygments ``span.linenos``) open every line, so
    looking at the first few children of the block (or of its ``<code>``) finds them.
    A block of plain text (no child element) needs neither look.
    """
    if not len(pre) and pre.tag not in _LINE_ELEMENTS:
        return False
    if next(pre.iter(*_LINE_ELEMENTS), None) is not None:
        return True
    if next(pre.iter(*_LAYOUT_TAGS), None) is not None:
        return True  # a popup menu inside the block (chrome, skipped by the walk), or layout
    parent = pre[0] if len(pre) == 1 and pre[0].tag == "code" else pre
    for i, child in enumerate(parent):
        cls = child.get("class")
        if cls and ("lineno" in cls or "gutter" in cls):
            return True
        if i >= 3:
            break
    return False


_LINE_TAGS = frozenset(["div", "p"])


#: Class tokens of a table laid out a row a line of code: Scribble's listings (``RktBlk``) and definition boxes
#: (``RBoxed``: a form's or procedure's signature and contracts).
_LISTING_TABLE_TOKENS = frozenset(["RktBlk", "RBoxed"])
#: Class tokens of a flow of code without a ``<pre>``: Scribble's ``blockquote.SCodeFlow`` (one line: a ``<p>``).
CODE_FLOW_TOKENS = frozenset(["SCodeFlow"])


def is_listing_table(table: etree._Element) -> bool:
    """Is ``table`` a listing laid out a row a line (Scribble's ``table.RktBlk``, every Racket manual's code)?"""
    cls = table.get("class")
    return bool(cls) and not _LISTING_TABLE_TOKENS.isdisjoint(cls.split())


def is_code_rows(table: etree._Element) -> bool:
    """Is ``table`` one column of code, a row a line (fpdoc's declarations: ``<td><p><tt><span class="code">``)?

    Two rows or more, each with one cell whose whole text is one element whose class says ``code``. A column
    of separate items in ``<code>`` (PostgreSQL's list of ``plpy`` functions) says nothing of lines: a table.
    """
    rows = 0
    for tr in table.iter("tr"):
        cells = [c for c in tr if c.tag in ("td", "th")]
        if len(cells) != 1:
            return False
        cell = cells[0]
        mono = next((el for el in cell.iter() if "code" in (el.get("class") or "").split()), None)
        if mono is None or "".join(text_of(cell).split()) != "".join(text_of(mono).split()):
            return False
        rows += 1
    return rows >= 2


def is_code_flow(el: etree._Element) -> bool:
    """Is ``el`` a code flow that no ``<pre>`` or listing table holds (Scribble's one-line examples)?"""
    cls = el.get("class")
    return bool(cls) and not CODE_FLOW_TOKENS.isdisjoint(cls.split()) and next(el.iter("pre", "table"), None) is None


def is_prompt(pre: etree._Element) -> bool:
    """Is ``pre`` a notebook cell's execution count (nbsphinx's ``div.prompt > div.highlight > pre``: ``[4]:``)?"""
    parent = pre.getparent()
    cls = parent.get("class") if parent is not None else None
    if not cls:
        return False
    if "prompt" in cls:
        return "prompt" in cls.split()
    if "highlight" not in cls:  # most blocks: no second look
        return False
    above = parent.getparent()
    outer = above.get("class") if above is not None else None
    return outer is not None and "prompt" in outer and "prompt" in outer.split()


def is_gutter(pre: etree._Element) -> bool:
    """Is ``pre`` a column of line numbers in the cell before its listing's (YARD's ``td > pre.lines``)?"""
    cell = pre.getparent()
    if cell is None or cell.tag != "td" or len(pre):
        return False
    numbers = (pre.text or "").split()
    if not numbers or not all(n.isdigit() for n in numbers):
        return False
    listing = cell.getnext()
    return listing is not None and listing.tag == "td" and next(listing.iter("pre"), None) is not None


def _chrome(el: etree._Element, tag: str) -> bool:
    if tag == "button":
        return True
    if tag in _LAYOUT_SET:
        return bool(kind(el, tag) & SKIP)  # a popup menu in the text (Bootstrap's ul.dropdown-menu)
    cls = el.get("class")
    if not cls:
        return False
    if "lineno" in cls or "gutter" in cls or "copy" in cls:
        return True
    return tag == "div" and bool(kind(el, tag) & SKIP)  # Doxygen's hidden tooltips (div.ttc) among the lines


def _walk(el: etree._Element, parts: list[str]) -> None:
    """Text of ``el``'s lines.  A token without child elements (most of a highlighter's spans)
    is read here, not by a call of its own: a source listing of Sphinx's viewcode holds thousands."""
    text = el.text
    if text:
        parts.append(text)
    for child in el:
        tag = child.tag
        tail = child.tail
        if isinstance(tag, str) and not _chrome(child, tag):
            if tag == "br":
                parts.append("\n")
            elif tag in _LINE_TAGS:
                if parts and not parts[-1].endswith("\n"):
                    parts.append("\n")
                _walk(child, parts)
                if parts and not parts[-1].endswith("\n"):
                    parts.append("\n")
                if tail and tail.isspace():
                    continue  # markup indentation between line elements (Doxygen div.line)
            elif len(child):
                _walk(child, parts)
            else:
                text = child.text
                if text:
                    parts.append(text)
        if tail:
            parts.append(tail)


def code_text(pre: etree._Element, known: str | None = None) -> str:
    """The code as the reader sees it: leading blank lines and trailing space dropped.

    ``known``: :func:`text_of` of ``pre``, when a pass before read it (:class:`facts.Facts`).
    """
    if _needs_walk(pre):
        parts: list[str] = []
        _walk(pre, parts)
        text = "".join(parts)
    else:
        text = known if known is not None else text_of(pre)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.rstrip()
    cut = text.find("\n")
    while cut >= 0 and not text[:cut].strip():
        text = text[cut + 1 :]
        cut = text.find("\n")
    return text


def _lang_from(el: etree._Element | None, bare: bool) -> str | None:
    if el is None:
        return None
    names = el.keys()  # one read: most blocks and wrappers have a class at most
    if not names:
        return None
    for attr in ("data-language", "data-lang"):
        if attr in names:
            value = el.get(attr)
            if value:
                return value
    if "class" not in names:
        return None
    cls = el.get("class")
    if not cls:
        return None
    key = (cls, bare)
    found = _by_class.get(key, "")
    if found == "":
        if len(_by_class) > _CACHE_LIMIT:  # keep memory bounded over a long crawl
            _by_class.clear()
        found = _by_class[key] = _lang_of_class(cls, bare)
    return found


#: The language a class string names (None: none), per class string and bareness: wrappers repeat.
_by_class: dict[tuple[str, bool], str | None] = {}
_CACHE_LIMIT = 10_000


def _lang_of_class(cls: str, bare: bool) -> str | None:
    tokens = cls.split()
    if bare and len(tokens) == 2 and "sourceCode" in tokens:
        # Pandoc (R Markdown, Quarto, pkgdown): ``pre.sourceCode.r``, the other token the language, whatever it is
        other = tokens[1] if tokens[0] == "sourceCode" else tokens[0]
        if other.isalnum():
            return other
    for tok in tokens:
        for prefix in _LANG_PREFIXES:
            if tok.startswith(prefix) and len(tok) > len(prefix):
                value = tok[len(prefix) :]
                # Sphinx's ``highlight-default`` is its default lexer: Python (``highlight_language``)
                return "python" if prefix == "highlight-" and value == "default" else value
        if bare and tok in _KNOWN_LANGS:
            return tok
    return None


def language(pre: etree._Element) -> str:
    """Language named by the markup on the block, its ``<code>`` child or two wrappers."""
    first = pre[0] if len(pre) and pre[0].tag == "code" else None
    parent = pre.getparent()
    grand = parent.getparent() if parent is not None else None
    lang = (
        _lang_from(pre, True)
        or _lang_from(first, True)
        or _lang_from(parent, False)
        or _lang_from(grand, False)
        or ""
    )
    lang = lang.strip().lower()
    lang = _LANG_ALIASES.get(lang, lang)
    if lang == "python" and not _lexed(pre, parent, grand):
        return ""
    return lang if lang.replace("-", "").replace("+", "").replace("#", "").isalnum() else ""


def _lexed(pre: etree._Element, parent: etree._Element | None, grand: etree._Element | None) -> bool:
    """Did Sphinx's Python lexer read the block, or did it fall back to plain text?

    A ``highlight-default`` block that Pygments cannot lex as Python (rsyslog's ``$ModLoad imudp``,
    Debian Policy's control files) is written without a token span: labelled ``python``, it said what it
    is not. Python's lexer puts every name in a span; a shell lexer leaves plain words bare, so only
    Python is asked, and only in Sphinx's wrappers (elsewhere a block is often highlighted in the browser).
    """
    wrapper = grand if grand is not None and "highlight-" in (grand.get("class") or "") else \
        parent if parent is not None and "highlight-" in (parent.get("class") or "") else None
    if wrapper is None or parent is None or "highlight" not in (parent.get("class") or "").split():
        return True
    return any(span.get("class") for span in pre.iter("span"))


def fence(code: str, lang: str = "") -> str:
    """A fenced block whose fence is longer than any backtick run inside the code."""
    ticks = 3
    if "```" in code:
        run = best = 0
        for ch in code:
            run = run + 1 if ch == "`" else 0
            best = max(best, run)
        ticks = best + 1
    bar = "`" * ticks
    return f"{bar}{lang}\n{code}\n{bar}"


def lays_out(pre: etree._Element) -> bool:
    """Does this ``<pre>`` hold layout (tables, headings, lists) rather than code or literal text?

    Some generators wrap a whole page, or a box of it, in ``<pre>`` to keep its spacing; what
    it holds is then a page's structure, read as blocks, not a listing to fence.  Line
    elements (``div``, ``span``, ``br``) are how highlighters write code and do not count,
    nor does a box that is chrome or inside chrome: HAProxy's manual puts a Bootstrap
    dropdown (``ul.dropdown-menu``, hidden until clicked) on keywords inside its text blocks.
    """
    return bool(len(pre)) and any(not _in_chrome(box, pre) for box in pre.iter(*_LAYOUT_TAGS))


def _in_chrome(el: etree._Element, pre: etree._Element) -> bool:
    """Is ``el``, or an element between it and ``pre``, chrome the walk of the block skips?"""
    node: etree._Element | None = el
    while node is not None and node is not pre:
        tag = node.tag
        if isinstance(tag, str) and _chrome(node, tag):
            return True
        node = node.getparent()
    return False


_HTML_SPACE = re.compile(r"[ \t\r\n\f]+")


def layout_text(el: etree._Element) -> str:
    """The lines of a block laid out with ``<br>`` and ``&nbsp;`` rather than ``<pre>`` (DocBook's
    ``div.literallayout``), as a browser shows them: the markup's own line ends and space runs are one
    space, each ``<br>`` ends a line, ``&nbsp;`` indents, a paragraph inside is a blank line."""
    parts: list[str] = []

    def text(value: str | None) -> None:
        if value:
            parts.append(_HTML_SPACE.sub(" ", value))

    def walk(node: etree._Element) -> None:
        text(node.text)
        for child in node:
            if child.tag == "br":
                parts.append("\n")
            elif child.tag == "p" and parts:
                parts.append("\n\n")
                walk(child)
            elif isinstance(child.tag, str):
                walk(child)
            text(child.tail)

    walk(el)
    lines = [line.lstrip(" ").rstrip().replace("\xa0", " ").rstrip() for line in "".join(parts).split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines).rstrip()


def code_block(pre: etree._Element, known: str | None = None) -> str | None:
    """Markdown for a ``<pre>`` element (None when it holds no code); ``known``: its text, if read already."""
    if pre.tag != "pre" and "literallayout" in (pre.get("class") or ""):
        layout = layout_text(pre)
        return fence(layout) if layout.strip() else None
    code = code_text(pre, known)
    if not code.strip():
        return None
    return fence(code, language(pre))
