"""Tables: pipe tables when they fit, a readable list of rows when they do not.

A pipe table holds one line of inline text per cell and one header row.
Spans are laid out on the grid first: a ``colspan`` cell fills its first
column, a ``rowspan`` cell is repeated in each row it covers (so every row
reads on its own, as a chunk of it may), and several header rows (Sphinx
grid tables with a spanning group header) merge into one label per column,
``Info / O``.  Tables with a nested table or block content in a cell (code,
lists, several blocks of which one is not a paragraph) become a list: one
item per row, each cell led by its column label in bold; a single such row is
layout, its blocks are written in order.  Never raw HTML.
Pygments line-number tables (``table.highlighttable``) are code blocks, not
tables.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from lxml import etree

from skillgraph.extract.blocks import Out, indent_item, is_list_block
from skillgraph.extract.classify import SKIP, kind
from skillgraph.extract.code import code_block

if TYPE_CHECKING:
    from skillgraph.extract.render import Renderer

_SECTIONS = frozenset(["thead", "tbody", "tfoot"])
_CELLS = frozenset(["td", "th"])
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


def _layout(r: Renderer, el: etree._Element, out: Out) -> None:
    """A table that holds headings lays a page out (Doxygen member lists): rows as blocks, headings kept."""
    for tr, _ in _rows(el):
        line: list[str] = []
        for cell in tr:
            if cell.tag not in _CELLS or kind(cell, str(cell.tag)) & SKIP:
                continue
            for block in r.blocks(cell):
                if _is_block(block):
                    if line:
                        out.blocks.append(" ".join(line))
                        line = []
                    out.blocks.append(block)
                else:
                    line.append(block.replace("\\\n", " ").replace("\n", " "))
        if line:
            out.blocks.append(" ".join(line))


def _rows(table: etree._Element) -> Iterator[tuple[etree._Element, bool]]:
    """Rows of this table (not of nested ones), with whether each is a header row."""
    for child in table:
        if child.tag == "tr":
            yield child, False
        elif child.tag in _SECTIONS:
            for tr in child:
                if tr.tag == "tr":
                    yield tr, child.tag == "thead"


def _span(cell: etree._Element, attr: str) -> int:
    value = cell.get(attr)
    return int(value) if value and value.isdigit() and 0 < int(value) < 100 else 1


def _is_block(block: str) -> bool:
    if block.startswith("```"):  # a fence spans lines; ```a `` b``` alone on its line is a code span
        return "\n" in block
    return block.startswith(("> ", "|", "#", "$$")) or is_list_block(block)


def table(r: Renderer, el: etree._Element, out: Out) -> None:
    """Render ``<table>`` as a pipe table or, when too complex, as a list of rows."""
    out.flush()
    if "highlighttable" in (el.get("class") or ""):
        pres = list(el.iter("pre"))
        block = code_block(pres[-1]) if pres else None
        if block:
            out.blocks.append(block)
        return
    if next(el.iter(*_HEADINGS), None) is not None:
        _layout(r, el, out)
        return
    caption = el.find("caption")
    if caption is not None:
        out.blocks.extend(r.blocks(caption))
    grid: list[list[list[str]]] = []
    head_rows = 0
    complex_ = False
    spans: dict[int, tuple[int, list[str]]] = {}  # column -> (rows still covered, blocks)
    for tr, in_head in _rows(el):
        if r.skip and tr in r.skip:
            continue  # a navigation bar laid out as a row
        row: list[list[str]] = []
        cells = [c for c in tr if c.tag in _CELLS and not kind(c, str(c.tag)) & SKIP]
        # still in the leading run of header rows
        is_head = head_rows == len(grid) and (in_head or (bool(cells) and all(c.tag == "th" for c in cells)))
        for cell in cells:
            _carry(row, spans)
            r.in_cell += 1
            try:
                blocks = r.blocks(cell)
            finally:
                r.in_cell -= 1
            rowspan = _span(cell, "rowspan")
            nested = not complex_ and cell.find(".//table") is not None
            if nested or any(_is_block(b) for b in blocks):
                complex_ = True
            for _ in range(_span(cell, "colspan")):
                if rowspan > 1:
                    spans[len(row)] = (rowspan - 1, blocks)
                row.append(blocks)
                if not is_head:  # a group header labels every column it spans
                    blocks = []
        _carry(row, spans)
        if row:
            grid.append(row)
            head_rows += is_head
    if not grid:
        return
    if head_rows == len(grid):  # header cells only: the first row labels the rest
        head_rows = min(head_rows, 1)
    labels = _labels(grid[:head_rows])
    body = grid[head_rows:]
    if complex_ and len(grid) == 1 and not head_rows:
        # One row holding blocks lays content out (texinfo indents its examples with an
        # empty first cell, old pages put a box around code): the blocks, in order.
        out.blocks.extend(b for cell in grid[0] for b in cell)
    elif complex_:
        out.blocks.append(_as_list(labels, body))
    else:
        out.blocks.append(_as_pipes(labels, body))


def _carry(row: list[list[str]], spans: dict[int, tuple[int, list[str]]]) -> None:
    """Fill the columns still covered by a rowspan from an earlier row (its content repeated)."""
    while len(row) in spans:
        left, blocks = spans[len(row)]
        if left > 1:
            spans[len(row)] = (left - 1, blocks)
        else:
            del spans[len(row)]
        row.append(blocks)


def _cell_text(blocks: list[str]) -> str:
    text = " ".join(blocks).replace("\\\n", " ").replace("\n", " ")
    return text.replace("|", "\\|") if "|" in text else text


def _labels(head: list[list[list[str]]]) -> list[str] | None:
    """One label per column from the header rows, top to bottom, repeats (spans) said once."""
    if not head:
        return None
    labels = []
    for column in range(max(len(row) for row in head)):
        parts: list[str] = []
        for row in head:
            text = _cell_text(row[column]) if column < len(row) else ""
            if text and (not parts or parts[-1] != text):
                parts.append(text)
        labels.append(" / ".join(parts))
    return labels


def _as_pipes(labels: list[str] | None, body: list[list[list[str]]]) -> str:
    rows = [[_cell_text(c) for c in row] for row in body]
    width = max([len(labels or [])] + [len(row) for row in rows])
    head = labels if labels is not None else rows.pop(0) if rows else []
    lines = ["| " + " | ".join(head + [""] * (width - len(head))) + " |", "|" + " --- |" * width]
    lines.extend("| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in rows)
    return "\n".join(lines)


def _as_list(labels: list[str] | None, body: list[list[list[str]]]) -> str:
    items = []
    for row in body:
        blocks: list[str] = []
        for i, cell in enumerate(row):
            label = labels[i] if labels and i < len(labels) else ""
            cell = list(cell)
            if label and cell and not _is_block(cell[0]):
                cell[0] = f"**{label}:** {cell[0]}"
            elif label and cell:
                cell.insert(0, f"**{label}:**")
            blocks.extend(cell)
        if blocks:
            items.append(indent_item("-", blocks))
    return "\n".join(items)
