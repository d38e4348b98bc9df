"""Tables: pipe tables when they fit, a readable list of rows when they do not.

A pipe table holds one line of inline text per cell and one header row.
Spans are laid out on the grid first: a ``colspan`` cell fills its first
column, a ``rowspan`` cell is repeated in each row it covers (so every row
reads on its own, as a chunk of it may), and several header rows (Sphinx
grid tables with a spanning group header) merge into one label per column,
``Info / O``.  A cell's blocks that read on one line (paragraphs, a short list,
a quote) are flattened into it: data tables carry such cells here and there.
Tables with a nested table or block content in a cell that does not flatten
(code, long or nested lists), or whose cells of lists outnumber its cells of
text (columns of links), become a list: one item per row, each cell led by its
column label in bold; a single such row is layout, its blocks are written in
order.  Layout is never a pipe table: a table holding headings (Doxygen's member
lists) keeps its headings and writes only its runs of data rows as tables, and
a note boxed around an icon (DocBook's admonition graphics) is written as its
text.  Never raw HTML.  Pygments line-number tables (``table.highlighttable``)
are code blocks, not tables.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lxml import etree

from skillgraph.extract.blocks import Out, Walker, indent_item, is_list_block
from skillgraph.extract.classify import HEADINGS, SKIP, kind
from skillgraph.extract.code import code_block, fence, is_code_rows, is_gutter, is_listing_table
from skillgraph.extract.inline import code_span, escape, squash, text_of

_SECTIONS = frozenset(["thead", "tbody", "tfoot"])
_CELLS = frozenset(["td", "th"])


def _layout(r: Walker, el: etree._Element, out: Out) -> None:
    """A table that holds headings lays a page out (Doxygen member lists): headings kept, data kept a table.

    Its rows holding a heading or blocks are written as blocks; each run of rows between them
    whose cells are inline text (a member's type and name, its brief description) is data and
    becomes a pipe table (an empty header: the rows are items, none labels the others).  Rows
    with no text (Doxygen's separators) are left out.
    """
    run: list[list[str]] = []
    for tr, _ in _rows(el):
        if r.skip and tr in r.skip:
            continue
        cells = [c for c in tr if c.tag in _CELLS and not kind(c, str(c.tag)) & SKIP and not (r.skip and c in r.skip)]
        rendered = [r.blocks(cell) for cell in cells]
        if not any(rendered):
            continue  # a separator row
        if len(cells) >= 2 and not any(_is_block(b) for blocks in rendered for b in blocks):
            run.append([_cell_text(blocks) for blocks in rendered])
            continue
        _flush_run(run, out)
        line: list[str] = []
        for blocks in rendered:
            for block in blocks:
                if _is_block(block):
                    if line:
                        out.blocks.append(" ".join(line))
                        line = []
                    out.blocks.append(block)
                else:
                    line.append(block.replace("\\\n", " ").replace("\n", " "))
        if line:
            out.blocks.append(" ".join(line))
    _flush_run(run, out)


def _flush_run(run: list[list[str]], out: Out) -> None:
    """Data rows found in a layout table: a pipe table from two rows on, else a line."""
    if len(run) >= 2:
        width = max(len(row) for row in run)
        lines = ["|" + "  |" * width, "|" + " --- |" * width]
        lines.extend("| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in run)
        out.blocks.append("\n".join(lines))
    elif run:
        out.blocks.append(" ".join(text for text in run[0] if text))
    run.clear()


#: An icon column lays out a note: its table has at most this many rows (a label row and a body row).
ICON_LAYOUT_ROWS = 3


def _icon_layout(table: etree._Element) -> bool:
    """Is the table a box around a note, its first column an icon (DocBook's admonition graphics)?

    ``<tr><td rowspan=2><img alt="[Tip]"></td><th>Tip</th></tr><tr><td>text</td></tr>``: a
    cell holding nothing but an image spans every row beside the content.  Such a table lays
    a note out; as a pipe table it would read ``| [Tip] | Tip |``.
    """
    rows: list[etree._Element] = []
    for tr, _ in _rows(table):
        rows.append(tr)
        if len(rows) > ICON_LAYOUT_ROWS:
            return False  # a table of data: its rows are not read further
    if not rows:
        return False
    for cell in rows[0]:
        if cell.tag in _CELLS and (len(rows) == 1 or _span(cell, "rowspan") >= len(rows)) \
                and next(cell.iter("img"), None) is not None and not text_of(cell).strip():
            return True
    return False


def _unboxed(r: Walker, table: etree._Element, out: Out) -> None:
    """A note laid out in a table: its cells' blocks in order, the icon left out, a header cell as a bold label."""
    for tr, _ in _rows(table):
        for cell in tr:
            if cell.tag not in _CELLS or kind(cell, str(cell.tag)) & SKIP or not text_of(cell).strip():
                continue
            blocks = r.blocks(cell)
            if cell.tag == "th" and len(blocks) == 1 and not _is_block(blocks[0]):
                out.blocks.append(f"**{blocks[0]}**")
            else:
                out.blocks.extend(blocks)


def _listing_lines(table: etree._Element, lines: list[str], labels: list[str]) -> None:
    """The lines of a listing laid out as a table, a row a line (Scribble's ``table.RktBlk``: an expression of
    several lines is a table of its own in its row's cell; indentation is ``span.hspace`` of no-break spaces).

    A definition box's corner label (``div.RBackgroundLabel``: "procedure") goes to ``labels``, not into a line.
    """
    for tr, _ in _rows(table):
        parts = []
        for cell in tr:
            if cell.tag not in _CELLS:
                continue
            inner = next(cell.iterchildren("table"), None)
            if inner is not None and len(cell) == 1 and not (cell.text or "").strip():
                _listing_lines(inner, lines, labels)
                continue
            label = next((d for d in cell.iter("div") if "RBackgroundLabel" in (d.get("class") or "")), None)
            text = text_of(cell)
            if label is not None:
                said = text_of(label)
                labels.append(squash(said))
                text = text.replace(said, "", 1)
            parts.append(text)
        if parts:
            lines.append("".join(parts).replace("\xa0", " ").rstrip())


def grid(r: Walker, el: etree._Element, out: Out) -> None:
    """A table laid out by a CSS grid, a cell a ``div`` (Javadoc 17's ``div.summary-table``): a pipe table.

    The leading ``table-header`` cells give the columns; the cells that follow fill the rows in order.
    Read as blocks, every cell was a paragraph of its own: "Modifier and Type", "Method", "`void`"...
    """
    cells = [child for child in el if child.tag.__class__ is str and not kind(child, str(child.tag)) & SKIP]
    width = 0
    while width < len(cells) and "table-header" in (cells[width].get("class") or "").split():
        width += 1
    if not width or (len(cells) - width) % width:
        r.block(el, out)  # not a grid this reads as: its cells as blocks, as before
        return
    out.flush()
    labels = [_cell_text(r.blocks(cell)) for cell in cells[:width]]
    rest = cells[width:]
    body = [[r.blocks(cell) for cell in rest[i:i + width]] for i in range(0, len(rest), width)]
    out.blocks.append(_as_pipes(labels, body))


_SIGNATURE_SPACES = re.compile(r"\s+(?=[(),])|(?<=\()\s+")


def _doxygen_signature(table: etree._Element, tokens: list[str]) -> str | None:
    """A Doxygen member's prototype, laid out as a table a row a parameter (``table.memname``, in ``table.mlabels``
    with its labels: ``noexcept``, ``static``), as one bold code span: ``**`int f(uint8_t * out, int size)`**``.

    As a pipe table it read ``| int av_base64_decode | ( | uint8_t * | *out*, |`` then a row a parameter
    (gtkmm, wxWidgets, SDL, FFmpeg: every function of a Doxygen C or C++ reference).
    """
    if "memname" in tokens:
        names = table
    elif "mlabels" in tokens:
        names = next((t for t in table.iter("table") if "memname" in (t.get("class") or "").split()), None)
        if names is None:
            return None
    else:
        return None
    cells = [text_of(cell) for cell in names.iter("td")]
    signature = _SIGNATURE_SPACES.sub("", squash(" ".join(cells)))
    if not signature:
        return None
    labels = [squash(text_of(s)) for s in table.iter("span") if "mlabel" in (s.get("class") or "").split()]
    return f"**{code_span(signature)}**" + "".join(f" *{escape(label)}*" for label in labels if label)


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
    first = block[:1]
    if first == "`":  # a fence spans lines; ```a `` b``` alone on its line is a code span
        return block.startswith("```") and "\n" in block
    if first.isalpha():  # most cells' text: no block starts with a letter
        return False
    return block.startswith(("> ", "|", "#", "$$")) or is_list_block(block)


def table(r: Walker, el: etree._Element, out: Out) -> None:
    """Render ``<table>`` as a pipe table or, when too complex, as a list of rows."""
    out.flush()
    cls = el.get("class") or ""
    if "memname" in cls or "mlabels" in cls:
        signature = _doxygen_signature(el, cls.split())
        if signature:
            out.blocks.append(signature)
            return
    first_row = next(_rows(el), None)
    cells = [c for c in first_row[0] if c.tag in _CELLS] if first_row is not None else []
    scribble = is_listing_table(el)
    if scribble or (len(cells) == 1 and is_code_rows(el)):
        lines: list[str] = []
        corner: list[str] = []
        _listing_lines(el, lines, corner)
        while lines and not lines[-1]:
            lines.pop()
        if any(lines):
            if corner:  # what the box defines ("procedure", "syntax"), drawn in its corner
                out.blocks.append(" ".join(f"*{escape(label)}*" for label in corner))
            out.blocks.append(fence("\n".join(lines), "racket" if scribble else ""))
        return
    numbers = cells[0].find("pre") if len(cells) == 2 else None
    if "highlighttable" in cls or (numbers is not None and is_gutter(numbers)):
        # a listing beside its line numbers (Pygments' table.highlighttable, YARD's table.source_code)
        pres = list(el.iter("pre"))
        block = code_block(pres[-1]) if pres else None
        if block:
            out.blocks.append(block)
        return
    if next(el.iter(*HEADINGS), None) is not None:
        _layout(r, el, out)
        return
    if _icon_layout(el):
        _unboxed(r, el, out)
        return
    caption = next(el.iterchildren("caption"), None)
    if caption is not None:
        out.blocks.extend(r.blocks(caption))
    grid: list[list[list[str]]] = []
    head_rows = 0
    complex_ = False
    flattened = plain = 0  # cells holding blocks that read on one line; cells of inline text
    spans: dict[int, tuple[int, list[str]]] = {}  # column -> (rows still covered, blocks)
    for tr, in_head in _rows(el):
        if r.skip and tr in r.skip:
            continue  # a navigation bar laid out as a row
        row: list[list[str]] = []
        cells = [c for c in tr if c.tag in _CELLS and not kind(c, str(c.tag)) & SKIP and not (r.skip and c in r.skip)]
        # still in the leading run of header rows
        is_head = head_rows == len(grid) and (in_head or (bool(cells) and all(c.tag == "th" for c in cells)))
        for cell in cells:
            if spans:
                _carry(row, spans)
            r.in_cell += 1
            try:
                blocks = r.blocks(cell)
            finally:
                r.in_cell -= 1
            rowspan = _span(cell, "rowspan")
            nested = not complex_ and len(cell) > 0 and next(cell.iter("table"), None) is not None
            if any(map(_is_block, blocks)):
                flattened += 1
                if _flatten(blocks) is None:
                    complex_ = True
            elif blocks:
                plain += 1
            if nested:
                complex_ = True
            for _ in range(_span(cell, "colspan")):
                if rowspan > 1:
                    spans[len(row)] = (rowspan - 1, blocks)
                row.append(blocks)
                if not is_head:  # a group header labels every column it spans
                    blocks = []
        if spans:
            _carry(row, spans)
        if row and any(block != "---" for cell in row for block in cell):
            grid.append(row)
            head_rows += is_head
        # else a rule or spacer row (HeVeA's td.hrule, texinfo's index separators <td colspan=4><hr></td>)
    if not grid:
        return
    if flattened > plain:
        complex_ = True  # columns of lists lay links out (Sphinx's genindex): not data with a list here and there
    if head_rows == len(grid):  # header cells only: the first row labels the rest
        head_rows = min(head_rows, 1)
    labels = _labels(grid[:head_rows])
    body = grid[head_rows:]
    if len(grid) == 1 and len(grid[0]) == 1:
        # One cell is a box, never data (HeVeA's table captions, texinfo's cartouches): its blocks, as they read
        out.blocks.extend(grid[0][0])
    elif complex_ and len(grid) == 1 and not head_rows:
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


#: A list of more items than this in a cell does not read on one line: the table becomes a list of rows.
FLAT_ITEMS = 8
_ITEM = re.compile(r"(?:-|\d{1,9}\.) ")


def _flatten(blocks: list[str]) -> list[str] | None:
    """A cell's blocks as inline text when they read on one line, else None (code, tables, nested lists).

    A data table's cell may hold a short list (SQLite's opcode table: ``P2=='A' → BLOB`` ...),
    a quote or a heading; the table stays a pipe table, its list items joined by ``;``.
    """
    flat = []
    for block in blocks:
        if not _is_block(block):
            flat.append(block)
        elif is_list_block(block):
            lines = block.split("\n")
            items = [_ITEM.match(line) for line in lines]
            if not all(items) or len(items) > FLAT_ITEMS:
                return None  # nested lists, several paragraphs in an item
            flat.append("; ".join(line[m.end():] for line, m in zip(lines, items, strict=True) if m))
        elif block.startswith("> "):
            lines = [line[2:] if line.startswith("> ") else "" for line in block.split("\n")]
            if any(_is_block(line) for line in lines):
                return None
            flat.append(" ".join(line for line in lines if line))
        elif block.startswith("#"):
            flat.append(block.lstrip("#").strip())
        else:
            return None  # code, a table, display math
    return flat


def _cell_text(blocks: list[str]) -> str:
    if any(map(_is_block, blocks)):
        blocks = _flatten(blocks) or blocks
    # a block opening with a pipe has it escaped by the line guard (``\|``: no table row in prose); in a cell every
    # pipe is escaped below, so the guard's backslash goes (``\\|`` was a backslash and a cell delimiter). A pipe
    # after a backslash of the text has that backslash doubled by the prose escaper, so ``\|`` is the guard's.
    blocks = [block[1:] if block.startswith("\\|") else block for block in blocks]
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
    head = head + [""] * (width - len(head))
    rows = [row + [""] * (width - len(row)) for row in rows]
    if width > 1 and rows:
        # a column empty in every row and its label is a spacer (texinfo's @multitable and @menu pad their
        # columns with &nbsp; cells): it reads as nothing, so it is not written
        kept = [i for i in range(width) if head[i] or any(row[i] for row in rows)]
        if kept and len(kept) < width:
            head, rows, width = [head[i] for i in kept], [[row[i] for i in kept] for row in rows], len(kept)
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * width]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
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
