"""Cheap signals read from one page: title, headings, visible text, content size, links.

Regular expressions over the raw markup rather than a parse: a block page is judged
without building a tree, and a documentation page (already extracted to markdown) is
judged on its markdown. Everything is precompiled and linear in the input; markup
signals are computed lazily, so a full documentation page never pays for them.
"""

from __future__ import annotations

import html as htmllib
import re
from dataclasses import dataclass
from functools import cached_property
from itertools import islice

from skillgraph.markdown import fenced_spans, headings
from skillgraph.quality.structure import markdown_lines

#: Block pages are small and their markers sit near the top: markup signatures and the
#: visible text read the first MARKUP_CHARS of a page, titles and headings the first
#: HEADING_CHARS (a soft 404's heading can follow a big navigation tree).
MARKUP_CHARS = 65_536
HEADING_CHARS = 262_144
ELEMENT_CHARS = 4096  #: a title or heading longer than this is not looked at

# All run on lower-cased markup. Every pattern is linear on hostile input (thousands of
# unclosed tags): character classes stop at the next "<", closers are found with str.find.
_OPEN = re.compile(r"<(script|style|template|svg)\b|<!--")
_PASSWORD = re.compile(r"<input\b[^<>]{0,500}\btype\s*=\s*[\"']?password")
_TAG = re.compile(r"<[^<>]*>")
_SPACE = re.compile(r"\s+")
# Markdown: brackets and parentheses are bounded the same way.
_MD_IMAGE = re.compile(r"!\[([^\[\]\n]*)\]\([^()\n]{0,2048}\)")
_MD_LINK = re.compile(r"\[([^\[\]\n]*)\]\([^()\n]{0,2048}\)")
_MD_AUTOLINK = re.compile(r"<(?:https?|mailto):[^>\s]*>")
#: A token without a letter or digit, with the whitespace before it: searched in ``" " + text``, as a
#: pattern that opens with ``\s`` is searched faster than one that opens with a look-behind.
_NOISE = re.compile(r"\s[^\w\s]+(?!\S)")
_LIST_OR_TABLE = ("- ", "* ", "+ ", "| ", "#")


def strip_tags(fragment: str) -> str:
    return _SPACE.sub(" ", htmllib.unescape(_TAG.sub(" ", fragment))).strip()


def element_texts(html: str, tag: str, limit: int, tries: int = 64) -> list[str]:
    """Text of the first ``limit`` ``<tag>`` elements (closed within ELEMENT_CHARS)."""
    found: list[str] = []
    start = 0
    for _ in range(tries):
        start = html.find(f"<{tag}", start)
        if start < 0 or len(found) >= limit:
            break
        start += len(tag) + 1
        if start < len(html) and html[start] not in "> \t\r\n/":
            continue  # <header>, <h10>, <titles>...
        opened = html.find(">", start, start + ELEMENT_CHARS)
        closed = html.find(f"</{tag}", opened, opened + ELEMENT_CHARS) if opened >= 0 else -1
        if closed >= 0:
            found.append(strip_tags(html[opened + 1:closed]))
            start = closed
    return found


def drop_invisible(html: str) -> str:
    """The markup without scripts, styles, templates, SVG and comments (noscript kept)."""
    parts: list[str] = []
    pos = 0
    for match in _OPEN.finditer(html):
        if match.start() < pos:
            continue
        parts.append(html[pos:match.start()])
        closer = "-->" if match.group(1) is None else f"</{match.group(1)}"
        end = html.find(closer, match.end())
        if end < 0:
            pos = len(html)
            break
        pos = end + len(closer)
    parts.append(html[pos:])
    return " ".join(parts)


def content_text(markdown: str) -> str:
    """The markdown's readable text: link targets, markup and symbol-only tokens dropped.

    A Cloudflare IUAM page extracts to kilobytes of ``+((!+[]+(!![])`` noise: tokens
    without a letter or digit are not content.
    """
    text = _MD_AUTOLINK.sub(" ", _MD_LINK.sub(r"\1", _MD_IMAGE.sub(r"\1", markdown)))
    return " ".join(_NOISE.sub(" ", " " + text).split())


@dataclass(frozen=True)
class TextStats:
    text_chars: int  #: readable characters (``content_text``): the page's content size
    link_chars: int  #: characters of link text
    prose_chars: int  #: characters in prose paragraphs and code blocks (half for lists, tables)
    block_chars: int  #: characters of all blocks, link targets excluded (prose_chars' denominator)


def _readable_chars(text: str) -> int:
    """Length of ``text`` with whitespace collapsed and symbol-only tokens dropped."""
    return len(" ".join(_NOISE.sub(" ", " " + text).split()))


#: A long document is measured on its first SAMPLE_CHARS and scaled: its ratios are
#: stable by then, and its size is far past every threshold.
SAMPLE_CHARS = 32_768


def text_stats(markdown: str) -> TextStats:
    """Content size, link density and paragraph quality of markdown, block by block."""
    sample = markdown[:SAMPLE_CHARS]
    link_chars = prose_chars = block_chars = markup_chars = 0
    code = fenced_spans(sample, markdown_lines(sample))  # a block overlapping one of these is (part of) a fenced block
    c = pos = 0
    for block in sample.split("\n\n"):
        begin, end = pos, pos + len(block)
        pos = end + 2
        while c < len(code) and code[c][1] <= begin:
            c += 1
        size = len(block)
        links = 0
        if "](" in block:
            for match in _MD_LINK.finditer(block):
                links += len(match.group(1))
                size -= len(match.group(0)) - len(match.group(1))
        markup_chars += len(block) - size
        link_chars += links
        block_chars += size
        if c < len(code) and code[c][0] < end:
            prose_chars += size  # code examples are a docs page's content
            continue
        listy = block.lstrip().startswith(_LIST_OR_TABLE)
        if links < size / 2 and size >= (40 if listy else 80):
            prose_chars += size // 2 if listy else size
    # content_text's size without building it: noise dropped, then link targets subtracted.
    text_chars = max(0, _readable_chars(sample) - markup_chars)
    if len(markdown) > len(sample):
        scale = len(markdown) / len(sample)
        return TextStats(int(text_chars * scale), int(link_chars * scale), int(prose_chars * scale),
                         int(block_chars * scale))
    return TextStats(text_chars, link_chars, prose_chars, block_chars)


class Page:
    """Lazily computed, lower-cased markup signals of one page (for signature matching)."""

    def __init__(self, html: str | None, markdown: str, title: str) -> None:
        self.raw = html or ""
        self.markdown = markdown
        self.given_title = title

    @cached_property
    def html(self) -> str:
        """The markup's head, lower-cased (computed only when a check needs it)."""
        return self.long_html[:MARKUP_CHARS]

    @cached_property
    def long_html(self) -> str:
        return self.raw[:HEADING_CHARS].lower()

    def contains(self, needles: tuple[str, ...], limit: int) -> str | None:
        """The first needle found in the first ``limit`` characters of the raw markup."""
        head = self.raw[:limit]
        return next((n for n in needles if n in head), None)

    @cached_property
    def markup_title(self) -> str:
        titles = element_texts(self.long_html, "title", 1)
        return titles[0] if titles else ""

    @cached_property
    def title(self) -> str:
        """The given title, else the markup's ``<title>``, else the markdown's first H1/H2 (for its length)."""
        if self.given_title or self.raw:
            return self.given_title or self.markup_title
        return next(iter(self.markdown_headings(1)), "")

    def markdown_headings(self, limit: int) -> list[str]:
        """The first ``limit`` H1/H2 titles in the markdown's first HEADING_CHARS (top level, outside code)."""
        head = self.markdown[:HEADING_CHARS]
        found = (h.title for h in headings(head) if h.level <= 2 and h.depth == 0 and h.title)
        return list(islice(found, limit))

    @cached_property
    def headings(self) -> list[str]:
        """Lower-cased title, ``<title>`` and the first h1/h2s (of the markup, else of the markdown)."""
        found = [self.given_title.lower(), self.markup_title]
        if self.html:
            found += element_texts(self.long_html, "h1", 2) + element_texts(self.long_html, "h2", 2)
        else:
            found += [title.lower() for title in self.markdown_headings(4)]
        return [h for h in dict.fromkeys(found) if h]

    @cached_property
    def visible_text(self) -> str:
        """Lower-cased text of the markup's head (scripts and styles dropped, noscript kept), else of the markdown."""
        text = content_text(self.markdown).lower()
        if not self.html:
            return text
        visible = strip_tags(drop_invisible(self.html))
        # A big page's main content may lie past MARKUP_CHARS: its markdown stands in for it.
        return visible if len(self.raw) <= MARKUP_CHARS else f"{visible} {text}"

    @cached_property
    def has_password_field(self) -> bool:
        return bool(_PASSWORD.search(self.html))
