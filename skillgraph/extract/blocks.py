"""Markdown block assembly shared by the walker, containers and tables, and the walker's interface.

Blocks are plain strings; these helpers join, indent and quote them so that
nested structures (code inside a list item inside an admonition) stay valid
markdown at any depth.  :class:`Walker` is what the handlers of docs containers
(:mod:`containers`), tables (:mod:`tables`) and index pages (:mod:`toc`) ask of
the walker that calls them: the walker (:mod:`render`) depends on them, never
the other way round.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Protocol

from lxml import etree

from skillgraph.extract.inline import Linker, guard_line, squash
from skillgraph.markdown import outside_code_spans

BR = "\x01"  # hard line break marker inside a paragraph (never whitespace to str.split)
#: First characters :func:`~skillgraph.extract.inline.guard_line` may escape (digits aside).
_GUARDED = frozenset("#>|-+~=")


class Out:
    """Finished blocks plus the inline pieces of the paragraph in progress."""

    __slots__ = ("blocks", "inline")

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.inline: list[str] = []

    def flush(self) -> None:
        """Close the current paragraph (whitespace collapsed, block markers escaped)."""
        if not self.inline:
            return
        raw = "".join(self.inline)
        self.inline.clear()
        if BR in raw:
            lines = [guard_line(line) for line in map(squash, raw.split(BR)) if line]
            para = "\\\n".join(lines)
        else:
            para = " ".join(raw.split())  # squash(), inline: once per paragraph
            if para:
                first = para[0]
                if first in _GUARDED or first.isdigit():
                    para = guard_line(para)
        if para:
            if "&lt;" in para:
                para = _loose_lt(para)
            self.blocks.append(para)


#: A ``<`` written ``&lt;`` that, with the paragraph whole, starts no tag: escaped at the end of a piece
#: (a link or span might have followed with a letter), it read "Jourdin &lt;[mail](...)>" and "safe&lt;**".
_LOOSE_LT = re.compile(r"&lt;(?![A-Za-z/!?])")


def _loose_lt(para: str) -> str:
    """``para`` with each ``&lt;`` that starts no tag written ``<`` again, outside code spans."""
    if "`" not in para:
        return _LOOSE_LT.sub("<", para)
    return outside_code_spans(para, lambda prose: _LOOSE_LT.sub("<", prose))


class Walker(Protocol):
    """The block walker as its handlers see it (:class:`skillgraph.extract.render.Renderer`)."""

    linker: Linker  #: link targets, resolved against the page
    skip: set[etree._Element] | None  #: more chrome to skip than :func:`classify.kind` says
    in_cell: int  #: depth of table cells being rendered (code stays inline there)
    tab_queue: list[str]  #: tab labels waiting for their panels, in order
    tab_by_id: dict[str, str]  #: tab labels by the id of their panel or tab

    def blocks(self, el: etree._Element, exclude: etree._Element | None = None) -> list[str]:
        """Blocks for the children of ``el`` (``exclude``: one child to leave out)."""
        ...

    def blocks_of(self, el: etree._Element) -> list[str]:
        """Blocks of ``el`` itself (not only its children)."""
        ...

    def one_line(self, el: etree._Element) -> str:
        """Content of ``el`` as a single line."""
        ...

    def walk(self, el: etree._Element, out: Out, exclude: etree._Element | None = None) -> None:
        """Render the children of ``el`` into ``out``."""
        ...

    def block(self, el: etree._Element, out: Out) -> None:
        """Render ``el`` as a block of its own."""
        ...

    def element(self, el: etree._Element, out: Out) -> None:
        """Render ``el`` by its tag alone."""
        ...

    def code(self, el: etree._Element, out: Out) -> None:
        """Render ``el`` as inline code (or a code block, standing alone on several lines)."""
        ...

    def anchored(self, ident: str) -> None:
        """Note that the element with id ``ident`` stands here, under the last heading written."""
        ...


def is_list_block(block: str) -> bool:
    """True when ``block`` is a list this renderer produced."""
    first = block[:1]
    if first == "-":
        return block[1:2] == " "
    if not first.isdigit():  # most blocks: prose, a heading, a fence; one character looked at
        return False
    head = block[:11].split(" ", 1)[0]
    return len(head) > 1 and head[-1] == "." and head[:-1].isdigit()


def join_blocks(blocks: list[str]) -> str:
    """Join item blocks; a nested list follows its paragraph without a blank line."""
    parts = [blocks[0]]
    for prev, block in pairwise(blocks):
        tight = is_list_block(block) and not prev.startswith(("```", "> ", "|"))
        parts.append("\n" if tight else "\n\n")
        parts.append(block)
    return "".join(parts)


def indent_item(marker: str, blocks: list[str]) -> str:
    """A list item: marker on the first line, continuation lines indented under it."""
    if len(blocks) == 1 and "\n" not in blocks[0] and not blocks[0].startswith("```"):
        return f"{marker} {blocks[0]}"  # the common item: one line
    pad = " " * (len(marker) + 1)
    lines = join_blocks(blocks).split("\n")
    if lines[0].startswith("```"):
        # A fence opening on the marker line ("- ```") is not seen as a fence by line-based
        # readers, which then pair every later fence wrongly: the item opens on its own line.
        return marker + "".join("\n" + (pad + line if line else "") for line in lines)
    rest = "".join("\n" + (pad + line if line else "") for line in lines[1:])
    return f"{marker} {lines[0]}{rest}"


def quote_lines(text: str) -> str:
    """Prefix every line with ``>`` (blockquotes and admonitions)."""
    return "\n".join("> " + line if line else ">" for line in text.split("\n"))


def hoist_fences(items: list[tuple[str, list[str]]], nested: bool = True) -> list[str]:
    """A list whose items hold code too deep: fenced blocks step out to the enclosing level.

    Inside a nested list item, or an item of a long ordered list (``10.`` indents its content
    four spaces), a fence is indented four spaces or more, which line-based readers (chunkers,
    fence-pairing scripts, CommonMark's own rule for a fence outside a list) do not take for a
    fence and which then pairs every later fence wrongly. The fence and what follows it in its
    item are written at the enclosing level; the next item starts a new list (numbering
    continues).  Not ``nested``: only the items whose marker is that wide step out.
    """
    out: list[str] = []
    run: list[str] = []
    for marker, blocks in items:
        cut = next((i for i, b in enumerate(blocks) if b.startswith("```")), len(blocks))
        if not nested and len(marker) <= 2:
            cut = len(blocks)  # "-" or "9.": its fences sit three spaces in, still fences
        if cut:
            run.append(indent_item(marker, blocks[:cut]))
        elif marker != "-":
            run.append(marker)  # "10." alone: the item's number stays, its code follows
        if cut < len(blocks):
            if run:
                out.append("\n".join(run))
                run = []
            out.extend(blocks[cut:])
    if run:
        out.append("\n".join(run))
    return out
