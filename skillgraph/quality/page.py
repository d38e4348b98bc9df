"""Cheap signals read from one page: title, headings, visible text, live markup, content size, links.

Regular expressions over the raw markup rather than a parse: a block page is judged
without building a tree, and a documentation page (already extracted to markdown) is
judged on its markdown. Everything is precompiled and linear in the input; markup
signals are computed lazily, only for the thin pages that need them, so a full
documentation page never pays for them.

A page's markup is read as two things that must not be confused:

* its **live markup** (:attr:`Markup.tags`): tags with their attributes, inline scripts,
  comments. A vendor's challenge *is* this: ``<form action="/cdn-cgi/l/chk_jschl">``,
  ``window._cf_chl_opt``, ``<div class="g-recaptcha">``;
* its **text** (:attr:`Markup.text`): what a reader sees. A documentation page that
  *talks about* a challenge holds the same words here, in prose or in a ``<pre>``
  block (``&lt;div class="h-captcha"&gt;``): talking about a thing is not being it.

Inline bulk is not read: ``<style>`` bodies, ``data:`` URIs (a base64 background or
logo can weigh 400 kB) and the middle of long inline scripts are dropped before any
window is applied, so a 2015 interstitial whose form follows 300 kB of inline image is
read like a 3 kB one.
"""

from __future__ import annotations

import html as htmllib
import re
from dataclasses import dataclass
from functools import cached_property
from itertools import islice

from skillgraph.markdown import CODE, TEXT, Line, fenced_spans, headings, scan
from skillgraph.quality.signatures import MECHANICS
from skillgraph.quality.structure import markdown_lines, scanned

_MECHANIC = {m.name: m for m in MECHANICS}

#: A thin page's markup is read this far (before inline bulk is dropped): a 2015
#: interstitial with a base64 background is 450 kB, and a response is cut well before
#: the cost matters (every step below is one linear pass).
RAW_CHARS = 1_048_576
#: What is kept of it once the bulk is gone: the markup (titles, headings, tags, text)...
MARKUP_CHARS = 262_144
#: ...and of each inline script or comment, its head and its tail: vendors' markers sit
#: at either end (``window._pxAppId = ...`` first, ``f.submit()`` last), not in the
#: middle of a 140 kB obfuscated expression.
SCRIPT_KEEP = 4096
TEXT_CHARS = 65_536  #: visible text kept
ELEMENT_CHARS = 4096  #: a title or heading longer than this is not looked at
#: The markdown's headings are read in its first HEADING_CHARS (a soft 404's heading can
#: follow a big navigation tree).
HEADING_CHARS = 262_144

# All run on lower-cased markup. Every pattern is linear on hostile input (thousands of
# unclosed tags): character classes stop at the next "<", closers are found with str.find.
_OPEN = re.compile(r"<(script|style|template|svg)\b|<!--")
#: ``data:`` URIs of any size worth dropping (inline images, fonts): searched from their literal prefix.
_DATA_URI = re.compile(r"data:[\w.+/-]{0,100}(?:;[\w.+=-]{0,100}){0,4},[^\"'()<>\s]{256,}")
_TAG = re.compile(r"<[^<>]*>")
_TEXT_NODE = re.compile(r">[^<>]+<")
# Markdown: brackets and parentheses are bounded the same way.
_MD_IMAGE = re.compile(r"!\[([^\[\]\n]*)\]\([^()\n]{0,2048}\)")
_MD_LINK = re.compile(r"\[([^\[\]\n]*)\]\([^()\n]{0,2048}\)")
_MD_AUTOLINK = re.compile(r"<(?:https?|mailto):[^>\s]*>")
#: A token without a letter or digit, with the whitespace before it: searched in ``" " + text``, as a
#: pattern that opens with ``\s`` is searched faster than one that opens with a look-behind.
_NOISE = re.compile(r"\s[^\w\s]+(?!\S)")
_LIST_OR_TABLE = ("- ", "* ", "+ ", "| ", "#")


#: Typographic apostrophes read as straight ones ("doesn’t" is "doesn't" to the signatures).
_APOSTROPHES = ("\u2019", "\u2018", "\u02bc")


def straight(text: str) -> str:
    """``text`` with typographic apostrophes made straight (a search for one is cheap; most texts have none).

    One ``str.replace`` per apostrophe found, not ``str.translate``: a page's visible text with
    one "’" in it is a text outside ASCII, which ``translate`` maps character by character
    through a dict (a millisecond on a page's text, where the replacements take microseconds).
    """
    for apostrophe in _APOSTROPHES:
        if apostrophe in text:
            text = text.replace(apostrophe, "'")
    return text


_ASCII = bytes(range(128))


def lower(text: str) -> str:
    """``text.lower()``, for ASCII letters by ``bytes.lower`` when no other character has a lower case.

    A docs page's markup is mostly ASCII with a few typographic quotes or dashes in it, and
    ``str.lower`` on such a text looks every character up in the Unicode tables (0.2 ms on a
    44 kB page); its characters outside ASCII, gathered by deleting the ASCII bytes of its
    UTF-8 form, tell whether any of them changes (a capital, a final sigma, a character whose
    lower case is two): if none does, lowering the ASCII bytes is the same.
    """
    if text.isascii():
        return text.lower()
    data = text.encode("utf-8", "surrogatepass")
    others = data.translate(None, _ASCII).decode("utf-8", "surrogatepass")
    if others.lower() != others:
        return text.lower()
    return data.lower().decode("utf-8", "surrogatepass")


def strip_tags(fragment: str) -> str:
    """The text of a markup fragment: tags dropped, entities decoded, whitespace collapsed.

    Whitespace is collapsed by ``str.split`` and a join, not ``re.sub(r"\\s+", " ")`` then
    ``strip``: the same characters (both read whitespace as ``str.isspace``), in a third of the time.
    """
    return straight(" ".join(htmllib.unescape(_TAG.sub(" ", fragment)).split()))


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


@dataclass(frozen=True)
class Markup:
    """A page's lower-cased markup, read once, inline bulk dropped (see the module docstring)."""

    clean: str  #: the markup without script, style, template and SVG bodies, comments and ``data:`` URIs
    scripts: str  #: inline scripts (their tags included) and comments, each cut to its head and tail
    source: str = ""  #: the lower-cased markup as read, ``data:`` URIs dropped (one text to pre-check markers in)

    @cached_property
    def tags(self) -> str:
        """Live markup: every tag with its attributes, then the scripts and comments; no text nodes."""
        return f"{_TEXT_NODE.sub('><', self.clean)} {self.scripts}"

    @cached_property
    def text(self) -> str:
        """Visible text (``<noscript>`` included): entities decoded, whitespace collapsed."""
        return strip_tags(self.clean)[:TEXT_CHARS]

    @cached_property
    def noscript(self) -> str:
        """The text of the ``<noscript>`` elements: what the page shows when it cannot run its script."""
        return " ".join(element_texts(self.clean, "noscript", 8))


def _cut(part: str) -> str:
    return part if len(part) <= 2 * SCRIPT_KEEP else f"{part[:SCRIPT_KEEP]} {part[-SCRIPT_KEEP:]}"


def read_markup(lowered: str) -> Markup:
    """Split lower-cased markup into :class:`Markup` in one pass (scripts, styles and comments found with str.find)."""
    source = _DATA_URI.sub("data:", lowered) if "data:" in lowered else lowered
    kept: list[str] = []
    scripts: list[str] = []
    pos = size = 0
    for match in _OPEN.finditer(source):
        if match.start() < pos:
            continue
        kept.append(source[pos:match.start()])
        size += match.start() - pos
        name = match.group(1)
        closer = "-->" if name is None else f"</{name}"
        end = source.find(closer, match.end())
        stop = len(source) if end < 0 else end
        if name is None or name == "script":
            scripts.append(_cut(source[match.start():stop]))
        else:  # a style, template or SVG: its opening tag only
            opened = source.find(">", match.end(), match.end() + ELEMENT_CHARS)
            kept.append(source[match.start():opened + 1] if opened >= 0 else "")
        pos = len(source) if end < 0 else end + len(closer)
        if size >= MARKUP_CHARS:
            break
    kept.append(source[pos:pos + max(0, MARKUP_CHARS - size)])
    return Markup(" ".join(kept)[:MARKUP_CHARS], " ".join(scripts)[:MARKUP_CHARS], source)


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


def _readable_chars_regex(text: str) -> int:
    """:func:`_readable_chars` the plain way: symbol-only tokens replaced, the rest split and measured."""
    tokens = _NOISE.sub(" ", " " + text).split()
    return sum(map(len, tokens)) + len(tokens) - 1 if tokens else 0


def _char_classes() -> bytes:
    """A ``bytes.translate`` table: an ASCII word character (``\\w``) -> ``a``, whitespace (``\\s``, as
    ``str.split`` reads it) -> space, any other ASCII -> ``.``, a UTF-8 lead byte -> ``?`` (its character
    is classified on its own)."""
    table = bytearray(b"?" * 256)
    for byte in range(128):
        char = chr(byte)
        table[byte] = ord("a" if char.isalnum() or char == "_" else " " if char.isspace() else ".")
    return bytes(table)


_CLASSES = _char_classes()
_CONTINUATION = bytes(range(0x80, 0xC0))  #: UTF-8 continuation bytes, deleted: one class byte per character
_TOKEN_START = bytes.maketrans(b".", b"a")  #: word and symbol alike: a token
_NOISE_RUN = re.compile(rb" \.+(?= )")  #: a symbol-only token, with the space before it
#: Characters outside ASCII classified one by one, up to this many; a text with more is read the plain way.
CLASSIFIED_CHARS = 256


def _readable_chars(text: str) -> int:
    """Length of ``text`` with whitespace collapsed and symbol-only tokens dropped (counted, not built).

    Counted on a class string (one byte a character: word, space or symbol) rather than by
    replacing the symbol-only tokens and splitting the rest: the regular expression that finds
    such tokens in the text tries every whitespace, while in the class string a token without a
    word byte is a literal run the engine searches for. A docs page's few characters outside
    ASCII (typographic quotes, dashes) are classified one by one, as ``\\w`` and ``\\s`` read them.
    """
    classes = bytearray(text, "utf-8", "surrogatepass").translate(_CLASSES, _CONTINUATION)
    other = classes.find(b"?")
    if other >= 0:
        if classes.count(b"?") > CLASSIFIED_CHARS:
            return _readable_chars_regex(text)
        while other >= 0:
            char = text[other]
            classes[other] = ord("a" if char.isalnum() or char == "_" else " " if char.isspace() else ".")
            other = classes.find(b"?", other + 1)
    padded = b" " + classes + b" "
    noise = _NOISE_RUN.findall(padded)
    kept = padded.translate(_TOKEN_START).count(b" a") - len(noise)  # tokens that hold a word character
    if not kept:
        return 0
    chars = len(text) + 2 - padded.count(b" ") - (sum(map(len, noise)) - len(noise))
    return chars + kept - 1


#: Inline code spans (one each) and lines of fenced code (a half each) that make a docs page.
DOCS_CODE_WEIGHT = 2.0
#: A long document is measured on its first SAMPLE_CHARS and scaled: its ratios are
#: stable by then, and its size is far past every threshold.
SAMPLE_CHARS = 32_768


def sample_lines(markdown: str, sample: str) -> tuple[Line, ...]:
    """The scan of ``sample`` (``markdown``'s first SAMPLE_CHARS), from the scan of ``markdown`` when one was kept.

    A line's kind depends on the lines before it only, and after a blank line of the document
    itself (kind text, depth 0) the scanner is as at the start of a text: the scan of the sample
    is the kept scan up to its last such line, then a scan of what follows it. Falls back to a
    scan of the whole sample when no scan was kept or the cut is not simple (``\\r`` line ends,
    no blank line of the document near the cut).
    """
    full = None if sample is markdown else scanned(markdown)
    if full is None or "\r" in sample:
        return markdown_lines(sample)
    end = len(sample)
    for _ in range(SAMPLE_RESTARTS):
        blank = sample.rfind("\n\n", 0, end) + 1  # where a line "\n" starts
        if blank <= 0:
            break
        index = sample.count("\n", 0, blank)
        line = full[index]
        if line.kind == TEXT and not line.depth and line.text == "\n" and sample[blank + 1:blank + 2] != "\ufeff":
            return full[:index + 1] + tuple(scan(sample[blank + 1:]))
        end = blank
    return markdown_lines(sample)


#: Blank lines tried back from the cut (a long list or code block holds blank lines that are no restart).
SAMPLE_RESTARTS = 16


def text_stats(markdown: str) -> TextStats:
    """Content size, link density and paragraph quality of markdown, block by block."""
    sample = markdown[:SAMPLE_CHARS]
    link_chars = prose_chars = block_chars = markup_chars = 0
    # A block overlapping one of these is (part of) a fenced block. A fence opens with three backticks or
    # tildes: a sample without either has none (nothing to read of its lines).
    fenced = "```" in sample or "~~~" in sample
    code = fenced_spans(sample, sample_lines(markdown, sample)) if fenced else []
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


def docs_like(markdown: str) -> bool:
    """What documentation has and a block page's message has not: named things, a table, a code listing.

    Each inline code span counts one, each line of fenced code a half; two make a docs page.
    Not any ``<pre>``: CloudFront's and Apache's error pages end with a two-line ``<pre>``
    ("Generated by cloudfront", "Request ID: ..."), and a hosted-docs 404 quotes the missing
    URL in one code span; a docs page that *talks about* an error names things (``429``,
    ``Retry-After``) or shows code. Read from the scan :func:`text_stats` made (only thin
    pages ask, so only their small markdown is read).
    """
    sample = markdown[:SAMPLE_CHARS]
    if "`" not in sample and "|" not in sample and "~~~" not in sample:
        return False  # no code span, fence or table row: nothing to count
    weight = 0.0
    for line in sample_lines(markdown, sample):
        if line.kind == CODE:
            weight += 0.5
        elif line.kind == TEXT:
            if line.text.lstrip().startswith("|"):
                return True
            if "`" in line.text:
                weight += line.text.count("`") // 2
        if weight >= DOCS_CODE_WEIGHT:
            return True
    return False


class Page:
    """Lazily computed, lower-cased signals of one page (for signature matching)."""

    def __init__(self, html: str | None, markdown: str, title: str) -> None:
        self.raw = html or ""
        self.markdown = markdown
        self.given_title = title
        self._shown: dict[str, bool] = {}

    @cached_property
    def markup(self) -> Markup:
        """The markup read once (computed only when a check needs it: thin pages and error statuses)."""
        return read_markup(lower(self.raw[:RAW_CHARS]))

    def contains(self, needles: tuple[str, ...], limit: int) -> str | None:
        """The first needle found in the first ``limit`` characters of the raw markup."""
        find = self.raw.find  # searched in place: a 64 kB slice per page is a copy for nothing
        return next((n for n in needles if find(n, 0, limit) >= 0), None)

    @cached_property
    def markup_title(self) -> str:
        titles = element_texts(self.markup.clean, "title", 1) if self.raw else []
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
        found = [straight(self.given_title.lower()), self.markup_title]
        if self.raw:
            clean = self.markup.clean
            found += element_texts(clean, "h1", 2) + element_texts(clean, "h2", 2)
        else:
            found += [straight(title.lower()) for title in self.markdown_headings(4)]
        return [h for h in dict.fromkeys(found) if h]

    @cached_property
    def main_heading(self) -> str:
        """The page's own heading, lower-cased: its first h1, else h2 (of the markup, else of the markdown)."""
        if self.raw:
            clean = self.markup.clean
            found = element_texts(clean, "h1", 1) or element_texts(clean, "h2", 1)
        else:
            found = [straight(title.lower()) for title in self.markdown_headings(1)]
        return found[0] if found else ""

    @cached_property
    def visible_text(self) -> str:
        """Lower-cased visible text of the markup (scripts and styles dropped, noscript kept), else of the markdown."""
        if not self.raw:
            return straight(content_text(self.markdown).lower())
        if len(self.raw) <= RAW_CHARS and len(self.markup.clean) < MARKUP_CHARS:
            return self.markup.text
        return f"{self.markup.text} {content_text(self.markdown).lower()}"  # content past the window: its markdown

    def shows(self, name: str) -> bool:
        """Does the page show the mechanic ``name`` (one of :data:`MECHANICS`)? Searched once, when asked.

        A challenge or a login wall *does* something a docs page does not: it sets a cookie and
        reloads, submits a hidden form, loads a CAPTCHA, asks for JavaScript, shows an incident id.
        """
        if name not in self._shown:
            mechanic = _MECHANIC[name]
            self._shown[name] = bool(self.raw) and mechanic.search(self._mechanic_text(mechanic.where))
        return self._shown[name]

    def shown(self, group: str) -> int:
        """How many of the group's mechanics the page shows."""
        return sum(1 for m in MECHANICS if m.group == group and self.shows(m.name))

    def _mechanic_text(self, where: str) -> str:
        if where == "tags":
            return self.markup.tags
        return self.markup.noscript if where == "noscript" else self.visible_text

    @cached_property
    def docs_like(self) -> bool:
        """Inline code, a table or a code listing in the content (:func:`docs_like`)."""
        return docs_like(self.markdown)
