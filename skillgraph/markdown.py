"""The one reader of markdown block structure: which lines are fenced code, which are headings.

Every module that reads markdown (llms.txt parser, corpus splitter, chunker, link
rewriter, quality and fidelity checks) must agree on where a code block begins and
ends: a reader that pairs fences its own way splits a code block, rewrites a link
inside code or takes a ``# comment`` for a heading. So they all ask this scanner,
which follows CommonMark 0.31:

* fenced code (§4.5): 0-3 spaces, then 3+ backticks or 3+ tildes; no backtick in a
  backtick fence's info string; closed by the same character, at least as long, 0-3
  spaces, nothing but spaces after; an unclosed fence runs to the end of its container;
* ATX headings (§4.2): 0-3 spaces, 1-6 ``#``, then a space, a tab or the line's end;
  the closing ``#`` run dropped; setext headings (§4.3) too;
* block quotes and list items (§5.1, §5.2) as containers (a fence in a quote or a list
  item is a fence), lazy lines, paragraphs and breaks as far as those need them;
* lines end at ``\n``, ``\r\n`` or ``\r`` (§2.1), not where ``str.splitlines`` also ends them.

Left out on purpose: HTML blocks (MDX corpora put fences inside JSX without a blank
line, which CommonMark reads as HTML and every MDX reader as code), indented code
(reported as text: MDX has none) and link reference definitions. One line-based pass,
one compiled pattern per construct, a fast path for prose: linear in the input.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate
from operator import itemgetter
from typing import NamedTuple

TEXT = "text"
FENCE_OPEN = "fence-open"
CODE = "code"
FENCE_CLOSE = "fence-close"
HEADING = "heading"
#: The kinds of a fenced block's lines, fence lines included.
IN_FENCE = frozenset((FENCE_OPEN, CODE, FENCE_CLOSE))

#: A block quote on the container stack; a list item is its content indent, negated while the item is
#: empty (it began with a blank line, which a second blank line ends).
_QUOTE = -1
_SPACES = re.compile(r" *")
_BLOCKQUOTE = re.compile(r" {0,3}>")
_OPENER = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_CLOSER = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*$")
_ATX = re.compile(r" {0,3}(#{1,6})(?= |$)")
_ATX_CLOSING = re.compile(r"(?:^| +)#+$")
_SETEXT = re.compile(r" {0,3}(?:=+|-+) *$")
_BREAK = re.compile(r" {0,3}(?:(?:\* *){3,}|(?:- *){3,}|(?:_ *){3,})$")
_ITEM = re.compile(r" {0,3}(?:[-+*]|([0-9]{1,9})[.)])(?= |$)")
#: First characters that may start or end something at the top level; any other line is prose.
_PLAIN_SKIP = frozenset(" \t#>`~-+*_=0123456789")
#: For a first character of _PLAIN_SKIP, the second characters (past expanded tabs; the line's end too) with
#: which it may start a block: ``**bold``, ``#include``, ``-x``, ``1x`` or ```code`` is a paragraph's line.
#: A space or ``>`` first is always read in full.
_NEXT = {"#": "# ", "`": "`", "~": "~", "-": "- ", "+": " ", "*": "* ", "_": "_ ", "=": "= ",
         **dict.fromkeys("0123456789", "0123456789.)")}
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_ODD_ENDS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  #: where str.splitlines ends lines and CommonMark does not
_ASCII_ODD_ENDS = _ODD_ENDS[:5]
#: A code span of one line of markdown (its text is code: ``xmlChar**mem`` holds no bold, ``[a](b)`` no link):
#: a run of backticks, then the shortest text up to a run as long, on one line (``(`+)(?!`).*?(?<!`)\1(?!`)``).
#: Written to open with a literal backtick, so the regex engine skips from backtick to backtick in C (``(`+)``
#: has it try every place in the text), and to read the text between backtick runs a run at a time: seven times
#: faster on docs pages, the same spans (tests/test_graph_links.py compares the two on 30,000 texts).
CODE_SPAN = re.compile(r"`(`*)(?!`)(?:[^`\n]++|`++)*?(?<!`)`\1(?!`)")
_new = tuple.__new__  # builds a Line without the keyword-default wrapper: the fast path's lines
_KIND, _TEXT = itemgetter(0), itemgetter(1)  #: a Line's kind and text, read in C
#: A line's kind as one character, and a fenced block in those characters: its opening, code and closing lines.
_MARKS = {TEXT: "t", FENCE_OPEN: "[", CODE: "c", FENCE_CLOSE: "]", HEADING: "h"}
_FENCED = re.compile(r"\[c*(\])?")


class Line(NamedTuple):
    """One line and what it is. ``text`` is the line as given (line end included if it had one)."""

    kind: str  #: TEXT, FENCE_OPEN, CODE, FENCE_CLOSE or HEADING
    text: str
    depth: int = 0  #: block quotes and list items holding the line (0: the document itself)
    level: int = 0  #: heading level, 1-6
    title: str = ""  #: heading text, closing ``#`` run dropped (a setext heading: its paragraph, one line)
    fence: str = ""  #: the fence run (3+ backticks or tildes) of a fenced block's lines
    info: str = ""  #: the opening fence's info string, stripped
    setext: bool = False  #: a setext underline (its title lines came before it, as TEXT)

    @property
    def starts_section(self) -> bool:
        """An ATX heading of the document itself (not quoted, not in a list): where a section starts."""
        return self.kind == HEADING and not self.depth and not self.setext  # a setext title starts earlier


class Fenced(NamedTuple):
    """A fenced code block: lines ``start`` to ``end`` (exclusive), both fence lines included."""

    start: int
    end: int
    fence: str
    info: str
    depth: int
    closed: bool  #: False when it ran to the end of the document or of its container


def outside_code_spans(text: str, change: Callable[[str], str]) -> str:
    """``text`` with ``change`` applied to each run between its code spans, the spans copied as they are."""
    parts, last = [], 0
    for span in CODE_SPAN.finditer(text):
        parts.append(change(text[last : span.start()]))
        parts.append(span.group(0))
        last = span.end()
    parts.append(change(text[last:]))
    return "".join(parts)


def split_lines(text: str) -> list[str]:
    """``text``'s lines, each with its line end, split where CommonMark ends a line (lossless)."""
    return _LINE.findall(text) if _odd_line_ends(text) else text.splitlines(keepends=True)


def _odd_line_ends(text: str) -> bool:
    """Does ``text`` hold a character that ``str.splitlines`` ends a line at and CommonMark does not?

    One substring search per character (a tenth of the time of a character-class regex over the
    text); an ASCII string, known as such without reading it, cannot hold the last three.
    """
    return any(char in text for char in (_ASCII_ODD_ENDS if text.isascii() else _ODD_ENDS))


def scan(source: str | Iterable[str]) -> Iterator[Line]:
    """Every line of ``source`` (a text, or its :func:`split_lines`) with its kind, in order."""
    return _scan(split_lines(source) if isinstance(source, str) else source, True)


def _scan(lines: Iterable[str], fast: bool) -> Iterator[Line]:
    """:func:`scan` of ``lines``; ``fast=False`` turns off the fast paths for top-level headings and lines past
    containers (tests compare)."""
    stack: list[int] = []  # open containers, innermost last: _QUOTE or a list item's content indent
    fence = ""  # the open fence's run; "" outside code
    para: list[str] | None = None  # the open paragraph's lines (a setext heading's title); None when none
    first = True
    for raw in lines:
        line = raw.rstrip("\r\n")
        if first:
            line, first = line.lstrip("\ufeff"), False
        if not stack:  # fast path: the top level (most lines of most documents); a tab leads elsewhere
            head = line[:1]
            if fence:
                if (head != " " and head != fence[0]) or not _closes(line, 0, fence):
                    yield _new(Line, (CODE, raw, 0, 0, "", fence, "", False))
                    continue
                yield _new(Line, (FENCE_CLOSE, raw, 0, 0, "", fence, "", False))
                fence = ""
                continue
            if head not in _PLAIN_SKIP:  # prose, or a blank line (head "")
                if not head:
                    para = None
                elif para is None:
                    para = [line]
                else:
                    para.append(line)
                yield _new(Line, (TEXT, raw, 0, 0, "", "", "", False))
                continue
            if fast and head == "#" and "\t" not in line:  # an ATX heading at the top level (a tab is expanded first)
                m = _ATX.match(line)
                if m is not None:
                    para = None
                    title = line[m.end():].strip(" ")
                    if "#" in title:
                        title = _ATX_CLOSING.sub("", title).strip(" ")
                    yield _new(Line, (HEADING, raw, 0, len(m.group(1)), title, "", "", False))
                    continue
        if "\t" in line:
            line = line.expandtabs(4)  # tab stops of 4 columns, as block structure reads them
        pos, matched = 0, 0
        # the line's leading spaces: where the spaces from ``pos`` end while ``pos`` is within them
        indent = len(line) - len(line.lstrip(" ")) if fast and stack else -1
        for container in stack:  # the containers this line continues
            if container == _QUOTE:
                m = _BLOCKQUOTE.match(line, pos)
                if m is None:
                    break
                pos = m.end() + (line.startswith(" ", m.end()))
            else:
                width = abs(container)
                start = indent if pos <= indent else _SPACES.match(line, pos).end()  # type: ignore[union-attr]
                if start == len(line):
                    if container < 0:
                        break  # an item that began with a blank line ends at a second one (§5.2)
                    pos = start
                elif start - pos >= width:
                    pos += width
                    stack[matched] = width
                else:
                    break
            matched += 1
        if fence:
            if matched == len(stack):
                if _closes(line, pos, fence):
                    yield Line(FENCE_CLOSE, raw, matched, fence=fence)
                    fence = ""
                else:
                    yield Line(CODE, raw, matched, fence=fence)
                continue
            fence = ""  # its container ended: so did the fence
        if fast:  # a line that starts no block past its containers: a blank, a paragraph's line or a "- " item's
            head = line[pos:pos + 1]
            if head not in _PLAIN_SKIP or _starts_nothing(line, pos, head):
                if not head:  # blank: it closes the containers it did not continue
                    del stack[matched:]
                    para = None
                    yield _new(Line, (TEXT, raw, matched, 0, "", "", "", False))
                elif para is not None:  # the open paragraph goes on (lazily, when containers were left unmatched)
                    para.append(line[pos:])
                    yield _new(Line, (TEXT, raw, len(stack), 0, "", "", "", False))
                else:
                    del stack[matched:]
                    para = [line[pos:]]
                    yield _new(Line, (TEXT, raw, matched, 0, "", "", "", False))
                continue
            if head == "-" and line[pos + 1:pos + 2] == " ":  # a "- " item whose text starts no block
                head = line[pos + 2:pos + 3]
                if head and (head not in _PLAIN_SKIP or _starts_nothing(line, pos + 2, head)):
                    del stack[matched:]
                    stack.append(2)
                    para = [line[pos + 2:]]
                    yield _new(Line, (TEXT, raw, matched + 1, 0, "", "", "", False))
                    continue
        found, fence, para = _blocks(raw, line, pos, matched, stack, para)
        yield found


def _starts_nothing(line: str, pos: int, head: str) -> bool:
    """Is ``line`` from ``pos`` (``head``, of _PLAIN_SKIP, first) a paragraph's text by its first characters?

    ``#x``, ``**x``, ``-x``, ``1x``, ```x`` and the like start no heading, break, item, fence or setext
    underline; the line's end is no such character (``"" in after``).
    """
    after = _NEXT.get(head)
    if after is None:
        return False
    following = line[pos + 1:pos + 2]
    if following not in after:
        return True
    return head == "*" and following == "*" and line[pos + 2:pos + 3] not in "* "  # **bold: no item, no break


def _closes(line: str, pos: int, fence: str) -> bool:
    m = _CLOSER.match(line, pos)
    return m is not None and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)


def _blocks(raw: str, line: str, pos: int, depth: int, stack: list[int],
            para: list[str] | None) -> tuple[Line, str, list[str] | None]:
    """The block starts of ``line`` from ``pos``, past the ``depth`` containers it continues.

    Returns the line, the fence it opens ("" if none) and the paragraph open after it.
    Containers left unmatched close when a new block starts (``stack`` is updated);
    a paragraph line that starts nothing continues them lazily (§5.1).
    """
    continues = depth == len(stack)  # every container matched: the open paragraph is this line's
    while True:
        start = _SPACES.match(line, pos).end()  # type: ignore[union-attr]
        if start == len(line):  # blank
            del stack[depth:]
            return Line(TEXT, raw, depth), "", None
        head = line[start]
        if start - pos < 4:
            if head == ">":
                del stack[depth:]
                stack.append(_QUOTE)
                depth, para, continues = depth + 1, None, False
                pos = start + 1 + line.startswith(" ", start + 1)
                continue
            if head in "`~":
                m = _OPENER.match(line, pos)
                if m is not None and not (head == "`" and "`" in m.group(2)):
                    del stack[depth:]
                    run = m.group(1)
                    return _new(Line, (FENCE_OPEN, raw, depth, 0, "", run, m.group(2).strip(), False)), run, None
            elif head == "#":
                m = _ATX.match(line, pos)
                if m is not None:
                    del stack[depth:]
                    title = line[m.end():].strip(" ")
                    if "#" in title:  # a closing run to drop (the pattern tries every place: most titles hold none)
                        title = _ATX_CLOSING.sub("", title).strip(" ")
                    return _new(Line, (HEADING, raw, depth, len(m.group(1)), title, "", "", False)), "", None
            if para is not None and continues and head in "=-" and _SETEXT.match(line, pos):
                title = " ".join(p.strip() for p in para)
                return Line(HEADING, raw, depth, level=1 if head == "=" else 2, title=title, setext=True), "", None
            if head in "-*_" and _BREAK.match(line, pos):
                del stack[depth:]
                return Line(TEXT, raw, depth), "", None
            if head in "-+*0123456789" and (m := _ITEM.match(line, pos)) is not None:
                after = m.end()
                content = _SPACES.match(line, after).end()  # type: ignore[union-attr]
                empty = content == len(line)
                # An item interrupts a paragraph only if it has content and, ordered, starts at 1 (§5.2).
                if para is None or not continues or (not empty and (m.group(1) is None or int(m.group(1)) == 1)):
                    if empty or content - after > 4:
                        content = after + 1  # content indent: the marker and one space
                    del stack[depth:]
                    stack.append(pos - content if empty else content - pos)
                    depth, para, continues = depth + 1, None, False
                    pos = min(content, len(line))
                    continue
        if para is not None:  # a paragraph's next line; lazy when containers were left unmatched
            para.append(line[start:])
            return Line(TEXT, raw, len(stack)), "", para
        del stack[depth:]
        return Line(TEXT, raw, depth), "", None if start - pos >= 4 else [line[start:]]  # indented: no paragraph


def fenced_blocks(source: str | Iterable[str], lines: Iterable[Line] | None = None) -> list[Fenced]:
    """The fenced code blocks of ``source`` (``lines``: its :func:`scan`, when done already), in order.

    Read from the lines' kinds as one character each: a block is an opening fence, its code lines
    and, when closed, its closing fence (``[c*]?``), found in C rather than line by line.
    """
    read = tuple(scan(source) if lines is None else lines)
    marks = "".join(map(_MARKS.__getitem__, map(_KIND, read)))
    return [Fenced(m.start(), m.end(), (opened := read[m.start()]).fence, opened.info, opened.depth,
                   m.group(1) is not None) for m in _FENCED.finditer(marks)]


def fenced_spans(text: str, scanned: Sequence[Line] | None = None) -> list[tuple[int, int]]:
    """The character ranges ``[start, end)`` of ``text``'s fenced blocks (``scanned``: its :func:`scan`, if done)."""
    lines = split_lines(text) if scanned is None else list(map(_TEXT, scanned))
    offsets = [0, *accumulate(map(len, lines))]
    return [(offsets[b.start], offsets[b.end]) for b in fenced_blocks(lines, scanned)]


def headings(source: str | Iterable[str]) -> Iterator[Line]:
    """The heading lines of ``source`` (ATX and setext, at every depth), outside code, in order."""
    return (line for line in scan(source) if line.kind == HEADING)
