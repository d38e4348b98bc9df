"""Markdown-aware chunking: heading sections, whole code fences, a target size in characters.

Generic text splitters cut at a character count and leave half a code block in
one chunk and half in the next; a search hit on either half is then useless.
This chunker reads the markdown the extractor writes (ATX headings, fenced
code) and:

* starts a new chunk at every heading, and gives each chunk its heading path
  (``json — JSON encoder and decoder > Basic Usage``) as context;
* packs paragraphs and code blocks into chunks of at most ``max_chars``;
* never splits a fenced block, unless the block alone exceeds ``max_chars``:
  then it is split on line boundaries and every piece is fenced again with
  the same fence and info string, so each piece is still valid markdown;
* optionally repeats the last paragraph of a chunk (up to ``overlap`` chars)
  at the start of the next chunk of the same section (never code).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from skillgraph.markdown import CODE, FENCE_CLOSE, FENCE_OPEN, scan

LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
PATH_SEPARATOR = " > "


@dataclass
class Block:
    kind: str  # "heading", "code" or "text"
    lines: list[str]
    level: int = 0  # headings only
    title: str = ""  # headings only
    fence: str = ""  # code only: the fence run (```, ~~~~)
    closed: bool = False  # code only: ends with its closing fence line

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class Chunk:
    ordinal: int
    heading: str  # the heading path, " > "-separated; the document title before the first heading
    text: str


def plain_text(markdown: str) -> str:
    """Markdown with link targets, image targets, emphasis and backticks removed (what indexing sees)."""
    text = LINK.sub(r"\1", markdown)
    return text.replace("**", "").replace("`", "")


def parse_blocks(markdown: str) -> list[Block]:
    """Headings, fenced code blocks (fence lines included) and blank-line-separated text blocks.

    Fences and headings are the markdown scanner's (:mod:`skillgraph.markdown`): a fence in a
    list item or a quote is a code block too; a section starts at an ATX heading of the document.
    """
    blocks: list[Block] = []
    text: list[str] = []

    def flush_text() -> None:
        if text:
            blocks.append(Block("text", text.copy()))
            text.clear()

    code: Block | None = None
    for line in scan(markdown):
        raw = line.text.rstrip("\r\n")
        if code is not None:
            if line.kind in (CODE, FENCE_CLOSE):
                code.lines.append(raw)
                code.closed = line.kind == FENCE_CLOSE
                if code.closed:
                    code = None
                continue
            code = None  # ended with its list item or quote, unclosed
        if line.kind == FENCE_OPEN:
            flush_text()
            code = Block("code", [raw], fence=line.fence)
            blocks.append(code)
        elif line.starts_section:
            flush_text()
            title = plain_text(line.title).replace("¶", "").strip()
            blocks.append(Block("heading", [raw], level=line.level, title=title))
        elif not raw.strip():
            flush_text()
        else:
            text.append(raw)
    flush_text()
    return blocks


def _split_code(block: Block, max_chars: int) -> list[str]:
    """An oversized fenced block, cut on lines; each piece re-fenced with the block's own fence line."""
    opener = block.lines[0]
    # An unclosed block gets a closing fence, indented as the opener's content (a list item's, a quote's).
    prefix = re.sub(r"[^\s>]", " ", opener[:opener.index(block.fence)])
    closer = block.lines[-1] if block.closed else prefix + block.fence
    body = block.lines[1:-1] if block.closed else block.lines[1:]
    budget = max(1, max_chars - len(opener) - len(closer) - 2)
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for line in body:
        if current and size + len(line) + 1 > budget:
            pieces.append("\n".join([opener, *current, closer]))
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
    if current or not pieces:
        pieces.append("\n".join([opener, *current, closer]))
    return pieces


def _split_text(text: str, max_chars: int) -> list[str]:
    """An oversized paragraph, cut at the last space before the limit (mid-word only when there is none)."""
    pieces: list[str] = []
    while len(text) > max_chars:
        cut = text.rfind(" ", 0, max_chars + 1)
        if cut <= 0:
            cut = max_chars
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return pieces


@dataclass
class _Packer:
    max_chars: int
    overlap: int
    chunks: list[Chunk] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    size: int = 0
    has_body: bool = False
    last_text: str = ""  # the last prose part of the current chunk (the overlap candidate)
    carried: bool = False  # the parts are only the overlap repeated from the previous chunk

    def add(self, part: str, body: bool, prose: bool) -> None:
        self.parts.append(part)
        self.size += len(part) + 2
        self.has_body = self.has_body or body
        self.last_text = part if prose else ""
        self.carried = self.carried and not body

    def fits(self, part: str) -> bool:
        return not self.parts or self.size + len(part) <= self.max_chars

    def flush(self, heading: str, carry: bool) -> None:
        if not self.has_body:
            if self.carried:  # an overlap with nothing after it in its section: dropped
                self.parts, self.size, self.carried = [], 0, False
            return  # headings alone join the next chunk
        self.chunks.append(Chunk(len(self.chunks), heading, "\n\n".join(self.parts)))
        kept = self.last_text if carry and 0 < len(self.last_text) <= self.overlap else ""
        self.parts, self.size, self.has_body, self.last_text = [], 0, False, ""
        if kept:
            self.add(kept, body=False, prose=True)
            self.carried = True


def chunk_markdown(markdown: str, title: str = "", max_chars: int = 1500, overlap: int = 0) -> list[Chunk]:
    """The document's chunks, in order; each at most ``max_chars`` unless one unsplittable line is longer."""
    packer = _Packer(max_chars, overlap)
    stack: list[tuple[int, str]] = []

    def path() -> str:
        titles = [t for _, t in stack if t]
        return PATH_SEPARATOR.join(titles) if titles else title.strip()

    for block in parse_blocks(markdown):
        if block.kind == "heading":
            packer.flush(path(), carry=False)
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
            packer.add(block.text, body=False, prose=False)
            continue
        text = block.text
        if len(text) <= max_chars:
            pieces = [text]
        elif block.kind == "code":
            pieces = _split_code(block, max_chars)
        else:
            pieces = _split_text(text, max_chars)
        for piece in pieces:
            if not packer.fits(piece):
                packer.flush(path(), carry=True)
            packer.add(piece, body=True, prose=block.kind == "text")
    packer.flush(path(), carry=False)
    return packer.chunks
