"""Markdown block assembly shared by the walker, containers and tables.

Blocks are plain strings; these helpers join, indent and quote them so that
nested structures (code inside a list item inside an admonition) stay valid
markdown at any depth.
"""

from __future__ import annotations

from itertools import pairwise

from skillgraph.extract.inline import guard_line, squash

BR = "\x01"  # hard line break marker inside a paragraph (never whitespace to str.split)


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
            para = squash(raw)
            if para:
                para = guard_line(para)
        if para:
            self.blocks.append(para)


def is_list_block(block: str) -> bool:
    """True when ``block`` is a list this renderer produced."""
    if block.startswith("- "):
        return True
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


def hoist_fences(items: list[tuple[str, list[str]]]) -> list[str]:
    """A nested list whose items hold code: fenced blocks step out to the enclosing item.

    Inside a nested list item a fence is indented four spaces or more, which line-based
    readers (chunkers, fence-pairing scripts) do not take for a fence and which then pairs
    every later fence wrongly. The fence and what follows it in its item are written at
    the enclosing item's level; the next item starts a new list (numbering continues).
    """
    out: list[str] = []
    run: list[str] = []
    for marker, blocks in items:
        cut = next((i for i, b in enumerate(blocks) if b.startswith("```")), len(blocks))
        if cut:
            run.append(indent_item(marker, blocks[:cut]))
        if cut < len(blocks):
            if run:
                out.append("\n".join(run))
                run = []
            out.extend(blocks[cut:])
    if run:
        out.append("\n".join(run))
    return out
