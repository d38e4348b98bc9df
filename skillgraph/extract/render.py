"""The block walker: one pass over the main content, emitting markdown blocks.

Design: :class:`Out` collects finished blocks plus the pieces of the paragraph
being built.  Block elements flush the paragraph and append their own blocks;
inline elements append pieces.  Inline wrappers (links, emphasis) remember
where their content started and add their markup afterwards, and only when no
block was emitted inside them, so a ``<a>`` around a ``<div>`` never produces
a broken ``[...](...)`` across paragraphs.  Nothing is removed from the tree:
boilerplate is skipped as it is met (see :mod:`classify`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from operator import methodcaller

from lxml import etree

from skillgraph.extract import code, containers, tables
from skillgraph.extract.blocks import BR, Out, hoist_fences, indent_item, quote_lines
from skillgraph.extract.classify import SKIP, kind
from skillgraph.extract.facts import Facts
from skillgraph.extract.inline import (
    Linker,
    code_span,
    escape,
    is_permalink_text,
    names_a_file,
    text_of,
    unguard_heading,
    wrap,
)

Handler = Callable[["Renderer", etree._Element, Out], None]
#: A superscript or subscript that is a term of its own (``2<sup>-27</sup>``, ``94<sup>N</sup>``,
#: ``log<sub>2</sub>``): a signed number, one letter, or a parenthesised group. Ordinals (``1<sup>st</sup>``),
#: marks (``<sup>TM</sup>``) and footnote links are written as they read.
_SCRIPT = re.compile(r"[-+−]?(?:\d[\d.]*|[A-Za-z]|\([^()\[\]]*\))")
#: A bracket not escaped already.
_BRACKET = re.compile(r"(?<!\\)[\[\]]")
#: A note's label alone before its text: docutils writes a footnote or citation as ``<span class="label">[1]
#: </span><p>text</p>``, which would leave ``[1]`` a paragraph of its own.
_LABEL = re.compile(r"\\?\[[\w.#*-]{1,16}\\?\]")
#: Does a block open a fence: ``str.startswith`` called from C, not a generator expression per list item.
_opens_fence = methodcaller("startswith", "```")


def _marks_a_note(link: etree._Element) -> bool:
    """Is a link with a number for text a footnote's marker: by its class, or raised (``<sup>``) in or around it?"""
    if "footnote" in (link.get("class") or "") or next(link.iter("sup"), None) is not None:
        return True
    parent = link.getparent()
    return parent is not None and parent.tag == "sup"


class Renderer:
    """Walks an element tree and renders it as markdown (never mutating it)."""

    def __init__(self, linker: Linker, skip: set[etree._Element] | None = None, facts: Facts | None = None) -> None:
        self.linker = linker
        self.skip = skip or None  #: more chrome to skip (navigation bars found by the scorer)
        #: what the passes before this one learnt of the page's elements
        self.facts = facts if facts is not None else Facts()
        self.kinds = self.facts.kinds or None  #: :func:`classify.kind` of the elements the scorer weighed
        self.tab_queue: list[str] = []
        self.tab_by_id: dict[str, str] = {}
        self.saw_h1 = False
        #: level of the first heading written (0: none yet): a page whose first heading is below an
        #: h1 does not open with its title (Doxygen's detailed description holds the comment's own h1s)
        self.first_level = 0
        self.in_heading = False
        #: characters of the link destinations written: never fewer than the markdown holds (a render
        #: given up for another counts too), so the markdown less this is a floor of its text's length
        self.destinations = 0
        self.in_cell = 0  #: depth of table cells being rendered (code stays inline there)
        self.list_depth = 0  #: depth of list items being rendered
        #: emphasis marks open around what is being rendered, each with the output and block count it
        #: opened at: the same mark inside, in the same inline run, is not written again
        self.open_marks: dict[str, tuple[Out, int]] = {}
        #: the headings written, each element with its markdown text, in order (in-page links: anchors.py)
        self.written_headings: list[tuple[etree._Element, str]] = []
        #: ids of elements written under a heading (API entries), each with that heading's place in the list
        self.anchors: dict[str, int] = {}
        self.fragments: set[str] = set()  #: the in-page fragments linked to

    def markdown(self, el: etree._Element) -> str:
        """Markdown for the children of ``el``."""
        return "\n\n".join(self.blocks(el))

    def blocks(self, el: etree._Element, exclude: etree._Element | None = None) -> list[str]:
        """Blocks for the children of ``el`` (``exclude``: one child to leave out)."""
        out = Out()
        self.walk(el, out, exclude)
        out.flush()
        return out.blocks

    def one_line(self, el: etree._Element) -> str:
        """Content of ``el`` as a single line (headings, terms, table cells)."""
        return " ".join(b.replace("\\\n", " ").replace("\n", " ") for b in self.blocks(el))

    def walk(self, el: etree._Element, out: Out, exclude: etree._Element | None = None) -> None:
        """Render the children of ``el`` into ``out``.

        The loop every element of the content goes through: a child the structural scorer
        classified already is not asked about again, and a plain inline child without children
        (a ``<span>`` of highlighted or annotated text) is written here, without a call of its own.
        """
        inline = out.inline
        text = el.text
        if text and (inline or not text.isspace()):
            inline.append(escape(text))
        skip = self.skip
        kinds = self.kinds
        for child in el:
            tag = child.tag
            if tag.__class__ is str and child is not exclude and not (skip and child in skip):
                flags = kinds.get(child, -1) if kinds is not None else -1
                if flags < 0:
                    flags = kind(child, tag)
                if flags:
                    if not flags & SKIP:
                        containers.special(self, child, tag, flags, out)
                else:
                    handler = HANDLERS.get(tag)
                    if handler is not None:
                        handler(self, child, out)
                    elif len(child):
                        self.walk(child, out)
                    else:
                        text = child.text
                        if text and (inline or not text.isspace()):
                            inline.append(escape(text))
            text = child.tail
            if text and (inline or not text.isspace()):
                inline.append(escape(text))

    # -- handlers ---------------------------------------------------------

    def block(self, el: etree._Element, out: Out) -> None:
        if out.inline:
            label = _note_label(out.inline) if el.tag == "p" else ""
            if label:  # "[1]" then its text: the label leads the paragraph
                out.inline[:] = [label, " "]
            else:
                out.flush()
        self.walk(el, out)
        if out.inline:
            out.flush()

    def header(self, el: etree._Element, out: Out) -> None:
        if next(el.iter("h1"), None) is not None:
            self.block(el, out)

    def heading(self, el: etree._Element, out: Out) -> None:
        out.flush()
        self.in_heading = True
        try:
            text = unguard_heading(self.one_line(el).strip())
        finally:
            self.in_heading = False
        while text and text[-1] in "¶§#" and (len(text) == 1 or text[-2] == " "):
            text = text[:-1].rstrip()
        if text:
            level = int(str(el.tag)[1])
            self.saw_h1 = self.saw_h1 or level == 1
            self.first_level = self.first_level or level
            self.written_headings.append((el, text))
            out.blocks.append("#" * level + " " + text)

    def pre(self, el: etree._Element, out: Out) -> None:
        out.flush()
        if len(el) == 1 and el[0].tag == "pre" and not (el.text or "").strip():
            el = el[0]  # <pre><pre>: trafilatura's HTML output, pretty-printed around the real block
        if code.is_prompt(el):
            return  # a notebook cell's "[4]:", beside its code
        laid = self.facts.layouts.get(el)
        if laid is None:
            laid = code.lays_out(el)
        if laid:
            self.walk(el, out)  # a page's structure kept in <pre> for its spacing: blocks, not a fence
            out.flush()
            return
        block = code.code_block(el, self.facts.texts.get(el))
        if block:
            out.blocks.append(block)

    def listing(self, el: etree._Element, out: Out) -> None:
        out.flush()
        ordered = el.tag == "ol"
        start = el.get("start")
        n = int(start) if start and start.isdigit() else 1
        items: list[tuple[str, list[str]]] = []
        for child in el:
            tag = child.tag
            if not isinstance(tag, str) or kind(child, tag) & SKIP:
                continue
            if tag != "li" and items:
                items[-1][1].extend(self.blocks_of(child))
                continue
            self.list_depth += 1
            try:
                blocks = self.blocks(child) if tag == "li" else self.blocks_of(child)
            finally:
                self.list_depth -= 1
            marker = f"{n}." if ordered else "-"
            n += 1
            if blocks:
                items.append((marker, blocks))
        if not items:
            return
        fenced = [m for m, blocks in items if any(map(_opens_fence, blocks))]
        if fenced and (self.list_depth or max(map(len, fenced)) > 2):
            out.blocks.extend(hoist_fences(items, nested=bool(self.list_depth)))
        else:
            out.blocks.append("\n".join(indent_item(m, b) for m, b in items))

    def blocks_of(self, el: etree._Element) -> list[str]:
        """Blocks of ``el`` itself (not only its children)."""
        out = Out()
        HANDLERS.get(str(el.tag), Renderer.block)(self, el, out)
        out.flush()
        return out.blocks

    def element(self, el: etree._Element, out: Out) -> None:
        """Render ``el`` by its tag alone."""
        HANDLERS.get(str(el.tag), Renderer.walk)(self, el, out)

    def quote(self, el: etree._Element, out: Out) -> None:
        out.flush()
        if code.is_code_flow(el):  # Scribble's one-line example: code in a paragraph, no <pre>
            block = code.code_block(el)
            if block:
                out.blocks.append(block.replace("\xa0", " "))
            return
        blocks = self.blocks(el)
        if any(b.startswith(("```", "|")) for b in blocks):
            # an indented block holding code (reST block quotes) or a table (old sites indent tables
            # with <blockquote>): fences and pipe tables stay at the lowest depth, unquoted
            out.blocks.extend(blocks)
        elif blocks:
            out.blocks.append(quote_lines("\n\n".join(blocks)))

    def rule(self, el: etree._Element, out: Out) -> None:
        out.flush()
        out.blocks.append("---")

    def br(self, el: etree._Element, out: Out) -> None:
        out.inline.append(BR)

    def image(self, el: etree._Element, out: Out) -> None:
        alt = el.get("alt")
        # a file name says nothing in prose; as all a table cell holds, it is the cell's content
        if alt and alt.strip() and (not names_a_file(alt.strip(), el.get("src")) or _fills_its_cell(el)):
            out.inline.append(escape(alt.strip()))

    def code(self, el: etree._Element, out: Out) -> None:
        text = text_of(el)
        if ("\n" in text and not self.in_cell and "\n" in text.strip() and not (el.tail or "").strip()
                and not "".join(out.inline).strip()):
            out.flush()  # a multi-line <code> standing alone is a code block without its <pre>
            # read as a <pre> is: a <br> inside (Javadoc's signatures) breaks its line too
            body = code.code_text(el) if len(el) else text.strip("\n").rstrip()
            out.blocks.append(code.fence(body, code.language(el)))
            return
        span = code_span(text)
        if not span:
            if text:  # only whitespace (Scribble's ``15.1<tt>&nbsp;</tt>Paths``): the words stay apart
                out.inline.append(" ")
            return
        if text[-1:].isspace():
            span += " "  # "<code>(obsolete) </code>int": the space shows between them, outside the span
        if text[:1].isspace():
            span = " " + span
        out.inline.append(span)

    def link(self, el: etree._Element, out: Out) -> None:
        inline = out.inline
        start, nblocks = len(inline), len(out.blocks)
        self.walk(el, out)
        href = el.get("href")
        if href is None:
            ident = el.get("id") or el.get("name")
            if ident:  # an anchor in the text (texinfo's index entries, old pages' <a name>): under this heading
                self.anchored(ident)
            return
        if len(out.blocks) != nblocks or el.get("role") == "doc-backlink":
            return
        # most links hold one piece (a word, a code span): no slice and join for it
        content = inline[start] if len(inline) == start + 1 else "".join(inline[start:])
        if href.startswith("#") and (self.in_heading or is_permalink_text(content)):
            if is_permalink_text(content):
                del inline[start:]
            return
        core = content.strip()
        target = self.linker.target(href)
        if not core or target is None or BR in core:
            return
        self.destinations += len(target)
        if target[:1] == "#":
            self.fragments.add(target[1:])
        if core.isdigit() and len(core) <= 3 and href[:1] == "#" and _marks_a_note(el):
            # a footnote's marker, its brackets drawn by CSS (Sphinx's a.footnote-reference.brackets) or its number
            # raised (texinfo's <sup>8</sup>): "architectures. [1](#id16) Any" read as the number one
            core = f"\\[{core}\\]"
            content = content.replace(content.strip(), core, 1)
        elif ("[" in core or "]" in core) and core.count("[") != core.count("]") and "`" not in core:
            # "] in entries" (texinfo's index): an unbalanced bracket ends the link text early, and the
            # link reads as plain text
            core = _BRACKET.sub(r"\\\g<0>", core)
            content = content.replace(content.strip(), core, 1)
        if len(core) == len(content):
            linked = f"[{core}]({target})"
        else:
            lead = content[: len(content) - len(content.lstrip())]
            trail = content[len(content.rstrip()) :]
            linked = f"{lead}[{core}]({target}){trail}"
        inline[start:] = [linked]

    def emphasis(self, el: etree._Element, out: Out, mark: str = "*") -> None:
        """``mark`` around the element's inline content; not again inside the same mark.

        Texinfo's ``<em>(mpfr_t <var>rop</var>)</em>`` would read ``*(mpfr_t *rop*)*``, where
        CommonMark closes the outer emphasis at the inner one: the inner text is emphasised already.
        Once a block has been written since the outer mark opened, the outer one is not written (an
        emphasis holds inline content only), so the inner one is.
        """
        inline = out.inline
        start, nblocks = len(inline), len(out.blocks)
        outer = self.open_marks.get(mark)
        if outer is not None and outer[0] is out and outer[1] == nblocks:
            self.walk(el, out)
            return
        self.open_marks[mark] = (out, nblocks)
        try:
            self.walk(el, out)
        finally:
            if outer is None:
                del self.open_marks[mark]
            else:
                self.open_marks[mark] = outer
        end = len(inline)
        if len(out.blocks) == nblocks and end > start:
            content = inline[start] if end == start + 1 else "".join(inline[start:])
            wrapped = wrap(content, mark)
            if wrapped[-1:] == mark[-1:] and not wrapped[-len(mark) - 1:-len(mark)].isalnum() \
                    and (el.tail or "")[:1].isalnum():
                # "**Author:**Luis", "*NO_*BAD_PATTERN", "**BASH_VERSINFO[**0]": a closing mark after punctuation
                # and before a letter does not close (CommonMark's flanking rule) and the marks showed; the text
                # is written as it reads, unmarked (a space would have changed an identifier)
                wrapped = content
            inline[start:] = [wrapped]

    def strong(self, el: etree._Element, out: Out) -> None:
        self.emphasis(el, out, "**")

    def strike(self, el: etree._Element, out: Out) -> None:
        self.emphasis(el, out, "~~")

    def anchored(self, ident: str) -> None:
        """The element with id ``ident`` is written here: under the last heading written (if any)."""
        if self.written_headings:
            self.anchors.setdefault(ident, len(self.written_headings) - 1)

    def script(self, el: etree._Element, out: Out) -> None:
        """``2<sup>27</sup>`` as ``2^27`` and ``x<sub>i</sub>`` as ``x_i``: run together, ``227`` and
        ``2-27`` (X.org's ICCCM) said another number."""
        inline = out.inline
        start, nblocks = len(inline), len(out.blocks)
        self.walk(el, out)
        if len(out.blocks) != nblocks or len(inline) == start:
            return
        base = inline[start - 1][-1:] if start else ""
        content = "".join(inline[start:])
        if not base or base.isspace() or content[:1].isspace() or not _SCRIPT.fullmatch(content.rstrip()):
            return
        if el.tag == "sub" and not (base.isalnum() or base == ")"):
            return  # "*a*_1": an "_" after a mark could open emphasis
        parent = el.getparent()
        if (parent is None or parent.tag != "a") and next(el.iter("a"), None) is None:  # a footnote's marker
            inline[start:] = [("^" if el.tag == "sup" else "_") + content]


HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(
        [
            "div", "section", "article", "main", "body", "html", "figure", "figcaption", "address", "center", "hgroup",
            "fieldset", "search", "summary", "legend", "li", "dt", "dd", "caption", "tbody", "thead", "tfoot", "tr",
        ],
        Renderer.block,
    ),
    "p": Renderer.block,
    "header": Renderer.header,
    **dict.fromkeys(["h1", "h2", "h3", "h4", "h5", "h6"], Renderer.heading),
    "pre": Renderer.pre,
    **dict.fromkeys(["ul", "ol", "menu"], Renderer.listing),
    "dl": containers.deflist,
    "table": tables.table,
    **dict.fromkeys(["sup", "sub"], Renderer.script),
    "blockquote": Renderer.quote,
    "details": containers.details,
    "hr": Renderer.rule,
    "br": Renderer.br,
    "img": Renderer.image,
    "a": Renderer.link,
    **dict.fromkeys(["code", "kbd", "samp", "tt"], Renderer.code),
    **dict.fromkeys(["em", "i", "cite", "dfn", "var"], Renderer.emphasis),
    **dict.fromkeys(["strong", "b"], Renderer.strong),
    **dict.fromkeys(["del", "s", "strike"], Renderer.strike),
    "math": containers.math,
}


def _note_label(inline: list[str]) -> str:
    """The text waiting before a paragraph when it is only a note's label (``[1]``), else ""."""
    label = "".join(inline).strip()
    return label if _LABEL.fullmatch(label) else ""


def _fills_its_cell(img: etree._Element) -> bool:
    """Is the image all of the table cell it sits in (docutils' cheat sheet: an example that is a picture)?"""
    parent = img.getparent()
    while parent is not None and parent.tag not in ("td", "th"):
        if parent.tag == "table" or (parent.text or "").strip():
            return False
        parent = parent.getparent()
    return parent is not None and not text_of(parent).strip()
